// How close each press comes to the ceiling, per compression ratio: per-instance scores of every
// press and of the ceiling (the exact query-aware prefill optimum run as a press, e.g. inside
// kvpress's evaluation) paired by instance, summarised as the press's mean score, the ceiling's,
// the share of the ceiling the press reaches, and a paired test of their difference. Intervals are
// seeded percentile bootstraps over instances (95%), so any score scale (0-1, 0-100) works.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "kvo/report/report.hpp"

namespace kvo::studies {

struct CeilingRecord {
  std::string press;
  double compression_ratio = 0.0;  // kvpress's: the share of the context evicted
  std::string instance;            // pairs a press's score with the ceiling's
  double score = 0.0;
};

struct CeilingShareRequest {
  std::string ceiling = "kvoracle_optimum";  // the press whose scores are the ceiling
  int resamples = 2000;                      // bootstrap and sign-flip resamples
  std::uint64_t seed = 0;
};

struct CeilingShareRow {
  std::string press;
  double compression_ratio = 0.0;
  int instances = 0;  // paired with the ceiling's
  double score = 0.0, score_low = 0.0, score_high = 0.0;
  double ceiling = 0.0, ceiling_low = 0.0, ceiling_high = 0.0;
  double share = 1.0, share_low = 1.0, share_high = 1.0;  // score / ceiling (1 when both are 0)
  double p_value = 1.0;  // paired sign-flip test of mean(score - ceiling) = 0, two-sided
};

struct CeilingShareResult {
  std::string ceiling;
  std::vector<CeilingShareRow> rows;  // ratio-ascending, then the records' press order; the ceiling's own rows first
  nlohmann::json to_json() const;
  // A table per ratio and "ceiling-share.svg": each press's share of the ceiling against the ratio.
  Report report() const;
};

// kvo::Error for a ratio without ceiling scores, a press scored twice on one instance at one ratio,
// an instance the ceiling did not score, no records, or resamples < 100.
CeilingShareResult ceiling_share(std::span<const CeilingRecord> records, const CeilingShareRequest& request);

// "0.50", or "16:1" for ratios whose 1 / (1 - ratio) is a whole number >= 8 (kvpress's harder ratios).
std::string compression_label(double compression_ratio);

}  // namespace kvo::studies

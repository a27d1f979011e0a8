// Golden eviction decisions: kvoracle's policies replayed on a small trace, every (layer, KV head)
// and step recorded with the tokens it kept, the tokens it evicted and each candidate's score, with
// the tie rule and the semantics the policy encodes. The JSON form is the kit's versioned file.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kvo/core/field_schema.hpp"
#include "kvo/core/policy_registry.hpp"
#include "kvo/core/request_json.hpp"
#include "kvo/core/trace.hpp"

namespace kvo::conformance {

inline constexpr int kGoldenVersion = 1;

struct GoldenRequest {
  std::vector<PolicyId> policies = {PolicyId::H2O, PolicyId::Tova, PolicyId::Scissorhands, PolicyId::Streaming};
  std::vector<std::string> budgets = {"8", "16"};  // tokens per KV head, or shares of n ("25%")
  std::string recent;                              // the recent window: tokens or a share of the budget (empty: half)
  int threads = 0;

  // kvo::Error naming the field: no policy, no budget, a budget that is not an amount, a policy the
  // kit has no semantics for (offline, unbudgeted or randomised ones).
  void validate() const;
  static const Schema<GoldenRequest>& schema();
};

struct GoldenStep {
  std::vector<int> kept;     // S_i, ascending
  std::vector<int> evicted;  // (S_{i-1} ∪ {i}) \ S_i, ascending
  // The policy's score of each candidate in S_{i-1} ∪ {i} (ascending token order) after step i,
  // lower evicted first; nullopt: protected (recent window, sinks) or a policy without scores.
  std::vector<std::optional<double>> scores;
};

struct GoldenUnit {
  int layer = 0, head = 0;  // head: the KV head
  std::vector<GoldenStep> steps;
};

struct GoldenCase {
  std::string policy;
  int budget = 0, heavy = 0, recent = 0;  // tokens per KV head after every step past the prompt
  std::string tie_rule;
  std::string semantics;
  std::vector<GoldenUnit> units;  // by (layer, head)
  std::string key() const;        // "h2o@8"
};

struct GoldenFile {
  int version = kGoldenVersion;
  std::string trace;  // the trace's name (its file, or how it was made)
  std::string trace_sha256;
  int n = 0, layers = 0, heads = 0, kv_heads = 0, prompt_len = 0;
  std::vector<GoldenCase> cases;

  const GoldenCase& find(const std::string& policy, int budget) const;  // kvo::Error naming the known cases
  nlohmann::json to_json() const;
  // kvo::Error naming the first missing or malformed field, or a version this kit does not read.
  static GoldenFile from_json(const nlohmann::json& j);
};

// The tie rule and the semantics each covered policy follows (kvo::Error for one the kit lacks).
std::string policy_tie_rule(PolicyId id);
std::string policy_semantics(PolicyId id);

// Replays every requested policy at every budget on every (layer, KV head) of the trace (KV heads
// as units, the mean over the group's query heads). `name` labels the trace in the file.
GoldenFile make_golden(const Trace& trace, const GoldenRequest& request, const std::string& name);

}  // namespace kvo::conformance

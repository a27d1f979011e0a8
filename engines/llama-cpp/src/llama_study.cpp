#include "kvo/llama_cpp/llama_study.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <sstream>
#include <utility>

#include "kvo/core/error.hpp"
#include "kvo/core/progress.hpp"
#include "kvo/model/evicting_decoder.hpp"
#include "llama.h"

namespace kvo::llama_cpp {
namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(mid), v.end());
  const double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  return (*std::max_element(v.begin(), v.begin() + static_cast<long>(mid)) + hi) / 2.0;
}

// llama.cpp's full cache: one context holding every token, no callback; the prompt
// (options.contract.prompt_len tokens) in batches of options.batch, as prefill() feeds it.
double full_cache_tok_s(llama_model* model, const std::vector<int>& tokens, const EvictingContextOptions& o,
                        size_t& state_bytes) {
  llama_context_params cp = context_params(o, static_cast<int>(tokens.size()));
  cp.n_batch = cp.n_ubatch = static_cast<uint32_t>(o.batch);
  llama_context* ctx = llama_init_from_model(model, cp);
  require(ctx != nullptr, "llama.cpp could not create a full cache of " + std::to_string(tokens.size()) + " cells");
  Progress bar("llama.cpp, full cache", static_cast<long>(tokens.size()));
  std::vector<llama_token> ids(tokens.begin(), tokens.end());
  const size_t prompt = std::min(ids.size(), static_cast<size_t>(std::max(o.contract.prompt_len, 0)));
  const auto t0 = Clock::now();
  for (size_t i = 0; i < ids.size();) {
    const size_t count = i < prompt ? std::min(prompt - i, static_cast<size_t>(o.batch)) : 1;
    if (llama_decode(ctx, llama_batch_get_one(ids.data() + i, static_cast<int32_t>(count))) != 0) {
      llama_free(ctx);
      throw Error("llama.cpp's full cache failed to decode position " + std::to_string(i));
    }
    bar.tick(static_cast<long>(count));
    i += count;
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  state_bytes = llama_state_seq_get_size(ctx, 0);
  llama_free(ctx);
  return static_cast<double>(tokens.size()) / s;
}

// Feeds `tokens` to ctx: the prompt (options.contract.prompt_len tokens) through prefill(), the
// rest token by token; returns how many positions left the cache.
long feed(EvictingContext& ctx, const std::vector<int>& tokens, int prompt_len, Progress& bar) {
  const size_t prompt = std::min(tokens.size(), static_cast<size_t>(std::max(prompt_len, 0)));
  long evicted = static_cast<long>(ctx.prefill(std::span<const int>(tokens.data(), prompt)).size());
  bar.tick(static_cast<long>(prompt));
  for (size_t i = prompt; i < tokens.size(); ++i) {
    evicted += static_cast<long>(ctx.decode(tokens[i]).size());
    bar.tick();
  }
  return evicted;
}

// Summed scores of `tokens` among kvoracle's lowest candidates; infinity where one is not among them.
double total(const std::vector<int>& tokens, const std::map<int, double>& score) {
  double sum = 0.0;
  for (int j : tokens) {
    const auto it = score.find(j);
    if (it == score.end()) return std::numeric_limits<double>::infinity();
    sum += it->second;
  }
  return sum;
}

// Summed scores of `tokens` in a score by token (llama.cpp's candidates, read from the steer's choice).
double total(const std::vector<int>& tokens, std::span<const double> score) {
  double sum = 0.0;
  for (int j : tokens) sum += score[static_cast<size_t>(j)];
  return sum;
}

// The relative excess of `other` over `own` (>= 0 when own is the lowest).
double excess(double other, double own) {
  if (std::isinf(other)) return other;
  return own > 0.0 ? other / own - 1.0 : other - own;
}

std::string bytes(size_t b) {
  std::ostringstream s;
  s << b;
  return s.str();
}

}  // namespace

LlamaSpeed measure_speed(llama_model* model, const std::vector<int>& tokens, EvictingContextOptions options, int reps) {
  require(reps > 0, "llama.cpp speed: reps must be > 0");
  require(!tokens.empty(), "llama.cpp speed: no tokens");
  options.max_len = static_cast<int>(tokens.size());
  LlamaSpeed r;
  r.tokens = options.max_len;
  r.budget = options.contract.budget;
  r.threads = options.threads;
  std::vector<double> full, evicting;
  for (int rep = 0; rep < reps; ++rep) {
    full.push_back(full_cache_tok_s(model, tokens, options, r.full_state_bytes));
    EvictingContext ctx(model, options);
    r.evictions = 0;
    Progress bar("llama.cpp, evicting", static_cast<long>(tokens.size()));
    const auto t0 = Clock::now();
    r.evictions = feed(ctx, tokens, options.contract.prompt_len, bar);
    evicting.push_back(static_cast<double>(tokens.size()) / std::chrono::duration<double>(Clock::now() - t0).count());
    r.evicting_state_bytes = ctx.state_bytes();
    r.held = static_cast<int>(ctx.held().size());
  }
  r.full_tok_s = median(full);
  r.evicting_tok_s = median(evicting);
  return r;
}

std::string LlamaSpeed::render() const {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(1);
  s << "| tokens | budget | threads | full cache tok/s | evicting tok/s | ratio | state, full → evicting (B) | held |\n"
    << "|---:|---:|---:|---:|---:|---:|---|---:|\n"
    << "| " << tokens << " | " << budget << " | " << threads << " | " << full_tok_s << " | " << evicting_tok_s << " | ";
  s.precision(2);
  s << (full_tok_s > 0 ? evicting_tok_s / full_tok_s : 0.0) << " | " << bytes(full_state_bytes) << " → "
    << bytes(evicting_state_bytes) << " | " << held << " |\n";
  return s.str();
}

DecisionComparison compare_decisions(const model::Llama& reference, llama_model* model, const std::vector<int>& tokens,
                                     EvictingContextOptions options, std::optional<double> tolerance) {
  require(!tokens.empty(), "decision comparison: no tokens");
  require(!tolerance || *tolerance >= 0.0, "decision comparison: the tie tolerance must be >= 0");
  const model::LlamaConfig& cfg = reference.config();
  require(cfg.n_layers == llama_model_n_layer(model) && cfg.n_heads == llama_model_n_head(model) &&
              cfg.n_kv_heads == llama_model_n_head_kv(model),
          "decision comparison: kvoracle's model and llama.cpp's have different layers or heads");
  options.max_len = static_cast<int>(tokens.size());
  DecisionComparison r;
  r.tokens = options.max_len;
  r.budget = options.contract.budget;

  // kvoracle's decoder, free: each step's decision and the scores of its lowest candidates.
  struct Decision {
    std::vector<int> tokens;
    std::map<int, double> lowest;  // candidate -> summed score, the lowest few
  };
  std::map<int, Decision> kvoracle;
  CacheManagerOptions mo = manager_options(options, cfg.n_layers, cfg.n_kv_heads);
  mo.steer = [&](const EvictionChoice& c, std::vector<int>& chosen) {
    Decision d;
    d.tokens = chosen;
    std::vector<std::pair<double, int>> by_score;
    for (int j : c.candidates) by_score.emplace_back(c.score[static_cast<size_t>(j)], j);
    const size_t keep = std::min(by_score.size(), std::max<size_t>(64, 4 * chosen.size()));
    std::partial_sort(by_score.begin(), by_score.begin() + static_cast<long>(keep), by_score.end());
    for (size_t k = 0; k < keep; ++k) d.lowest[by_score[k].second] = by_score[k].first;
    kvoracle[c.step] = std::move(d);
  };
  {
    KvEvictionManager manager(mo);
    model::EvictingDecoder decoder(reference, manager, model::decoder_slots(manager));
    Progress bar("kvoracle's decoder", static_cast<long>(tokens.size()));
    for (int t : tokens) {
      decoder.step(t);
      bar.tick();
    }
  }

  // llama.cpp, made to follow: its own choice recorded, kvoracle's applied.
  std::vector<double> differences;
  options.steer = [&](const EvictionChoice& c, std::vector<int>& chosen) {
    const auto it = kvoracle.find(c.step);
    require(it != kvoracle.end(),
            "llama.cpp evicts at step " + std::to_string(c.step) + ", kvoracle's decoder does not");
    ++r.decisions;
    const Decision& want = it->second;
    if (chosen == want.tokens) {
      ++r.equal;
      const double ours = total(want.tokens, want.lowest), theirs = total(want.tokens, c.score);
      differences.push_back(std::abs(excess(theirs, ours)));
    } else {
      Departure d;
      d.step = c.step;
      d.kvoracle = want.tokens;
      d.llama = chosen;
      d.llama_gap = excess(total(want.tokens, c.score), total(chosen, c.score));
      d.kvoracle_gap = excess(total(chosen, want.lowest), total(want.tokens, want.lowest));
      r.departures.push_back(std::move(d));
    }
    chosen = want.tokens;  // the steer checks it is one llama.cpp could evict
  };
  EvictingContext ctx(model, options);
  Progress bar("llama.cpp, following", static_cast<long>(tokens.size()));
  feed(ctx, tokens, options.contract.prompt_len, bar);
  require(r.decisions == static_cast<long>(kvoracle.size()), "kvoracle's decoder evicted at " +
                                                                 std::to_string(kvoracle.size()) +
                                                                 " steps, llama.cpp at " + std::to_string(r.decisions));
  r.median_score_difference = median(differences);
  r.max_score_difference = differences.empty() ? 0.0 : *std::max_element(differences.begin(), differences.end());
  r.tolerance = tolerance.value_or(r.max_score_difference);
  for (Departure& d : r.departures) {
    d.near_tie = d.llama_gap <= r.tolerance && d.kvoracle_gap <= r.tolerance;
    r.near_ties += d.near_tie;
  }
  return r;
}

std::string DecisionComparison::render() const {
  std::ostringstream s;
  s.precision(3);
  s << std::scientific << "| tokens | budget | decisions | equal | departures | near ties (gaps ≤ " << tolerance
    << ") | beyond | score difference, median / max |\n"
    << "|---:|---:|---:|---:|---:|---:|---:|---|\n"
    << "| " << tokens << " | " << budget << " | " << decisions << " | " << equal << " | " << departures.size() << " | "
    << near_ties << " | " << beyond_tolerance() << " | " << median_score_difference << " / " << max_score_difference
    << " |\n";
  if (!departures.empty()) {
    s << "\n| step | kvoracle evicts | llama.cpp would | llama.cpp's gap | kvoracle's gap | near tie |\n"
      << "|---:|---|---|---:|---:|---|\n";
    const auto list = [](const std::vector<int>& v) {
      std::string out;
      for (int j : v) {
        if (!out.empty()) out += ' ';
        out += std::to_string(j);
      }
      return out;
    };
    for (const Departure& d : departures)
      s << "| " << d.step << " | " << list(d.kvoracle) << " | " << list(d.llama) << " | " << d.llama_gap << " | "
        << d.kvoracle_gap << " | " << (d.near_tie ? "yes" : "no") << " |\n";
  }
  return s.str();
}

}  // namespace kvo::llama_cpp

// Diversity of greedy continuations under eviction (the paper's §5.3 Q4 and Appendix C: H2O
// "increases the diversity" of generated text, with fewer repeated words): prompts cut from a text,
// each continued greedily by the full cache and by every policy at every budget (EvictingDecoder:
// the prompt fed with streaming eviction, then token by token); each continuation's words scored by
// distinct-n and by the repetition of 4-grams. `kvoracle eval diversity` and Python's
// Model.diversity are adapters over continuation_diversity.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kvo/core/run_config.hpp"
#include "kvo/core/run_options.hpp"
#include "kvo/model/llama.hpp"
#include "kvo/proofs_check/report.hpp"
#include "kvo/report/report.hpp"

namespace kvo::studies {

// Word statistics of one text: its words are the whitespace-separated runs, lowercased, with
// leading and trailing punctuation stripped (empty words dropped).
struct TextDiversity {
  int words = 0;
  // Distinct n-grams over all n-grams (1 when the text has no n-gram): 1 means no n-gram repeats.
  double distinct1 = 1.0, distinct2 = 1.0, distinct3 = 1.0;
  // seq-rep-4 (Welleck et al. 2020): 1 - distinct 4-grams / 4-grams; 0: no repeated 4-gram.
  double repetition4 = 0.0;
};
TextDiversity text_diversity(const std::string& text);

struct DiversityRequest {
  int prompts = 4;          // prompts cut from the text at evenly spaced token offsets
  int prompt_tokens = 256;  // tokens per prompt
  int new_tokens = 128;     // greedy tokens per continuation (no stop at end-of-sequence)
  std::vector<PolicyId> policies = {PolicyId::H2O, PolicyId::Window};
  // Shares of prompt_tokens + new_tokens kept per (layer, KV head).
  std::vector<double> budgets = {0.2};
  RunOptions run;                  // the policies' parameters, the budget's recent part, the seed
  std::function<void()> on_token;  // progress: one call per generated token
  // kvo::Error naming the option: prompts, prompt_tokens or new_tokens below 1, no policy or budget,
  // a budget outside (0, 1], a policy a decoder cannot drive online (offline ones included).
  void validate() const;
  RunConfig run_config() const;                     // `run` built for the first policy (validated)
  static const Schema<DiversityRequest>& schema();  // every field once: JSON, CLI flags, Python keywords
  nlohmann::json to_json() const;                   // every field but the hook
  static DiversityRequest from_json(const nlohmann::json& j);
};

struct DiversityRow {
  std::string row;      // "full-cache" or a policy's name
  double budget = 1.0;  // the share kept (1: the full cache)
  TextDiversity mean;   // the statistics' means over the prompts (words: the total)
  std::vector<std::string> continuations;
};

struct DiversityResult {
  int prompts = 0, prompt_tokens = 0, new_tokens = 0;
  DiversityRow full;
  std::vector<DiversityRow> rows;  // policies x budgets, in request order
};

long diversity_units(const DiversityRequest& request);  // generated tokens, the full cache's included
// kvo::Error when the text has fewer tokens than prompt_tokens (one prompt) or prompts overlap past its end.
DiversityResult continuation_diversity(const model::Llama& model, const std::string& text,
                                       const DiversityRequest& request);

// E10 (docs/checks.md#e10): per budget with an h2o row, whether its continuations are at least as
// diverse as the full cache's (distinct-2 no lower, 4-gram repetition no higher).
std::vector<CheckRecord> diversity_paper_experiments(const DiversityResult& result);
// What `kvoracle eval diversity --json` writes: the settings, one object per row (its means and
// continuations) and the records of diversity_paper_experiments ("paper_experiments").
nlohmann::json diversity_result_json(const DiversityResult& result);
// What `kvoracle eval diversity` shows (study_reports.cpp): each row's mean word statistics and E10.
Report diversity_report(const DiversityResult& result, const std::string& text_name);

}  // namespace kvo::studies

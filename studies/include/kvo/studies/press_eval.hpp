// Prefill compression in closed loop on the real model (kvoracle eval --prefill): the prompt is
// prefilled with the full cache, compressed once to each kept set (kvpress's presses computed by
// kvoracle on a trace of the same text recorded by this model, and the prefill optimum's sets),
// and the continuation is teacher-forced with positions continuing after the prompt, as
// kvpress's pipeline does. Per set: the continuation's NLL and mean KL(full || compressed) of the
// next-token distributions, the retained mass as a fraction of the optimum and the attention
// output error (oracle/prefill_oracle.hpp), and the K/V bytes held.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "kvo/core/budget_scope.hpp"
#include "kvo/core/press.hpp"
#include "kvo/core/run_config.hpp"
#include "kvo/model/llama.hpp"

namespace kvo::studies {

struct PressEvalOptions {
  int tokens = 640;                   // prompt + continuation
  int prompt_len = 512;               // P: 1 <= P <= tokens - 2
  std::vector<PressOptions> presses;  // each with its compression ratio
  // kvoracle's policies as prefill presses (KvoraclePress's rule): replayed over the prompt on
  // KV-head units (the group's mean attention), the prompt cut to kvpress's k once after its last
  // token; one row per policy and ratio of `policy_ratios`. `run` holds their parameters.
  std::vector<PolicyId> policies;
  std::vector<double> policy_ratios;
  RunConfig run;
  std::vector<double> reference_ratios;  // the optimum's rows at these compression ratios
  // The mass optimum's rows per budget scope at each reference ratio: head (each unit keeps k, the
  // "optimum" row) and the shared-budget optima with the same total (oracle/shared_prefill.hpp,
  // "optimum@layer", ...), whose units keep different counts.
  std::vector<BudgetScope> reference_scopes = {BudgetScope::Head};
  // kvpress's AdaKVPress around each press at each alpha_safeguard ("adakv(snapkv, 0.2)" rows).
  std::vector<double> alpha_safeguard;
  std::function<void()> on_row;  // progress: one call per finished row
};

// What a row kept: a press (alone or under AdaKV), a policy, or one of the look-ahead references
// at kvpress's k for the ratio (the mass optimum in a budget scope, the output bound's minimiser).
enum class PressEvalSet { Press, AdaKV, Policy, MassOptimum, OutputBoundOptimum };

struct PressEvalRow {
  PressEvalSet set = PressEvalSet::Press;
  PressId press = PressId::SnapKV;        // set == Press or AdaKV
  double alpha_safeguard = 0.0;           // set == AdaKV
  PolicyId policy = PolicyId::H2O;        // set == Policy
  BudgetScope scope = BudgetScope::Head;  // set == MassOptimum: who shares the budget
  std::string name;                       // the press's or policy's name, or the reference's
  double compression_ratio = 0.0;
  double mean_k = 0.0;         // kept prompt keys per (layer, KV head)
  double mass_fraction = 1.0;  // mean over units of the retained mass over the optimum's at the same k
  double mass_share = 1.0;     // the retained mass summed over units, over the whole prompt's
  double output_error = 0.0;   // mean over units of E(S) / (n - P): |o_t(S) - o_t(full)| per query
  double nll = 0.0;            // mean over the n - P continuation tokens
  double mean_kl = 0.0;        // KL(full || compressed), mean over the same predictions
  size_t kv_bytes = 0;         // K/V rows held at the end: kept prompt keys + the n - P - 1 tokens fed after
};

struct PressEvalResult {
  int tokens = 0, prompt_len = 0;
  double full_nll = 0.0;
  size_t full_bytes = 0;           // the full cache after the n - 1 tokens fed
  std::vector<PressEvalRow> rows;  // presses in option order, policies, then the references per ratio
};

// The name of the mass optimum's row under a shared budget scope: "optimum@layer" (head: "optimum").
std::string shared_optimum_row(BudgetScope scope);

// The prompt's cache cut to `kept` (ascending prompt positions per (layer, KV head), layer-major;
// the counts may differ, as under a shared budget): each KV head's kept rows packed right-aligned
// below the longest set, its attention reading rows start[l * H_kv + h].. only, and positions
// continuing at prompt_len, with `room` rows left for the tokens fed after.
model::KvCache compressed_cache(const model::Llama& model, const model::KvCache& prompt,
                                const std::vector<std::vector<int>>& kept, int prompt_len, int room);

// Rows for the progress bar.
long press_eval_rows(const PressEvalOptions& options);
// kvo::Error for a prompt outside [1, tokens - 2], a text shorter than `tokens`, or a press the
// prompt cannot serve (before any decoding).
PressEvalResult evaluate_presses(const model::Llama& model, const std::string& text, const PressEvalOptions& options);

}  // namespace kvo::studies

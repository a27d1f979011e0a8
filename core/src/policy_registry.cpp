#include "kvo/core/policy_registry.hpp"

#include <algorithm>
#include <optional>

#include "kvo/core/error.hpp"
#include "kvo/core/policies.hpp"
#include "kvo/core/registry.hpp"
#include "kvo/core/text_list.hpp"

namespace kvo {
namespace {

template <PolicyId Id>
std::unique_ptr<EvictionPolicy> make_h2o(const PolicySpec&) {
  return std::make_unique<H2OPolicy>(policy_name(Id));
}
std::unique_ptr<EvictionPolicy> make_h2o_mask(const PolicySpec&) { return std::make_unique<H2OMaskPolicy>(); }
std::unique_ptr<EvictionPolicy> make_h2o_paper(const PolicySpec& s) {
  ObjectiveSpec acc = s.objective;
  acc.name = "acc";
  return std::make_unique<GreedyEvictor>(policy_name(PolicyId::H2OPaper), make_objective(acc), false);
}
std::unique_ptr<EvictionPolicy> make_greedy(const PolicySpec& s) {
  return std::make_unique<GreedyEvictor>(policy_name(PolicyId::Greedy) + ":" + s.objective.name,
                                         make_objective(s.objective), objective_needs_dense(s.objective.name));
}
std::unique_ptr<EvictionPolicy> make_streaming(const PolicySpec& s) {
  return std::make_unique<StreamingPolicy>(s.sinks);
}
std::unique_ptr<EvictionPolicy> make_window(const PolicySpec&) { return std::make_unique<WindowPolicy>(); }
std::unique_ptr<EvictionPolicy> make_tova(const PolicySpec&) { return std::make_unique<TovaPolicy>(); }
std::unique_ptr<EvictionPolicy> make_scissorhands(const PolicySpec& s) {
  return std::make_unique<ScissorhandsPolicy>(s.history);
}
std::unique_ptr<EvictionPolicy> make_random(const PolicySpec&) { return std::make_unique<RandomPolicy>(); }
std::unique_ptr<EvictionPolicy> make_full(const PolicySpec&) { return std::make_unique<FullCachePolicy>(); }
std::unique_ptr<EvictionPolicy> make_oracle(const PolicySpec& s) {
  require(s.schedule != nullptr,
          "policy oracle follows the offline optimum of the whole trace; only kvoracle eval computes its schedule "
          "(the offline optimum itself: solve_offline, kvoracle oracle offline)");
  return std::make_unique<ScheduledPolicy>(policy_name(PolicyId::Oracle), s.schedule);
}
// Replay gives it the dense attention; a closed loop hands it the schedule its rule gives on the
// full cache's trace.
std::unique_ptr<EvictionPolicy> make_lookahead(const PolicySpec& s) {
  if (s.schedule) return std::make_unique<ScheduledPolicy>(policy_name(PolicyId::Lookahead), s.schedule);
  return std::make_unique<LookaheadPolicy>();
}
template <HeavyHitterAblationPolicy::Mode M>
std::unique_ptr<EvictionPolicy> make_ablation(const PolicySpec&) {
  return std::make_unique<HeavyHitterAblationPolicy>(M);
}
std::unique_ptr<EvictionPolicy> make_oldest(const PolicySpec&) { return std::make_unique<OldestPolicy>(); }
template <SparsePatternPolicy::Pattern P, bool Heavy>
std::unique_ptr<EvictionPolicy> make_pattern(const PolicySpec&) {
  return std::make_unique<SparsePatternPolicy>(P, Heavy);
}

using enum PolicyId;
using enum DenseNeed;

// Each row names the traits in which the policy differs from an ordinary online one (PolicyTraits'
// defaults).
constexpr std::array<PolicyEntry, kPolicyCount> kTable = {{
    {H2O,
     "h2o",
     "accumulated renormalised attention + recent window (recommended semantics)",
     "k, r",
     "equal accumulated scores: the oldest token leaves first",
     {.scorer = ScorerVariant::H2O, .exposes_scores = true, .h2o_code = true, .prefill_score = true},
     &make_h2o<PolicyId::H2O>},
    {H2ORealdrop,
     "h2o-realdrop",
     "H2O as in the real-drop code (H2OKVCache_LayerWise); same decisions as h2o",
     "k, r",
     "equal accumulated scores: the oldest token leaves first",
     {.scorer = ScorerVariant::H2O, .exposes_scores = true, .h2o_code = true, .prefill_score = true},
     &make_h2o<PolicyId::H2ORealdrop>},
    {H2OMask,
     "h2o-mask",
     "H2O as in the masking code (utils_hh): evicted tokens may re-enter",
     "heavy h, r",
     "equal accumulated scores: the newer token keeps its heavy slot (the masking code's top-k)",
     {.nested = false, .decoder = false, .budget_counts_next = true},
     &make_h2o_mask},
    {H2OPaper,
     "h2o-paper",
     "paper-exact Algorithm 2: greedy on h(sum of accumulated scores), no window",
     "k, h",
     "equal marginal gains: the oldest token leaves first",
     {.scorer = ScorerVariant::Paper, .exposes_scores = true},
     &make_h2o_paper},
    {Greedy,
     "greedy",
     "generic dynamic-submodular greedy on its objective (Definition 4.3)",
     "k, objective",
     "equal leave-one-out values of the objective: the oldest token leaves first",
     {.dense = ByObjective},
     &make_greedy},
    {Streaming,
     "streaming",
     "StreamingLLM: attention sinks + sliding window",
     "k, sinks",
     "no scores: the oldest token after the sinks leaves",
     {},
     &make_streaming},
    {Window,
     "window",
     "sliding window of the most recent tokens",
     "k",
     "no scores: the oldest token leaves",
     {},
     &make_window},
    {Tova,
     "tova",
     "TOVA: evict the token the current query attends least",
     "k",
     "equal attention of the current query: the oldest token leaves first",
     {.prefill_score = true},
     &make_tova},
    {Scissorhands,
     "scissorhands",
     "Scissorhands: evict the most persistently unimportant token",
     "k, r, history",
     "equal unimportance marks: the oldest token leaves first",
     {.prefill_score = true},
     &make_scissorhands},
    {Random,
     "random",
     "uniformly random eviction outside the recent window (seeded)",
     "k, r, seed",
     "no ties: a seeded uniform draw outside the recent window",
     {.seeded = true},
     &make_random},
    {Full, "full", "full cache, no eviction", "–", "no ties: nothing is evicted", {.budgeted = false}, &make_full},
    {Oracle,
     "oracle",
     "follows the offline optimum of the full-attention trace (kvoracle eval)",
     "k",
     "its schedule's: the offline optimum it follows decides",
     {.decoder = false, .offline = true},
     &make_oracle},
    {Lookahead,
     "lookahead",
     "h2o ranked by the attention of every query, future ones included (the paper's global heavy hitters)",
     "k, r",
     "equal attention summed over every query: the oldest token leaves first",
     {.dense = Always, .decoder = false, .offline = true},
     &make_lookahead},
    {Strided,
     "strided",
     "Sparse Transformer's strided pattern under a budget: recent window + an evenly strided lattice",
     "k, r",
     "no scores: the oldest token off the lattice leaves",
     {},
     &make_pattern<SparsePatternPolicy::Pattern::Strided, false>},
    {Fixed,
     "fixed",
     "Sparse Transformer's fixed pattern under a budget: current block + the last tokens of every block",
     "k, r",
     "no scores: the oldest token off the pattern leaves",
     {},
     &make_pattern<SparsePatternPolicy::Pattern::Fixed, false>},
    {StridedH2O,
     "strided-h2o",
     "strided with half of its long-range slots kept for heavy hitters (accumulated attention)",
     "k, r",
     "heavy slots: equal accumulated scores keep the newer token; then the oldest token off the lattice leaves",
     {},
     &make_pattern<SparsePatternPolicy::Pattern::Strided, true>},
    {FixedH2O,
     "fixed-h2o",
     "fixed with half of its long-range slots kept for heavy hitters (accumulated attention)",
     "k, r",
     "heavy slots: equal accumulated scores keep the newer token; then the oldest token off the pattern leaves",
     {},
     &make_pattern<SparsePatternPolicy::Pattern::Fixed, true>},
    {Heavy,
     "heavy",
     "heavy hitters only: h2o's accumulated attention without its recent window (the paper's Table 6)",
     "k",
     "equal accumulated scores: the oldest token leaves first",
     {},
     &make_ablation<HeavyHitterAblationPolicy::Mode::HeavyOnly>},
    {AntiH2O,
     "anti-h2o",
     "masks the heavy hitters: evicts the largest accumulated attention outside the recent window",
     "k, r",
     "equal accumulated scores: the oldest of the heaviest leaves first",
     {},
     &make_ablation<HeavyHitterAblationPolicy::Mode::MaskHeavy>},
    {Oldest,
     "oldest",
     "keeps the oldest tokens: the token before the new one leaves (masks the recent tokens)",
     "k",
     "no scores: the token before the new one leaves",
     {},
     &make_oldest},
}};

// (A constructor's presence is checked by the tests: comparing function addresses is not a
// constant expression under the sanitizers.)
constexpr Registry<PolicyEntry, kPolicyCount> kPolicies{kTable, "policy", "policies", nullptr, kPolicyPrefix};
static_assert(kPolicies.complete(), "the policy table needs one entry per PolicyId, in order, with a unique name");
static_assert(std::ranges::all_of(kTable, [](const PolicyEntry& e) { return !e.tie_rule.empty(); }),
              "every policy says how it breaks a tie of its scores");

}  // namespace

std::span<const PolicyEntry> policy_table() { return kPolicies.all(); }

const PolicyEntry& policy_entry(PolicyId id) { return kPolicies[id]; }

std::optional<PolicyId> find_policy(std::string_view name) {
  if (const PolicyEntry* e = kPolicies.find(name)) return e->id;
  return std::nullopt;
}

// The qualified spelling of every command (policy_press.hpp): "policy:tova" is the policy tova.
PolicyId parse_policy(std::string_view name) { return kPolicies.parse(name).id; }

std::vector<PolicyId> parse_policy_list(std::string_view names) { return kPolicies.parse_list(names); }

std::string join_policy_names(std::span<const PolicyId> ids) { return kPolicies.join(ids); }

std::vector<std::string> policy_name_list(std::span<const PolicyId> ids) {
  std::vector<std::string> out;
  for (PolicyId id : ids) out.push_back(policy_name(id));
  return out;
}

std::vector<PolicyId> parse_policy_names(const std::vector<std::string>& names) {
  std::vector<PolicyId> out;
  for (const auto& name : names) out.push_back(parse_policy(name));
  return out;
}

std::string policy_names_where(bool (*pred)(const PolicyTraits&)) {
  return kPolicies.names([pred](const PolicyEntry& e) { return pred(e.traits); });
}

PolicySpec PolicySpec::named(std::string_view name) {
  PolicySpec s;
  s.id = parse_policy(name);
  return s;
}

bool needs_dense(const PolicySpec& spec) {
  switch (policy_traits(spec.id).dense) {
    case DenseNeed::Never:
      return false;
    case DenseNeed::Always:
      return spec.schedule == nullptr;  // a closed loop's schedule replaces the dense attention
    case DenseNeed::ByObjective:
      return objective_needs_dense(spec.objective.name);
  }
  return false;
}

const std::vector<PolicyId>& default_policies(PolicyListUse use) {
  static const std::vector<PolicyId> checks = {H2O, H2OPaper, Tova, Scissorhands, Streaming, Window, Random, H2OMask};
  static const std::vector<PolicyId> eval = {H2O, Tova, Scissorhands, Streaming, Window, H2OPaper, Oracle};
  return use == PolicyListUse::Checks ? checks : eval;
}

std::unique_ptr<EvictionPolicy> make_policy(const PolicySpec& spec) {
  require(spec.sinks >= 0, "sinks must be >= 0");
  require(spec.history >= 1, "history must be >= 1");
  require(spec.objective.window >= 1, "window must be >= 1");
  return policy_entry(spec.id).make(spec);
}

}  // namespace kvo

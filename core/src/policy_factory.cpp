#include "kvo/core/policy_factory.hpp"

#include "kvo/core/error.hpp"
#include "kvo/core/policies.hpp"

namespace kvo {

const std::vector<PolicyInfo>& policy_catalogue() {
  static const std::vector<PolicyInfo> list = {
      {"h2o", "accumulated renormalised attention + recent window (recommended semantics)", true},
      {"h2o-realdrop", "H2O as in the real-drop code (H2OKVCache_LayerWise); same decisions as h2o", true},
      {"h2o-mask", "H2O as in the masking code (utils_hh): evicted tokens may re-enter", false},
      {"h2o-paper", "paper-exact Algorithm 2: greedy on h(sum of accumulated scores), no window", true},
      {"greedy", "generic dynamic-submodular greedy on --objective (Definition 4.3)", true},
      {"streaming", "StreamingLLM: attention sinks + sliding window", true},
      {"window", "sliding window of the most recent tokens", true},
      {"tova", "TOVA: evict the token the current query attends least", true},
      {"scissorhands", "Scissorhands: evict the most persistently unimportant token", true},
      {"random", "uniformly random eviction outside the recent window (seeded)", true},
      {"full", "full cache, no eviction", true},
  };
  return list;
}

std::unique_ptr<EvictionPolicy> make_policy(const PolicySpec& spec) {
  const std::string& n = spec.name;
  if (n == "h2o" || n == "h2o-realdrop") return std::make_unique<H2OPolicy>(n);
  if (n == "h2o-mask") return std::make_unique<H2OMaskPolicy>();
  if (n == "h2o-paper") {
    ObjectiveSpec acc = spec.objective;
    acc.name = "acc";
    return std::make_unique<GreedyEvictor>("h2o-paper", make_objective(acc), false);
  }
  if (n == "greedy")
    return std::make_unique<GreedyEvictor>("greedy:" + spec.objective.name, make_objective(spec.objective),
                                           objective_needs_dense(spec.objective.name));
  if (n == "streaming") return std::make_unique<StreamingPolicy>(spec.sinks);
  if (n == "window") return std::make_unique<WindowPolicy>();
  if (n == "tova") return std::make_unique<TovaPolicy>();
  if (n == "scissorhands") return std::make_unique<ScissorhandsPolicy>(spec.history);
  if (n == "random") return std::make_unique<RandomPolicy>();
  if (n == "full") return std::make_unique<FullCachePolicy>();
  std::string known;
  for (const auto& p : policy_catalogue()) known += (known.empty() ? "" : ", ") + p.name;
  throw Error("unknown policy '" + n + "' (known: " + known + ")");
}

}  // namespace kvo

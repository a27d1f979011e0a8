// The generic dynamic-submodular eviction engine (H2O Definition 4.3 / Algorithm 2): at step i,
// G_i = S_{i-1} ∪ {i}; when |G_i| > k it evicts u = argmax_{v in G_i} F_i(G_i \ {v}) for the
// set function F_i an objective builds from the state; ties evict the oldest token.
#pragma once
#include <functional>
#include <memory>

#include "kvo/core/concave.hpp"
#include "kvo/core/policy.hpp"
#include "kvo/core/set_function.hpp"

namespace kvo {

// What an objective sees when it builds F_i over the ground set G (indices into `ground`).
struct EvictionState {
  int step = 0;
  std::span<const int> ground;             // G_i, ascending token positions
  const std::vector<double>* accumulated;  // õ_i by token: renormalised attention summed over full steps
  const std::vector<double>* current;      // p_i by token: this step's renormalised attention (0 if unseen)
  const PolicySetup* setup = nullptr;
};

using ObjectiveFactory = std::function<std::unique_ptr<SetFunction>(const EvictionState&)>;

// Objectives by name: "acc" (Alg. 2's h(sum õ)), "one-step" (B), "dense-acc" (A), "mass" (M),
// "fl" (facility location over the last `window` queries), "sat-cov", "fidelity" (E).
struct ObjectiveSpec {
  std::string name = "acc";
  Concave h = Concave::Identity;
  int window = 16;     // queries for fl / sat-cov
  double alpha = 0.5;  // saturation for sat-cov
};
ObjectiveFactory make_objective(const ObjectiveSpec& spec);
bool objective_needs_dense(const std::string& name);

class GreedyEvictor final : public EvictionPolicy {
 public:
  GreedyEvictor(std::string name, ObjectiveFactory objective, bool needs_dense);
  std::string name() const override { return name_; }
  bool needs_dense() const override { return needs_dense_; }
  void begin(const PolicySetup& setup) override;
  void observe(int i, std::span<const int> attended, std::span<const double> probs) override;
  const std::vector<int>& cache() const override { return cache_; }
  // The accumulated õ by token (Alg. 2 line 9): only steps where the cache was full count.
  const std::vector<double>& accumulated() const { return acc_; }
  // F_i(G_i \ {v}) for each v of the last full step, in ground order (for the checks).
  const std::vector<double>& last_values() const { return last_values_; }

 private:
  std::string name_;
  ObjectiveFactory objective_;
  bool needs_dense_;
  PolicySetup setup_;
  std::vector<int> cache_;
  std::vector<double> acc_;
  std::vector<double> cur_;
  std::vector<double> last_values_;
};

}  // namespace kvo

#include <algorithm>
#include <numeric>

#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/facility_location.hpp"
#include "kvo/core/greedy_evictor.hpp"
#include "kvo/core/modular_concave.hpp"
#include "kvo/core/objective_registry.hpp"
#include "kvo/core/output_fidelity.hpp"
#include "kvo/core/saturated_coverage.hpp"

namespace kvo {
namespace {

// Dense rows max(0, i - window + 1) .. i restricted to the columns of G.
Eigen::MatrixXd dense_window(const EvictionState& s, int window) {
  const Eigen::MatrixXd& a = *s.setup->dense;
  const int first = std::max(0, s.step - window + 1);
  Eigen::MatrixXd m(s.step - first + 1, static_cast<long>(s.ground.size()));
  for (int r = first; r <= s.step; ++r)
    for (size_t c = 0; c < s.ground.size(); ++c) m(r - first, static_cast<long>(c)) = a(r, s.ground[c]);
  return m;
}

}  // namespace

bool objective_needs_dense(const std::string& name) {
  const ObjectiveEntry* e = find_objective(name);
  return e != nullptr && e->traits.needs_dense;
}

ObjectiveFactory make_objective(const ObjectiveSpec& spec) {
  const Concave h = spec.h;
  const ObjectiveId id = parse_objective(spec.name).id;  // the registry's names (objective_registry.hpp)
  using O = ObjectiveId;
  if (id == O::Acc)
    return [h](const EvictionState& s) {
      std::vector<double> w(s.ground.size());
      for (size_t t = 0; t < w.size(); ++t) w[t] = (*s.accumulated)[s.ground[t]];
      return std::make_unique<ModularConcave>(std::move(w), h, "acc");
    };
  if (id == O::OneStep)
    return [h](const EvictionState& s) {
      std::vector<double> w(s.ground.size());
      for (size_t t = 0; t < w.size(); ++t) w[t] = (*s.current)[s.ground[t]];
      return std::make_unique<ModularConcave>(std::move(w), h, "one-step");
    };
  if (id == O::DenseAcc)
    return [h](const EvictionState& s) {
      const Eigen::MatrixXd& a = *s.setup->dense;
      std::vector<double> w(s.ground.size());
      for (size_t t = 0; t < w.size(); ++t) w[t] = a.col(s.ground[t]).head(s.step + 1).sum();
      return std::make_unique<ModularConcave>(std::move(w), h, "dense-acc");
    };
  if (id == O::Mass)
    return [h](const EvictionState& s) {
      std::vector<double> w(s.ground.size());
      for (size_t t = 0; t < w.size(); ++t) w[t] = (*s.setup->dense)(s.step, s.ground[t]);
      return std::make_unique<ModularConcave>(std::move(w), h, "mass");
    };
  if (id == O::FacilityLocation) {
    const int window = spec.window;
    return [window](const EvictionState& s) { return std::make_unique<FacilityLocation>(dense_window(s, window)); };
  }
  if (id == O::SatCov) {
    const int window = spec.window;
    const double alpha = spec.alpha;
    return [window, alpha](const EvictionState& s) {
      return std::make_unique<SaturatedCoverage>(dense_window(s, window), alpha);
    };
  }
  return [](const EvictionState& s) {  // O::Fidelity
    require(s.setup->head != nullptr && s.setup->head->has_values(),
            "objective 'fidelity' needs values (v) in the trace");
    Eigen::VectorXd w(static_cast<long>(s.ground.size()));
    Eigen::MatrixXd v(static_cast<long>(s.ground.size()), s.setup->head->head_dim());
    for (size_t t = 0; t < s.ground.size(); ++t) {
      w[static_cast<long>(t)] = (*s.setup->dense)(s.step, s.ground[t]);
      v.row(static_cast<long>(t)) = s.setup->head->value(s.ground[t]).transpose();
    }
    return std::make_unique<OutputFidelity>(std::move(w), std::move(v));
  };
}

GreedyEvictor::GreedyEvictor(std::string name, ObjectiveFactory objective, bool needs_dense)
    : name_(std::move(name)), objective_(std::move(objective)), needs_dense_(needs_dense) {}

void GreedyEvictor::begin(const PolicySetup& setup) {
  setup_ = setup;
  cache_.clear();
  acc_.assign(static_cast<size_t>(setup.n), 0.0);
  cur_.assign(static_cast<size_t>(setup.n), 0.0);
  last_values_.clear();
}

void GreedyEvictor::observe(int i, std::span<const int> attended, std::span<const double> probs) {
  cache_.push_back(i);  // cache_ is now G_i
  const bool prefill = i < setup_.prompt_len - 1;
  if (prefill || static_cast<int>(cache_.size()) <= setup_.budget.total) return;  // Alg. 2: i <= k
  // Full branch: accumulate (line 9), then evict argmax_v F(G \ {v}) (line 11).
  std::fill(cur_.begin(), cur_.end(), 0.0);
  for (size_t t = 0; t < attended.size(); ++t) {
    acc_[attended[t]] += probs[t];
    cur_[attended[t]] = probs[t];
  }
  while (static_cast<int>(cache_.size()) > setup_.budget.total) {
    EvictionState st{i, cache_, &acc_, &cur_, &setup_};
    const auto f = objective_(st);
    last_values_ = f->leave_one_out();
    int best = 0;
    for (int v = 1; v < static_cast<int>(last_values_.size()); ++v)
      if (last_values_[v] > last_values_[best]) best = v;  // strict: ties evict the oldest
    cache_.erase(cache_.begin() + best);
  }
}

}  // namespace kvo

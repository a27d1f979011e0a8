// The one shape of every run that splits into independent work units (verify, replay, oracle
// offline, and what comes next): how many units, each one's name and relative cost, a unit's
// result as bytes (thread-safe; bytes are what travels between MPI ranks and into checkpoints),
// and the whole result assembled from every unit's bytes in unit order. run_on_threads() is the
// one-process runner; scaleout::run_plan (scaleout/plan_runner.hpp) spreads a plan over MPI ranks.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "kvo/core/parallel.hpp"

namespace kvo {

// The units without their result type: what a runner schedules.
class WorkUnits {
 public:
  virtual ~WorkUnits() = default;
  virtual int size() const = 0;
  virtual std::string name(int unit) const = 0;            // "layer 3 head 5", for errors
  virtual double cost(int /*unit*/) const { return 1.0; }  // relative; largest first
  virtual std::string run_bytes(int unit) const = 0;       // must not depend on who runs it
};

template <class Result>
class WorkPlan : public WorkUnits {
 public:
  // Every unit's bytes, in unit order.
  virtual Result assemble_bytes(const std::vector<std::string>& units) const = 0;
};

// A plan whose unit names carry a prefix, e.g. the trace of a several-trace run in errors
// ("'a.safetensors' layer 3 head 5"); everything else is the plan's.
template <class Result>
class PrefixedPlan final : public WorkPlan<Result> {
 public:
  PrefixedPlan(const WorkPlan<Result>& plan, std::string prefix) : plan_(plan), prefix_(std::move(prefix)) {}
  int size() const override { return plan_.size(); }
  std::string name(int unit) const override { return prefix_ + plan_.name(unit); }
  double cost(int unit) const override { return plan_.cost(unit); }
  std::string run_bytes(int unit) const override { return plan_.run_bytes(unit); }
  Result assemble_bytes(const std::vector<std::string>& units) const override { return plan_.assemble_bytes(units); }

 private:
  const WorkPlan<Result>& plan_;
  std::string prefix_;
};

// Every unit on `threads` threads (0: all cores), on_unit after each, then the assembled result.
template <class Result>
Result run_on_threads(const WorkPlan<Result>& plan, int threads, const std::function<void()>& on_unit = {}) {
  std::vector<std::string> bytes(static_cast<size_t>(plan.size()));
  parallel_for(plan.size(), threads, [&](int u) {
    bytes[static_cast<size_t>(u)] = plan.run_bytes(u);
    if (on_unit) on_unit();
  });
  return plan.assemble_bytes(bytes);
}

}  // namespace kvo

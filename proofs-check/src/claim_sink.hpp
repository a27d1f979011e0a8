// Internal: gathers one record per (claim, variant) over the sampled steps of one head, keeping
// the worst metric and the first failing step (else the step of the worst metric).
#pragma once
#include <string>
#include <vector>

#include "head_data.hpp"
#include "kvo/core/set_function.hpp"

namespace kvo::detail {

struct ClaimAcc {
  std::string id, variant;
  ClaimKind kind;
  bool holds = true;
  double metric = 0.0;
  bool lower_worse = true;
  long step = -1;
  bool any = false;
  nlohmann::json detail = nlohmann::json::object();
  void take(double m, bool ok, long i);
};

class ClaimSink {
 public:
  ClaimAcc& at(const std::string& id, const std::string& variant, ClaimKind kind, bool lower_worse = true);
  void flush(const HeadInfo& h, std::vector<CheckRecord>& out);

 private:
  std::vector<ClaimAcc> accs_;
};

// The static-greedy claims on one objective of the submodular family at step i, brute force
// against greedy with budget k: C7, C8 and D11 (not for sat-cov), C20, C22, and for `name` FL
// also C16 and C21.
void check_static_objective(const SetFunction& f, const std::string& name, int k, long i, const TraceChecksOptions& o,
                            ClaimSink& sink);

}  // namespace kvo::detail

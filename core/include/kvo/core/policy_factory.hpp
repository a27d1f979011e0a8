// Builds eviction policies by name from one parameter record (what the CLI and bindings use).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kvo/core/greedy_evictor.hpp"
#include "kvo/core/policy.hpp"

namespace kvo {

struct PolicySpec {
  std::string name = "h2o";
  int sinks = 4;            // streaming: attention sinks kept forever
  int history = 32;         // scissorhands: steps of history
  ObjectiveSpec objective;  // greedy: the set function F_i; h2o-paper: its h
};

struct PolicyInfo {
  std::string name;
  std::string summary;
  bool nested;
};

// Every policy name with a one-line summary, in a stable order.
const std::vector<PolicyInfo>& policy_catalogue();
// kvo::Error naming the known policies when the name is unknown.
std::unique_ptr<EvictionPolicy> make_policy(const PolicySpec& spec);

}  // namespace kvo

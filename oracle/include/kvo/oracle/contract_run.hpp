// `kvoracle oracle contract` as a library call: on every (layer, KV head) of a trace, the certified
// optimum under an engine's contract (contract_optimum.hpp), the per-head token optimum OPT_dyn at
// the same budget (every unit its own set, evicting at every step, no window or sinks), what the
// contract costs against it, and each policy's value when it obeys the contract (contract_group.hpp).
// Rewards are the retained dense attention mass of each KV head (the mean over its query group).
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kvo/core/engine_contracts.hpp"
#include "kvo/core/field_schema.hpp"
#include "kvo/core/policy_registry.hpp"
#include "kvo/core/trace.hpp"
#include "kvo/core/work_team.hpp"
#include "kvo/report/report.hpp"

namespace kvo {

struct ContractRequest {
  // The engines' contract documents (docs/engines.md): files' paths, or JSON texts themselves.
  std::vector<std::string> contracts;
  // Budgets replacing the contract's k (tokens a kept set holds): tokens or shares of n ("10%");
  // empty: the contract's own.
  std::vector<std::string> budgets;
  std::vector<PolicyId> policies = {PolicyId::H2O, PolicyId::Tova, PolicyId::Scissorhands};
  int threads = 0;  // <= 0: all cores

  // kvo::Error naming the field: no contract, a budget that is not an amount, a policy without a
  // per-token score.
  void validate() const;
  static const Schema<ContractRequest>& schema();
  // Each contract document: the JSON text, or the file read (kvo::Error naming the file).
  std::vector<nlohmann::json> documents() const;
};

struct ContractPolicyValue {
  std::string policy;
  double value = 0.0;  // the reward of its schedule under the contract
  double share = 0.0;  // value / the contract's optimum
};

struct ContractRow {
  std::string engine;
  size_t document = 0;        // its index in ContractResult::documents
  EvictionContract contract;  // with this row's budget
  double optimum = 0.0, upper = 0.0;
  bool certified = false;
  double per_head = 0.0, per_head_upper = 0.0;  // OPT_dyn at k, every unit alone
  double total = 0.0;                           // every token kept: the most any schedule retains
  double price = 0.0;                           // optimum / per_head
  int peak = 0;                                 // tokens a kept set holds at most between evictions
  std::vector<ContractPolicyValue> policies;
  double first_come = -1.0;  // admission only: admitting the first tokens while there is room
};

struct ContractResult {
  std::string trace;
  std::vector<nlohmann::json> documents;  // as given
  int n = 0, layers = 0, kv_heads = 0;
  std::vector<ContractRow> rows;  // budget-major, then the documents' order
  nlohmann::json to_json() const;
  // The table (one row per budget and contract: optimum, per-head optimum, price, certificate,
  // each policy's share) and "contract.svg" (each contract's price against k / n).
  Report report() const;
};

// `name` labels the trace (its file, for the CLI). The work runs through `team` as one unit per
// (contract, budget) row and one per budget's per-head optimum, unless a row is that optimum
// itself (a plain per-head contract): under MPI every rank holds the trace and the leader alone
// gets the result; a checkpoint keeps each finished unit. kvo::Error from the request, a contract
// document (read_engine_contract) or a budget that does not fit a contract, before any work.
std::optional<ContractResult> run_contract(const Trace& trace, const ContractRequest& request, const WorkTeam& team,
                                           const std::string& name = "the trace");
// The same in this process on request.threads threads, with a progress bar.
ContractResult run_contract(const Trace& trace, const ContractRequest& request, const std::string& name = "the trace");

// The reward of one unit's schedule under a contract, from each token's last kept step (`end`, j - 1:
// never): at every step the set after the step's evictions, or, when the contract compresses, the
// set the step's query saw before the compression that follows it.
double contract_schedule_value(const Eigen::MatrixXd& w, const std::vector<int>& end, const EvictionContract& c);

}  // namespace kvo

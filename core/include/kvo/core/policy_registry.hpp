// The one table of eviction policies, in the spirit of ggml's op table: each policy's name, summary,
// traits and constructor. Everything that needs to know about a policy (the CLI's listing and
// option checks, the replay engine, the cache manager's refusals, the greedy scorer's dispatch, the
// claim checks, the docs' table) reads it here; no other code compares policy names. The lookups
// are the generic registry's (kvo/core/registry.hpp), as for presses, objectives, scopes and tasks.
#pragma once
#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvo/core/greedy_evictor.hpp"
#include "kvo/core/policy.hpp"

namespace kvo {

// Every policy, in the table's (and `kvoracle policies`') order. Count closes the list: the table
// is checked at compile time to hold exactly one entry per id, in this order.
enum class PolicyId : int {
  H2O,
  H2ORealdrop,
  H2OMask,
  H2OPaper,
  Greedy,
  Streaming,
  Window,
  Tova,
  Scissorhands,
  Random,
  Full,
  Oracle,
  Lookahead,
  Strided,
  Fixed,
  StridedH2O,
  FixedH2O,
  Heavy,
  AntiH2O,
  Oldest,
  Count
};
inline constexpr std::size_t kPolicyCount = static_cast<std::size_t>(PolicyId::Count);

// Which kernel of the greedy scorer (gpu/) replays a policy; None: the scorer cannot.
enum class ScorerVariant { None, H2O, Paper };

// When a policy reads the dense n × n attention of the whole sequence ahead of time.
enum class DenseNeed { Never, Always, ByObjective };

// A policy's traits, named in its table row (designated initializers, in this order). The defaults
// are an ordinary online policy: nested, budgeted, drivable by a decoder, nothing else.
struct PolicyTraits {
  bool nested = true;                  // S_i ⊆ S_{i-1} ∪ {i}: an evicted token never comes back
  bool budgeted = true;                // holds to the budget (false: the full cache keeps everything)
  DenseNeed dense = DenseNeed::Never;  // reads the dense attention of the whole sequence (not drivable online)
  // A decoder can drive it online, step by step (KvEvictionManager, EvictingCache). Offline
  // policies cannot: closed loops hand them a schedule from the full cache's trace (see offline).
  bool decoder = true;
  ScorerVariant scorer = ScorerVariant::None;  // replayable by the greedy scorer and its CPU twin
  bool seeded = false;                         // randomised: deterministic given the seed
  bool exposes_scores = false;                 // its per-token score array is snapshotted for the checks (PolicyScores)
  bool h2o_code = false;                       // obeys the H2O code's invariants (C27): window, argmin, prefill top-h
  bool offline = false;  // closed loops run it along a schedule from the full cache's trace (PolicySpec::schedule)
  // Its budget counts the slot of the token about to arrive: after step i its cache holds k - 1 of
  // the tokens seen (the masking code's recent window ends at the next token).
  bool budget_counts_next = false;
  // Its prompt cut keeps the top-k of a per-token score (EvictionPolicy::eviction_scores), so it is
  // a kvpress ScorerPress as a prefill press (policy_prefill_scores, KvoraclePress).
  bool prefill_score = false;
};

struct PolicySpec;
using PolicyConstructor = std::unique_ptr<EvictionPolicy> (*)(const PolicySpec&);

struct PolicyEntry {
  PolicyId id;
  std::string_view name;
  std::string_view summary;
  std::string_view reads;     // the parameters it reads (docs/policies.md's "uses" column)
  std::string_view tie_rule;  // which token leaves when scores are equal (the conformance kit's rule)
  PolicyTraits traits;
  PolicyConstructor make;
};

// Offline schedules by cache unit: token j stays until step end[j] (j - 1: never kept). The
// oracle-guided policy of `kvoracle eval` follows the offline optimum this way.
using ScheduleSource = std::function<std::vector<int>(int layer, int unit_head)>;

// A policy and its parameters (what the CLI, the bindings and every options struct carry).
struct PolicySpec {
  PolicyId id = PolicyId::H2O;
  int sinks = 4;                                   // streaming: attention sinks kept forever
  int history = 32;                                // scissorhands: steps of history
  ObjectiveSpec objective;                         // greedy: the set function F_i; h2o-paper: its h
  std::shared_ptr<const ScheduleSource> schedule;  // offline policies (oracle, lookahead) in closed loops

  // The spec of a policy by name with default parameters (kvo::Error naming the known ones).
  static PolicySpec named(std::string_view name);
};

// The whole table, in PolicyId order.
std::span<const PolicyEntry> policy_table();
const PolicyEntry& policy_entry(PolicyId id);
inline const PolicyTraits& policy_traits(PolicyId id) { return policy_entry(id).traits; }
inline std::string policy_name(PolicyId id) { return std::string(policy_entry(id).name); }
// The qualified spelling of a policy, in every command: "policy:tova" is kvoracle's TOVA policy,
// where the bare "tova" also names a kvpress press (kvo/core/policy_press.hpp).
inline constexpr std::string_view kPolicyPrefix = "policy:";
// kvo::Error "unknown policy 'x' (known: ...)" for a name not in the table.
std::optional<PolicyId> find_policy(std::string_view name);  // nothing when no policy has this name
PolicyId parse_policy(std::string_view name);                // also "policy:NAME"
// Comma-separated names ("h2o,tova"), each parsed; kvo::Error on an empty list.
std::vector<PolicyId> parse_policy_list(std::string_view names);
std::string join_policy_names(std::span<const PolicyId> ids);
// A policy list's JSON form and back: names, in order (kvo::Error for an unknown name).
std::vector<std::string> policy_name_list(std::span<const PolicyId> ids);
std::vector<PolicyId> parse_policy_names(const std::vector<std::string>& names);
// Names of the policies with a trait, for messages ("h2o, h2o-realdrop, h2o-paper").
std::string policy_names_where(bool (*pred)(const PolicyTraits&));

// Whether this spec needs the dense attention (greedy: depends on its objective; lookahead: unless a
// closed loop gave it a schedule).
bool needs_dense(const PolicySpec& spec);

// The default policy lists of the commands, one place each.
enum class PolicyListUse { Checks, Eval };
const std::vector<PolicyId>& default_policies(PolicyListUse use);

// Builds the policy a spec names (validated parameters; kvo::Error otherwise).
std::unique_ptr<EvictionPolicy> make_policy(const PolicySpec& spec);

}  // namespace kvo

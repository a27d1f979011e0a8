// The one table of the set functions the greedy policy and the static oracle take by name
// (--objective / objective=): per objective its name, what it is, what it reads and its traits,
// checked complete at compile time (one entry per ObjectiveId, in order).
#pragma once
#include <span>
#include <string>
#include <string_view>

namespace kvo {

enum class ObjectiveId { Acc, OneStep, DenseAcc, Mass, FacilityLocation, SatCov, Fidelity };
inline constexpr int kObjectiveCount = 7;

// An objective's traits, named in its table row (designated initializers; each false unless named).
struct ObjectiveTraits {
  bool needs_dense = false;    // needs the dense attention of the whole sequence ahead of time
  bool concave = false;        // h(sum of weights): the concave transform (`concave`) applies
  bool window = false;         // reads the last `window` queries
  bool alpha = false;          // reads the saturation `alpha`
  bool values = false;         // needs the trace's values (v)
  bool static_oracle = false;  // the static oracle (oracle static) solves it
};

struct ObjectiveEntry {
  ObjectiveId id;
  std::string_view name;
  std::string_view summary;  // docs/theory.md §2.0's letter and what it sums
  ObjectiveTraits traits;
};

std::span<const ObjectiveEntry> objective_table();
const ObjectiveEntry& objective_entry(ObjectiveId id);
const ObjectiveEntry* find_objective(std::string_view name);  // nullptr when no objective has this name
// kvo::Error "unknown objective 'x' (expected acc, one-step, ...)".
const ObjectiveEntry& parse_objective(std::string_view name);
// Names of the objectives with a trait ("dense-acc, mass or fl"), for messages and help.
std::string objective_names_where(bool (*pred)(const ObjectiveTraits&));

}  // namespace kvo

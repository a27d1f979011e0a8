#include "kvo/core/objective_registry.hpp"

#include <array>
#include <vector>

#include "kvo/core/error.hpp"

namespace kvo {

namespace {

using Id = ObjectiveId;
//                                   dense  concave window alpha  values static
constexpr ObjectiveTraits kAcc{false, true, false, false, false, false};
constexpr ObjectiveTraits kOneStep{false, true, false, false, false, false};
constexpr ObjectiveTraits kDenseAcc{true, true, false, false, false, true};
constexpr ObjectiveTraits kMass{true, true, false, false, false, true};
constexpr ObjectiveTraits kFl{true, false, true, false, false, true};
constexpr ObjectiveTraits kSatCov{true, false, true, true, false, false};
constexpr ObjectiveTraits kFidelity{true, false, false, false, true, false};

constexpr std::array<ObjectiveEntry, kObjectiveCount> kObjectives = {{
    {Id::Acc, "acc", "C: h of Algorithm 2's accumulated renormalised attention", kAcc},
    {Id::OneStep, "one-step", "B: h of this step's attention renormalised over the cache", kOneStep},
    {Id::DenseAcc, "dense-acc", "A: h of the dense attention accumulated over the steps so far", kDenseAcc},
    {Id::Mass, "mass", "M: h of this step's dense attention (retained mass)", kMass},
    {Id::FacilityLocation, "fl", "facility location over the last `window` queries' dense rows", kFl},
    {Id::SatCov, "sat-cov", "saturated coverage (alpha) over the last `window` queries' dense rows", kSatCov},
    {Id::Fidelity, "fidelity", "E: output fidelity of this step's attention output", kFidelity},
}};

constexpr bool table_in_order() {
  for (std::size_t i = 0; i < kObjectives.size(); ++i)
    if (static_cast<std::size_t>(kObjectives[i].id) != i) return false;
  return true;
}
static_assert(table_in_order(), "one objective entry per ObjectiveId, in order");

}  // namespace

std::span<const ObjectiveEntry> objective_table() { return kObjectives; }

const ObjectiveEntry& objective_entry(ObjectiveId id) { return kObjectives[static_cast<std::size_t>(id)]; }

const ObjectiveEntry* find_objective(std::string_view name) {
  for (const auto& e : kObjectives)
    if (e.name == name) return &e;
  return nullptr;
}

std::string objective_names_where(bool (*pred)(const ObjectiveTraits&)) {
  std::vector<std::string_view> names;
  for (const auto& e : kObjectives)
    if (pred(e.traits)) names.push_back(e.name);
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i)
    s.append(i == 0 ? "" : i + 1 == names.size() ? " or " : ", ").append(names[i]);
  return s;
}

const ObjectiveEntry& parse_objective(std::string_view name) {
  if (const ObjectiveEntry* e = find_objective(name)) return *e;
  throw Error("unknown objective '" + std::string(name) + "' (expected " +
              objective_names_where([](const ObjectiveTraits&) { return true; }) + ")");
}

}  // namespace kvo

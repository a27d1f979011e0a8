#include "kvo/core/objective_registry.hpp"

#include <array>
#include <vector>

#include "kvo/core/registry.hpp"

namespace kvo {

namespace {

using Id = ObjectiveId;

constexpr std::array<ObjectiveEntry, kObjectiveCount> kObjectiveRows = {{
    {Id::Acc, "acc", "C: h of Algorithm 2's accumulated renormalised attention", {.concave = true}},
    {Id::OneStep, "one-step", "B: h of this step's attention renormalised over the cache", {.concave = true}},
    {Id::DenseAcc,
     "dense-acc",
     "A: h of the dense attention accumulated over the steps so far",
     {.needs_dense = true, .concave = true, .static_oracle = true}},
    {Id::Mass,
     "mass",
     "M: h of this step's dense attention (retained mass)",
     {.needs_dense = true, .concave = true, .static_oracle = true}},
    {Id::FacilityLocation,
     "fl",
     "facility location over the last `window` queries' dense rows",
     {.needs_dense = true, .window = true, .static_oracle = true}},
    {Id::SatCov,
     "sat-cov",
     "saturated coverage (alpha) over the last `window` queries' dense rows",
     {.needs_dense = true, .window = true, .alpha = true}},
    {Id::Fidelity,
     "fidelity",
     "E: output fidelity of this step's attention output",
     {.needs_dense = true, .values = true}},
}};

constexpr Registry<ObjectiveEntry, kObjectiveCount> kObjectives{kObjectiveRows, "objective", "objectives"};
static_assert(kObjectives.complete(), "one objective entry per ObjectiveId, in order, with a unique name");

}  // namespace

std::span<const ObjectiveEntry> objective_table() { return kObjectives.all(); }

const ObjectiveEntry& objective_entry(ObjectiveId id) { return kObjectives[id]; }

const ObjectiveEntry* find_objective(std::string_view name) { return kObjectives.find(name); }

// "dense-acc, mass or fl": the last two joined by "or", as a sentence lists choices.
std::string objective_names_where(bool (*pred)(const ObjectiveTraits&)) {
  std::vector<std::string_view> names;
  for (const auto& e : kObjectives.all())
    if (pred(e.traits)) names.push_back(e.name);
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i)
    s.append(i == 0 ? "" : i + 1 == names.size() ? " or " : ", ").append(names[i]);
  return s;
}

const ObjectiveEntry& parse_objective(std::string_view name) { return kObjectives.parse(name); }

}  // namespace kvo

// Runs independent work units over the team (team.hpp): rank 0 hands units out largest first as
// ranks become free, every rank computes them on its threads, and the serialised results come back
// to rank 0 in unit order, so the outputs do not depend on how many ranks or threads ran them.
// With a checkpoint, rank 0 stores each finished unit and a rerun skips the units stored there.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace kvo::scaleout {

class Checkpoint;

struct UnitPlan {
  std::string section;             // the checkpoint's folder for these units, e.g. "t0" (one per call)
  std::vector<std::string> names;  // one per unit, for errors ("layer 3 head 5")
  std::vector<double> cost;        // relative cost; units go out largest first, ties by index
};

struct UnitRunOptions {
  int threads = 1;                         // worker threads on each rank
  const Checkpoint* checkpoint = nullptr;  // rank 0: stores finished units, reuses stored ones
  std::function<void()> on_done;           // rank 0: once per unit, resumed units included
};

// The unit's result as bytes (any serialisation); must not depend on the rank or thread running it.
using UnitWork = std::function<std::string(int unit)>;

// Collective over Team::world(): every rank calls it with the same plan. Returns, on rank 0, every
// unit's result in unit order; on the other ranks, an empty vector. A unit that throws ends the
// call on every rank after the units in flight finish: every rank throws TeamError
// "rank R, <unit name>: <what>" (team.hpp), which rank 0 alone prints.
std::vector<std::string> run_units(const UnitPlan& plan, const UnitWork& work, const UnitRunOptions& options);

}  // namespace kvo::scaleout

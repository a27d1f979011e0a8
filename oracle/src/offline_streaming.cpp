// The offline optimum by column generation over rows produced on demand: one head
// (solve_offline_streaming) on column_generation.hpp's rounds, with the schedule and its
// certificate read from the restricted assignment's solution.
#include "kvo/oracle/offline_streaming.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "assignment_steps.hpp"
#include "column_generation.hpp"
#include "kvo/core/error.hpp"

namespace kvo {

OfflineSolution solve_offline_streaming(const WeightRows& w, int budget, int recent, const StreamingOfflineOptions& o) {
  const int n = w.n();
  validate_offline_sizes(n, budget, recent);
  require(o.candidates >= 1, "offline column generation: need at least one candidate per step");
  const WeightRows* one[] = {&w};
  const detail::ColumnGeneration cg = detail::column_generation(one, budget, recent, o);
  OfflineSolution sol;
  sol.method = "column-generation";
  sol.rounds = cg.rounds;
  sol.passes = cg.passes;
  sol.pairs = cg.pairs;
  sol.work = cg.work;
  sol.table_stride = cg.table_stride;
  sol.table_bytes = cg.table_bytes;
  detail::schedule_from_assignment(n, budget, cg.col_of, cg.row_potential, sol);
  if (!o.evaluate) {
    sol.value = sol.upper = std::numeric_limits<double>::quiet_NaN();
    return sol;
  }
  const ScheduleCheck check = evaluate_schedule(w, budget, recent, sol.end, sol.price, o.threads);
  ++sol.passes;
  sol.value = check.value;
  sol.upper = check.upper;
  return sol;
}

}  // namespace kvo

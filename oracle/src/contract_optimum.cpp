// Contracts reduced to the offline solvers. For each budget group (kept sets sharing one budget):
// every kept set's rewards are its units' summed (one set for all of them, so each token is held
// or not in all at once); the sinks leave the problem on tokens s.. with s fewer slots and their
// reward as a constant; a delay d forces the newest max(r, d) tokens; pages fold the problem
// (offline_pages.hpp); then the group is one problem for solve_offline_streaming,
// solve_offline_shared_streaming (column generation on the dense rows), solve_offline_compressions
// or solve_offline_admission, whose ends map back to tokens.
#include "kvo/oracle/contract_optimum.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>

#include "kvo/core/error.hpp"
#include "kvo/core/parallel.hpp"
#include "kvo/oracle/offline_admission.hpp"
#include "kvo/oracle/offline_oracle.hpp"
#include "kvo/oracle/offline_pages.hpp"
#include "kvo/oracle/offline_periodic.hpp"
#include "kvo/oracle/offline_shared.hpp"
#include "kvo/oracle/offline_streaming.hpp"
#include "kvo/oracle/weight_rows.hpp"

namespace kvo {
namespace {

std::string num(int v) { return std::to_string(v); }

// One kept set's problem after sinks: rewards on tokens s.., and what the sinks are paid.
struct SetProblem {
  OfflineProblem problem;
  double sink_value = 0.0;
};

SetProblem reduce_set(const Eigen::MatrixXd& w, const EvictionContract& c) {
  const int n = static_cast<int>(w.rows()), s = c.sinks;
  SetProblem out;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < std::min(s, i + 1); ++j) out.sink_value += w(i, j);
  out.problem.w = w.bottomRightCorner(n - s, n - s).triangularView<Eigen::Lower>();
  out.problem.budget = c.budget - s;
  out.problem.recent = c.compresses() ? c.recent : std::max(c.recent, c.delay);
  return out;
}

}  // namespace

bool ContractOptimum::certified() const { return upper - value <= 1e-9 * std::max(1.0, std::abs(value)); }

ContractOptimum solve_contract(const std::function<Eigen::MatrixXd(size_t unit)>& unit_w, int n, int layers,
                               int kv_heads, const EvictionContract& c, int threads) {
  c.validate(n);
  require(layers >= 1 && kv_heads >= 1, "a contract needs at least one unit");
  const int s = c.sinks, b = c.page_size;
  ContractOptimum out;
  const std::vector<ContractUnit> units = model_units(layers, kv_heads);
  out.sets = c.sets_of(units);
  const std::vector<std::vector<size_t>> groups = c.budget_groups_of(units, out.sets);
  out.end.resize(out.sets.size());
  out.set_value.assign(out.sets.size(), 0.0);
  std::vector<int> points;
  for (int p : c.compression_steps(n))
    if (p >= s) points.push_back(p - s);
  std::vector<double> group_upper(groups.size(), 0.0);
  std::vector<long long> group_work(groups.size(), 0);
  parallel_for(static_cast<int>(groups.size()), threads, [&](int gi) {
    const std::vector<size_t>& group = groups[static_cast<size_t>(gi)];
    double& upper = group_upper[static_cast<size_t>(gi)];
    long long& work = group_work[static_cast<size_t>(gi)];
    std::vector<OfflineProblem> problems;
    std::vector<double> sink_value;
    for (size_t x : group) {
      Eigen::MatrixXd w;
      for (size_t u : out.sets[x]) {
        Eigen::MatrixXd m = unit_w(u);
        require(m.rows() == n && m.cols() == n,
                "unit " + std::to_string(u) + "'s rewards are not " + num(n) + " x " + num(n));
        if (w.size() == 0)
          w = std::move(m);
        else
          w += m;
      }
      SetProblem set = reduce_set(w, c);
      if (b > 1) set.problem = fold_into_pages(set.problem, page_shape(set.problem.budget, set.problem.recent, b));
      problems.push_back(std::move(set.problem));
      sink_value.push_back(set.sink_value);
    }
    std::vector<std::vector<int>> ends;
    std::vector<double> values;
    if (c.admission_only) {
      AdmissionSolution sol = solve_offline_admission(problems);
      ends = std::move(sol.end);
      values = std::move(sol.unit_value);
      upper = sol.upper;
    } else if (c.compresses()) {
      SharedOfflineSolution sol = solve_offline_compressions(problems, points);
      ends = std::move(sol.end);
      values = std::move(sol.unit_value);
      upper = sol.upper;
      work += sol.work;
    } else if (problems.size() == 1) {
      // Column generation: the dense assignment's Dijkstra steps scan every arrived column, and at
      // 8 192 tokens the study's dense solves finished no row in 2 h (docs/engines.md, "Measured").
      const OfflineProblem& p = problems.front();
      OfflineSolution sol = solve_offline_streaming(DenseWeightRows(p.w), p.budget, p.recent);
      ends = {std::move(sol.end)};
      values = {sol.value};
      upper = sol.upper;
      work += sol.work;
    } else {
      SharedOfflineSolution sol = solve_offline_shared_streaming(problems);
      ends = std::move(sol.end);
      values = std::move(sol.unit_value);
      upper = sol.upper;
      work += sol.work;
    }
    for (size_t g = 0; g < group.size(); ++g) {
      const size_t x = group[g];
      std::vector<int>& end = out.end[x];
      end.assign(static_cast<size_t>(n), n - 1);  // the sinks stay
      for (int j = s; j < n; ++j) {
        const int sub = j - s, e = b > 1 ? ends[g][static_cast<size_t>(sub / b)] : ends[g][static_cast<size_t>(sub)];
        // A page held through page step e holds its tokens through the last step of that page step.
        const int sub_end = b > 1 ? std::min((e + 1) * b - 1, n - s - 1) : e;
        end[static_cast<size_t>(j)] = sub_end + s;
      }
      out.set_value[x] = values[g] + sink_value[g];
      upper += sink_value[g];
    }
  });
  for (size_t g = 0; g < groups.size(); ++g) {
    out.upper += group_upper[g];
    out.work += group_work[g];
  }
  for (double v : out.set_value) out.value += v;
  return out;
}

}  // namespace kvo

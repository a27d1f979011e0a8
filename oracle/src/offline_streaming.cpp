// Column generation for the offline assignment (docs/oracle.md §3c). The restricted problem keeps,
// per eviction step t, a short list of candidate tokens with their costs L_j(t); it is solved
// exactly by shortest augmenting paths on that sparse graph, and its potentials (u_t, v_j) are
// priced against every pair j <= t - r in one backwards pass over the rows (the suffix sums
// L_j(t) built as solve_offline builds them). A pair with a negative reduced cost joins its step's
// list, as does each token's most negative pair; when none does, (u, v) is feasible for the full dual and the
// restricted optimum is the optimum. The step t evicting the newcomer t - r is always a candidate, so every restricted
// problem is feasible.
#include "kvo/oracle/offline_streaming.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "assignment_steps.hpp"
#include "column_generation.hpp"
#include "kvo/core/error.hpp"

namespace kvo {
namespace {

struct Candidate {
  int token;
  double cost;  // L_token(t)
};

// The restricted assignment: rows = eviction steps, columns = tokens, each row's candidate list,
// solved from scratch by solve(): rows in time order, each matched by a shortest augmenting path
// (Dijkstra on reduced costs c - u_t - v_j, which stay >= 0 on every listed pair, tight on matched
// ones; v_j <= 0, and 0 on unmatched columns). Repairing the previous round's potentials instead
// releases every row here (each new pair's column cascades), so no warm start is attempted.
class RestrictedAssignment {
 public:
  // `steps` lists, each shared by `per` interchangeable rows (the H slots a shared step frees).
  RestrictedAssignment(int steps, int cols, int per)
      : lists_(static_cast<size_t>(steps)), cols_(static_cast<size_t>(cols)), per_(static_cast<size_t>(per)) {}

  const std::vector<Candidate>& list(int step) const { return lists_[static_cast<size_t>(step)]; }
  // The largest potential of the step's rows: a pair that prices out against it does against all.
  double step_potential(int step) const {
    const auto first = u_.begin() + static_cast<long>(static_cast<size_t>(step) * per_);
    return *std::max_element(first, first + static_cast<long>(per_));
  }
  double v(int col) const { return v_[static_cast<size_t>(col)]; }
  const std::vector<int>& matching() const { return col_of_; }  // the token each step evicts
  const std::vector<double>& row_potentials() const { return u_; }
  long long augmentations() const { return augmentations_; }
  void add(int step, Candidate c) { lists_[static_cast<size_t>(step)].push_back(c); }

  void solve() {
    const size_t R = lists_.size() * per_, C = cols_;
    u_.assign(R, 0.0);
    v_.assign(C, 0.0);
    col_of_.assign(R, -1);
    row_of_.assign(C, -1);
    key_.assign(C, inf_);
    dist_.assign(C, inf_);
    pred_.assign(C, -1);
    settled_.assign(C, 0);
    block_min_.assign(C / kBlock + 1, inf_);
    for (size_t row = 0; row < R; ++row) augment(static_cast<int>(row));
  }

 private:
  // Dijkstra from `cur` until an unmatched column is settled; the lowest key goes first (ties: the
  // lowest token), found through per-block minima.
  void augment(int cur) {
    touched_.clear();
    settled_cols_.clear();
    rows_seen_.clear();
    const size_t blocks = block_min_.size();
    double reach = 0.0;  // distance to the row being scanned
    int i = cur, sink = -1;
    while (sink < 0) {
      rows_seen_.push_back(i);
      const double base = reach - u_[static_cast<size_t>(i)];
      for (const Candidate& c : lists_[static_cast<size_t>(i) / per_]) {
        const size_t j = static_cast<size_t>(c.token);
        const double d = std::max(base + c.cost - v_[j], reach);  // reduced costs are >= 0 up to rounding
        if (d < dist_[j] && !settled_[j]) {
          if (dist_[j] == inf_) touched_.push_back(c.token);
          dist_[j] = key_[j] = d;
          pred_[j] = i;
          block_min_[j / kBlock] = std::min(block_min_[j / kBlock], d);
        }
      }
      size_t best = 0;
      for (size_t b = 1; b < blocks; ++b)
        if (block_min_[b] < block_min_[best]) best = b;
      require(block_min_[best] < inf_, "offline column generation: no augmenting path (a bug)");
      size_t pick = best * kBlock;
      while (key_[pick] != block_min_[best]) ++pick;
      key_[pick] = inf_;
      double lo = inf_;
      for (size_t j = best * kBlock; j < std::min(key_.size(), (best + 1) * kBlock); ++j) lo = std::min(lo, key_[j]);
      block_min_[best] = lo;
      settled_[pick] = 1;
      settled_cols_.push_back(static_cast<int>(pick));
      reach = dist_[pick];
      if (row_of_[pick] < 0)
        sink = static_cast<int>(pick);
      else
        i = row_of_[pick];
    }
    detail::settle_augmentation(cur, sink, reach, rows_seen_, settled_cols_, dist_, pred_, u_, v_, col_of_, row_of_);
    for (int j : settled_cols_) settled_[static_cast<size_t>(j)] = 0;
    for (int j : touched_) {
      dist_[static_cast<size_t>(j)] = key_[static_cast<size_t>(j)] = inf_;
      block_min_[static_cast<size_t>(j) / kBlock] = inf_;
    }
    ++augmentations_;
  }

  static constexpr size_t kBlock = 64;
  static constexpr double inf_ = std::numeric_limits<double>::infinity();
  std::vector<std::vector<Candidate>> lists_;
  size_t cols_, per_;
  std::vector<double> u_, v_;
  std::vector<int> col_of_, row_of_;
  std::vector<double> key_, dist_, block_min_;
  std::vector<int> pred_, touched_, settled_cols_, rows_seen_;
  std::vector<char> settled_;
  long long augmentations_ = 0;
};

}  // namespace

namespace detail {

ColumnGeneration column_generation(std::span<const WeightRows* const> units, int budget, int recent,
                                   const StreamingOfflineOptions& o) {
  const int H = static_cast<int>(units.size()), n = units[0]->n(), r = recent;
  const int h = budget - recent, m = n - r, first = h + r, steps = n - first;
  // Columns: unit u's token j is column j H + u (arrival-major), so a step sees a prefix of them.
  const size_t cols = static_cast<size_t>(std::max(m, 0)) * static_cast<size_t>(H);
  ColumnGeneration out;
  RestrictedAssignment ra(std::max(steps, 0), static_cast<int>(cols), H);
  std::vector<double> suffix(cols);
  std::vector<int> listed(cols, -1);  // the step whose list names the column
  std::vector<std::pair<double, int>> pool;
  struct Best {  // a column's most negative pair of the pass
    double reduced = 0.0;
    int step = -1;
    double cost = 0.0;
  };
  std::vector<Best> col_best(cols);
  double tolerance = 0.0;
  const size_t c = static_cast<size_t>(o.candidates) * static_cast<size_t>(H);
  // One backwards pass: the suffix sums L(t) of every unit's row; per step the (at most c)
  // unlisted pairs that price in best, and per column its best pair over the pass (a column's
  // pairs otherwise crowd out of every step's few). The first pass (no potentials yet) lists the c
  // cheapest.
  auto price_pass = [&](bool seed) {
    std::fill(suffix.begin(), suffix.end(), 0.0);
    long long added = 0;
    for_each_unit_row(units, first, n, true, o.threads, [&](int t, int u, std::span<const double> row) {
      const int width = t - r + 1;
      for (int j = 0; j < width; ++j)
        suffix[static_cast<size_t>(j) * static_cast<size_t>(H) + static_cast<size_t>(u)] += row[static_cast<size_t>(j)];
      if (u + 1 < H) return;  // the step is priced once every unit's row is in
      const int step = t - first, arrived = width * H, newcomers = (t - r) * H;
      for (const Candidate& x : ra.list(step)) listed[static_cast<size_t>(x.token)] = t;
      pool.clear();
      if (seed) {
        for (int x = newcomers; x < arrived; ++x) {  // the newcomers keep every restricted problem feasible
          ra.add(step, {x, suffix[static_cast<size_t>(x)]});
          listed[static_cast<size_t>(x)] = t;
          ++added;
        }
        for (int x = 0; x < newcomers; ++x) pool.push_back({suffix[static_cast<size_t>(x)], x});
      } else {
        const double ut = ra.step_potential(step);
        for (int x = 0; x < arrived; ++x) {
          const double reduced = suffix[static_cast<size_t>(x)] - ut - ra.v(x);
          if (reduced < -tolerance && listed[static_cast<size_t>(x)] != t) {
            pool.push_back({reduced, x});
            auto& b = col_best[static_cast<size_t>(x)];
            if (reduced < b.reduced) b = {reduced, t, suffix[static_cast<size_t>(x)]};
          }
        }
      }
      const size_t take = std::min(c, pool.size());
      std::partial_sort(pool.begin(), pool.begin() + static_cast<long>(take), pool.end());
      for (size_t x = 0; x < take; ++x) {
        const int col = pool[x].second;
        ra.add(step, {col, suffix[static_cast<size_t>(col)]});
        listed[static_cast<size_t>(col)] = t;
      }
      added += static_cast<long long>(take);
    });
    if (!seed)
      for (size_t x = 0; x < cols; ++x) {
        auto& b = col_best[x];
        if (b.step >= 0) {
          const auto& list = ra.list(b.step - first);
          if (std::none_of(list.begin(), list.end(),
                           [&](const Candidate& y) { return y.token == static_cast<int>(x); })) {
            ra.add(b.step - first, {static_cast<int>(x), b.cost});
            ++added;
          }
        }
        b = {0.0, -1, 0.0};
      }
    ++out.passes;
    return added;
  };
  long long pairs = 0;
  if (steps > 0) {
    pairs = price_pass(true);
    double largest = 0.0;  // suffix now holds L(first), each column's largest cost
    for (double x : suffix) largest = std::max(largest, x);
    tolerance = 1e-13 * std::max(1.0, largest);
    for (;;) {
      ra.solve();
      ++out.rounds;
      if (o.on_round) o.on_round(out.rounds, pairs);
      const long long added = price_pass(false);
      if (added == 0) break;
      pairs += added;
    }
  }
  out.pairs = pairs;
  out.work = ra.augmentations();
  out.col_of = ra.matching();
  out.row_potential = ra.row_potentials();
  return out;
}

}  // namespace detail

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
  detail::schedule_from_assignment(n, budget, cg.col_of, cg.row_potential, sol);
  const ScheduleCheck check = evaluate_schedule(w, budget, recent, sol.end, sol.price, o.threads);
  ++sol.passes;
  sol.value = check.value;
  sol.upper = check.upper;
  return sol;
}

}  // namespace kvo

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
#include <bit>
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

// The tentative distances of the columns a Dijkstra has reached and not settled, as a tournament
// tree: each node holds the lowest key below it (ties: the lowest column, the left child), so the
// lowest is read at the root, and a key that falls or leaves climbs only while it changes a node's
// winner: O(log columns) per change.
class KeyMinima {
 public:
  static constexpr double inf = std::numeric_limits<double>::infinity();
  void reset(size_t n) {
    leaves_ = std::bit_ceil(std::max<size_t>(n, 1));
    key_.assign(2 * leaves_, inf);
    col_.resize(2 * leaves_);
    for (size_t j = 0; j < leaves_; ++j) col_[leaves_ + j] = static_cast<int>(j);
    for (size_t p = leaves_ - 1; p >= 1; --p) col_[p] = col_[2 * p];
  }
  void lower(size_t j, double d) {  // d below the column's key
    const int c = static_cast<int>(j);
    size_t p = leaves_ + j;
    key_[p] = d;
    for (p /= 2; p >= 1 && (d < key_[p] || (d == key_[p] && c < col_[p])); p /= 2) key_[p] = d, col_[p] = c;
  }
  // The column with the lowest key; kvo::Error when every key is infinite (no column reached).
  size_t lowest() const {
    require(key_[1] < inf, "offline column generation: no augmenting path (a bug)");
    return static_cast<size_t>(col_[1]);
  }
  void remove(size_t j) { raise(j); }  // the column settles: its key leaves, the winners above it follow
  void recompute() {                   // after keys were cleared directly
    for (size_t p = leaves_ - 1; p >= 1; --p) play(p);
  }
  void clear(size_t j) { key_[leaves_ + j] = inf; }  // the key alone (recompute() follows)
  void forget(size_t j) { raise(j); }                // after a Dijkstra: every reached column's key back to infinity

 private:
  // The key of column j goes to infinity; a node whose winner was j plays again from its children
  // (a node won by another column keeps it, and so does every node above it).
  void raise(size_t j) {
    const int c = static_cast<int>(j);
    size_t p = leaves_ + j;
    key_[p] = inf;
    for (p /= 2; p >= 1 && col_[p] == c; p /= 2) play(p);
  }
  void play(size_t p) {  // the lower of the children's keys; ties: the left child, whose columns are lower
    const size_t w = key_[2 * p + 1] < key_[2 * p] ? 2 * p + 1 : 2 * p;
    key_[p] = key_[w];
    col_[p] = col_[w];
  }
  size_t leaves_ = 1;
  std::vector<double> key_;  // nodes 1 .. 2 leaves_ - 1; column j's leaf is leaves_ + j
  std::vector<int> col_;     // each node's winning column
};

// The restricted assignment: rows = eviction steps, columns = tokens, each row's candidate list.
// solve() matches the rows from scratch: rows in time order, each by a shortest augmenting path
// (Dijkstra on reduced costs c - u_t - v_j, which stay >= 0 on every listed pair, tight on matched
// ones; v_j <= 0, and 0 on unmatched columns). resolve() starts from the last solution instead
// (docs/oracle.md §3d): the unmatched columns are one more row E of capacity h with cost 0 on every
// column (their potential is E's, 0), which makes the problem square; a row whose list changed
// takes the largest potential its list allows, gives up its column unless that pair is still tight,
// and is matched again by a shortest path that may pass through E (E gives up one column and takes
// the freed one).
class RestrictedAssignment {
 public:
  // `steps` lists, each shared by `per` interchangeable rows (the H slots a shared step frees).
  RestrictedAssignment(int steps, int cols, int per)
      : lists_(static_cast<size_t>(steps)),
        dirty_(static_cast<size_t>(steps), 0),
        cols_(static_cast<size_t>(cols)),
        per_(static_cast<size_t>(per)) {}

  const std::vector<Candidate>& list(int step) const { return lists_[static_cast<size_t>(step)]; }
  std::vector<Candidate>& list_for_update(int step) {
    dirty_[static_cast<size_t>(step)] = 1;
    return lists_[static_cast<size_t>(step)];
  }
  // The largest potential of the step's rows: a pair that prices out against it does against all.
  double step_potential(int step) const {
    const auto first = u_.begin() + static_cast<long>(static_cast<size_t>(step) * per_);
    return *std::max_element(first, first + static_cast<long>(per_));
  }
  double v(int col) const { return v_[static_cast<size_t>(col)]; }
  const std::vector<double>& column_potentials() const { return v_; }
  const std::vector<int>& matching() const { return col_of_; }  // the token each step evicts
  const std::vector<double>& row_potentials() const { return u_; }
  long long augmentations() const { return augmentations_; }
  void add(int step, Candidate c) {
    lists_[static_cast<size_t>(step)].push_back(c);
    dirty_[static_cast<size_t>(step)] = 1;
  }

  // The restricted optimum: the cost of every row's pair (after a solve).
  double value() const {
    double sum = 0.0;
    for (size_t row = 0; row < col_of_.size(); ++row)
      for (const Candidate& c : lists_[row / per_])
        if (c.token == col_of_[row]) sum += c.cost;
    return sum;
  }
  // Keeps in each step's list only its `keep` pairs of lowest reduced cost, with the pairs its rows
  // hold and those `protect(step, token)` names (after a solve, so every pair dropped prices >= 0
  // and the solution stays optimal). Returns how many pairs it dropped.
  template <class Protect>
  long long prune(size_t keep, Protect protect) {
    long long dropped = 0;
    std::vector<std::pair<double, size_t>> order;
    std::vector<Candidate> kept;
    for (size_t s = 0; s < lists_.size(); ++s) {
      std::vector<Candidate>& list = lists_[s];
      if (list.size() <= keep) continue;
      const double us = step_potential(static_cast<int>(s));
      order.clear();
      for (size_t x = 0; x < list.size(); ++x) {
        const Candidate& c = list[x];
        bool always = protect(static_cast<int>(s), c.token);
        for (size_t row = s * per_; row < (s + 1) * per_; ++row) always = always || col_of_[row] == c.token;
        order.push_back({always ? -inf_ : c.cost - us - v_[static_cast<size_t>(c.token)], x});
      }
      std::nth_element(order.begin(), order.begin() + static_cast<long>(keep), order.end());
      kept.clear();
      for (size_t x = 0; x < order.size(); ++x)
        if (x < keep || order[x].first == -inf_) kept.push_back(list[order[x].second]);
      dropped += static_cast<long long>(list.size() - kept.size());
      list.swap(kept);
    }
    return dropped;
  }

  void solve() {
    const size_t R = lists_.size() * per_, C = cols_;
    u_.assign(R + 1, 0.0);  // the last is E's (resolve)
    v_.assign(C, 0.0);
    col_of_.assign(R, -1);
    row_of_.assign(C, kCovered);
    keys_.reset(C);
    dist_.assign(C, inf_);
    pred_.assign(C, -1);
    settled_.assign(C, 0);
    const long long before = settles_;
    for (size_t row = 0; row < R; ++row) augment(static_cast<int>(row), false);
    scratch_settles_ = settles_ - before;
    u_.pop_back();
    std::fill(dirty_.begin(), dirty_.end(), 0);
  }

  // Re-solves after pairs were added or costs changed since the last solve. When more than
  // `max_share` of the rows lose their column, it solves from scratch, or with `capped`, first tries
  // warm and gives up for a scratch solve once the warm Dijkstras have settled more columns than
  // the last scratch solve did (real heads: warm 4-10x cheaper; synthetic ones: warm dearer). A row keeps its column
  // while that pair's reduced cost stays within `tight` of the row's lowest (0: exactly tight; a looser test lets the
  // rounds settle on another vertex within the tolerance).
  void resolve(double max_share, double tight, bool capped) {
    const size_t R = lists_.size() * per_;
    if (col_of_.size() != R) return solve();
    std::vector<int> freed;
    for (size_t s = 0; s < lists_.size(); ++s) {
      if (!dirty_[s]) continue;
      double lowest = inf_;
      for (const Candidate& c : lists_[s]) lowest = std::min(lowest, c.cost - v_[static_cast<size_t>(c.token)]);
      for (size_t row = s * per_; row < (s + 1) * per_; ++row) {
        const int col = col_of_[row];
        const auto held =
            std::find_if(lists_[s].begin(), lists_[s].end(), [&](const Candidate& c) { return c.token == col; });
        u_[row] = lowest;
        if (held->cost - v_[static_cast<size_t>(col)] - lowest > tight) {
          row_of_[static_cast<size_t>(col)] = kFree;
          col_of_[row] = -1;
          freed.push_back(static_cast<int>(row));
        }
      }
    }
    const bool crowded = static_cast<double>(freed.size()) > max_share * static_cast<double>(R);
    if (crowded && !capped) return solve();
    std::fill(dirty_.begin(), dirty_.end(), 0);
    if (freed.empty()) return;
    u_.push_back(0.0);  // E's potential
    const long long cap = crowded ? settles_ + scratch_settles_ : std::numeric_limits<long long>::max();
    for (int row : freed) {
      augment(row, true);
      if (settles_ > cap) return solve();  // every field is rebuilt from the lists
    }
    const double shift = u_.back();  // back to E's potential 0 (u + v on every pair is unchanged)
    u_.pop_back();
    for (double& x : u_) x -= shift;
    for (double& x : v_) x += shift;
  }

 private:
  static constexpr int kCovered = -1;  // a column no row holds (held by E in resolve)
  static constexpr int kFree = -2;     // a column resolve took from its row

  // Dijkstra from `cur` until a column it may take is settled: one no row holds (solve), or one a
  // row gave up (warm: resolve, where reaching any column E holds reaches E, which then offers every
  // other column at cost 0). The lowest key goes first (ties: the lowest token), found through
  // KeyMinima.
  void augment(int cur, bool warm) {
    touched_.clear();
    settled_cols_.clear();
    rows_seen_.clear();
    const int E = static_cast<int>(col_of_.size());
    double reach = 0.0;  // distance to the row being scanned
    int i = cur, sink = -1, entry = -1;
    // A settled column is never relaxed again: its distance is at most `reach`, and so at most d.
    auto relax = [&](size_t j, double d, int from) {
      if (d < dist_[j]) {
        if (dist_[j] == inf_) touched_.push_back(static_cast<int>(j));
        dist_[j] = d;
        keys_.lower(j, d);
        pred_[j] = from;
      }
    };
    while (sink < 0) {
      rows_seen_.push_back(i);
      if (i == E) {  // every column E does not hold, at its reduced cost -u_E - v_j
        for (size_t j = 0; j < cols_; ++j)
          if (row_of_[j] != kCovered) relax(j, std::max(reach - u_[static_cast<size_t>(E)] - v_[j], reach), E);
      } else {
        const double base = reach - u_[static_cast<size_t>(i)];
        for (const Candidate& c : lists_[per_ == 1 ? static_cast<size_t>(i) : static_cast<size_t>(i) / per_]) {
          const size_t j = static_cast<size_t>(c.token);
          relax(j, std::max(base + c.cost - v_[j], reach), i);  // reduced costs are >= 0 up to rounding
        }
      }
      const size_t pick = keys_.lowest();
      keys_.remove(pick);
      settled_[pick] = 1;
      settled_cols_.push_back(static_cast<int>(pick));
      reach = dist_[pick];
      const int holder = row_of_[pick];
      if (holder >= 0) {
        i = holder;
      } else if (!warm || holder == kFree) {
        sink = static_cast<int>(pick);
      } else {  // E reached through `pick`: each column E holds is reached at the same distance
        entry = static_cast<int>(pick);
        for (size_t j = 0; j < cols_; ++j)
          if (row_of_[j] == kCovered && !settled_[j]) {
            if (dist_[j] == inf_) touched_.push_back(static_cast<int>(j));
            dist_[j] = reach;
            keys_.clear(j);
            settled_[j] = 1;
            settled_cols_.push_back(static_cast<int>(j));
          }
        keys_.recompute();
        i = E;
      }
    }
    // Potentials: the new row's grows by the path length, every other row reached (E through its
    // entry column) by how much shorter its path was, each settled column's falls by the same.
    u_[static_cast<size_t>(cur)] += reach;
    for (int x : rows_seen_) {
      if (x == cur) continue;
      const int held = x == E ? entry : col_of_[static_cast<size_t>(x)];
      u_[static_cast<size_t>(x)] += reach - dist_[static_cast<size_t>(held)];
    }
    for (int j : settled_cols_) v_[static_cast<size_t>(j)] -= reach - dist_[static_cast<size_t>(j)];
    // Flip the path; through E, the column reached from E joins it and E's entry column leaves.
    for (int j = sink;;) {
      const int x = pred_[static_cast<size_t>(j)];
      if (x == E) {
        row_of_[static_cast<size_t>(j)] = kCovered;
        j = entry;
        continue;
      }
      row_of_[static_cast<size_t>(j)] = x;
      std::swap(col_of_[static_cast<size_t>(x)], j);
      if (x == cur) break;
    }
    for (int j : settled_cols_) settled_[static_cast<size_t>(j)] = 0;
    for (int j : touched_) {
      dist_[static_cast<size_t>(j)] = inf_;
      keys_.forget(static_cast<size_t>(j));
    }
    ++augmentations_;
    settles_ += static_cast<long long>(settled_cols_.size());
  }

  static constexpr double inf_ = std::numeric_limits<double>::infinity();
  std::vector<std::vector<Candidate>> lists_;
  std::vector<char> dirty_;  // per step: pairs added or costs changed since the last solve
  size_t cols_, per_;
  std::vector<double> u_, v_;
  std::vector<int> col_of_, row_of_;
  KeyMinima keys_;
  std::vector<double> dist_;
  std::vector<int> pred_, touched_, settled_cols_, rows_seen_;
  std::vector<char> settled_;
  long long augmentations_ = 0;
  long long settles_ = 0, scratch_settles_ = 0;  // columns settled by every Dijkstra; by the last solve()
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
  // listed[x] == the stamp of the step being priced when that step's list names column x (a new
  // stamp per visit: pruning drops pairs, so an older visit's marks say nothing).
  std::vector<long long> listed(cols, -1);
  long long stamp = 0;
  auto mark_listed = [&](int step) {
    ++stamp;
    for (const Candidate& x : ra.list(step)) listed[static_cast<size_t>(x.token)] = stamp;
    return stamp;
  };
  std::vector<std::pair<double, int>> pool;
  struct Best {  // a column's most negative pair of the pass
    double reduced = 0.0;
    int step = -1;
    double cost = 0.0;
  };
  std::vector<Best> col_best(cols);
  double tolerance = 0.0, largest = 0.0;  // largest: the largest cost, L_j(first) over j
  const size_t c = static_cast<size_t>(o.candidates) * static_cast<size_t>(H);
  auto arrived_at = [&](int t) { return static_cast<size_t>(t - r + 1) * static_cast<size_t>(H); };
  // The cost table (docs/oracle.md §3d): the pairs' L_j(t) rounded to float, filled by the first
  // pass, on every `stride`-th step (the last step of each stride and the last step). A step reads
  // the row of the next such step: L only falls along a column (the rows are not negative), so
  // that row bounds the step's costs from below. stride: options.table_stride, or the smallest
  // whose rows fit in the memory the options allow.
  std::vector<size_t> table_offset;
  std::vector<float> table;
  int stride = 1;
  auto checkpoint = [&](int step) { return std::min(steps - 1, step / stride * stride + stride - 1); };
  // The floats of a table on every `every`-th step: the columns arrived by each kept step.
  auto table_floats = [&](int every) {
    double floats = 0.0;
    for (int kept = std::min(every, steps) - 1;; kept = std::min(kept + every, steps - 1)) {
      floats += static_cast<double>(arrived_at(first + kept));
      if (kept == steps - 1) return floats;
    }
  };
  const double table_cap =
      std::min(static_cast<double>(o.table_bytes), o.table_bytes_per_slot > 0.0
                                                       ? o.table_bytes_per_slot * static_cast<double>(cols) * budget
                                                       : std::numeric_limits<double>::infinity());
  auto fits = [&](int every) { return table_floats(every) * sizeof(float) <= table_cap; };
  if (steps > 0 && table_cap > 0.0) {
    stride = std::min(o.table_stride > 0 ? o.table_stride : 1, steps);
    if (o.table_stride <= 0)  // strides 1..8, then doubling, up to one row
      while (!fits(stride) && stride < steps) stride = std::min(stride < 8 ? stride + 1 : stride * 2, steps);
    if (fits(stride)) {
      const int rows = (steps + stride - 1) / stride;
      table_offset.assign(static_cast<size_t>(rows) + 1, 0);
      for (int x = 0; x < rows; ++x)
        table_offset[static_cast<size_t>(x) + 1] =
            table_offset[static_cast<size_t>(x)] + arrived_at(first + checkpoint(x * stride));
      table.resize(table_offset.back());
    }
  }
  auto table_row = [&](int step) { return table.data() + table_offset[static_cast<size_t>(step / stride)]; };
  // Lists the (at most c) lowest-keyed columns of `pool` at step t with their costs; returns how many.
  auto list_lowest = [&](int t, auto cost) {
    const size_t take = std::min(c, pool.size());
    std::partial_sort(pool.begin(), pool.begin() + static_cast<long>(take), pool.end());
    for (size_t x = 0; x < take; ++x) {
      const int col = pool[x].second;
      ra.add(t - first, {col, cost(static_cast<size_t>(col))});
    }
    return static_cast<long long>(take);
  };
  // Table rounds screen blocks of columns first with a float test that vectorises: could a pair of
  // the block price below the pool's threshold or its column's best so far, and below zero? The test
  // is loose by 2^-20 of the magnitudes involved (L + |v|, |u_t|, the thresholds; its own rounding
  // is below 2^-22 of them), so it never skips a pair the exact test would take, nor one
  // table_certifies must see; most blocks hold none once the first rounds are over.
  constexpr size_t kScreen = 64;
  std::vector<float> v_float, best_float(cols, 0.0f);  // v and col_best[x].reduced, as floats
  auto refresh_screen = [&]() {
    const std::vector<double>& v = ra.column_potentials();
    v_float.assign(v.begin(), v.end());
  };
  // threshold: a pair must price at or below it too (+infinity: no pool threshold); best = false
  // (table_certifies) leaves out the columns' bests and asks only for a price below zero.
  auto screen_table = [&](const float* L, size_t from, size_t to, double ut, double threshold, bool best) {
    const float u = static_cast<float>(ut), slack = static_cast<float>(-tolerance),
                pool_below = static_cast<float>(threshold),
                loose = static_cast<float>(0x1p-20 *
                                           (std::abs(ut) + (std::isfinite(threshold) ? std::abs(threshold) : 0.0))) +
                        1e-30f;
    int hit = 0;
    if (best) {
      for (size_t x = from; x < to; ++x) {
        const float bound =
            u + std::min(slack, std::max(pool_below, best_float[x])) + loose + 0x1p-20f * std::abs(best_float[x]);
        hit |= (L[x] - v_float[x]) - 0x1p-20f * (L[x] + std::abs(v_float[x])) < bound;
      }
    } else {
      for (size_t x = from; x < to; ++x)
        hit |= (L[x] - v_float[x]) - 0x1p-20f * (L[x] + std::abs(v_float[x])) < u + slack + loose;
    }
    return hit != 0;
  };
  // Prices step t's unlisted pairs (cost(x) = L_x(t)) against the restricted potentials: the (at
  // most c) most negative join its list, and each column remembers its most negative pair (a
  // column's pairs otherwise crowd out of every step's few). Pairs within `relative_slack * cost`
  // above zero count as negative (the last exact pass lists the nearly tight pairs the table cannot
  // judge). The pool keeps its c lowest once it reaches 4c, and from then on takes only pairs at or
  // below the c-th. `screen(from, to, ut, threshold)` may skip a block none of whose pairs could be
  // taken. Returns how many pairs it listed and whether (> 0) any priced below -tolerance.
  auto price_step = [&](int t, auto cost, double relative_slack, auto screen) {
    const int step = t - first;
    const size_t arrived = arrived_at(t);
    const long long here = mark_listed(step);
    pool.clear();
    double threshold = std::numeric_limits<double>::infinity();
    const double ut = ra.step_potential(step);
    const std::vector<double>& v = ra.column_potentials();
    long long negative = 0;
    for (size_t from = 0; from < arrived; from += kScreen) {
      const size_t to = std::min(arrived, from + kScreen);
      if (!screen(from, to, ut, threshold)) continue;
      for (size_t x = from; x < to; ++x) {
        const double cx = cost(x), reduced = cx - ut - v[x];
        if (reduced < relative_slack * cx - tolerance && listed[x] != here) {
          if (reduced < -tolerance) ++negative;
          if (reduced <= threshold) {
            pool.push_back({reduced, static_cast<int>(x)});
            if (pool.size() >= 4 * c) {
              std::nth_element(pool.begin(), pool.begin() + static_cast<long>(c - 1), pool.end());
              pool.resize(c);
              threshold = pool[c - 1].first;
            }
          }
          auto& b = col_best[x];
          if (reduced < b.reduced) {
            b = {reduced, t, cx};
            best_float[x] = static_cast<float>(reduced);
          }
        }
      }
    }
    return std::pair<long long, long long>{list_lowest(t, cost), negative};
  };
  // Each column's best pair of the pass joins its step's list unless listed there already.
  auto add_column_bests = [&]() {
    long long added = 0;
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
      best_float[x] = 0.0f;
    }
    return added;
  };
  struct PassResult {
    long long added = 0, negative = 0;
  };
  // One backwards pass over the rows: the exact suffix sums L(t) of every unit's row. seed: list
  // the newcomers and the c cheapest pairs per step and fill the table; otherwise price every pair
  // exactly (refresh: first set every listed pair's cost to its exact L, replacing the table's).
  auto exact_pass = [&](bool seed, bool refresh, double relative_slack) {
    std::fill(suffix.begin(), suffix.end(), 0.0);
    PassResult res;
    auto exact = [&](size_t x) { return suffix[x]; };
    for_each_unit_row(units, first, n, true, o.threads, [&](int t, int u, std::span<const double> row) {
      const int width = t - r + 1;
      for (int j = 0; j < width; ++j)
        suffix[static_cast<size_t>(j) * static_cast<size_t>(H) + static_cast<size_t>(u)] += row[static_cast<size_t>(j)];
      if (u + 1 < H) return;  // the step is priced once every unit's row is in
      const int step = t - first;
      const size_t arrived = arrived_at(t), newcomers = arrived - static_cast<size_t>(H);
      if (!table.empty() && seed && checkpoint(step) == step) {
        float* dst = table_row(step);
        for (size_t x = 0; x < arrived; ++x) dst[x] = static_cast<float>(suffix[x]);
      }
      if (refresh)
        for (Candidate& x : ra.list_for_update(step)) x.cost = suffix[static_cast<size_t>(x.token)];
      if (!seed) {
        const auto [added, negative] =
            price_step(t, exact, relative_slack, [](size_t, size_t, double, double) { return true; });
        res.added += added;
        res.negative += negative;
        return;
      }
      pool.clear();
      for (size_t x = newcomers; x < arrived; ++x) {  // the newcomers keep every restricted problem feasible
        ra.add(step, {static_cast<int>(x), suffix[x]});
        ++res.added;
      }
      for (size_t x = 0; x < newcomers; ++x) pool.push_back({suffix[x], static_cast<int>(x)});
      res.added += list_lowest(t, exact);
    });
    if (!seed) res.added += add_column_bests();
    ++out.passes;
    return res;
  };
  // A pricing round on the table instead of the rows (steps in the same backwards order); its
  // pairs carry the table's costs until the next exact pass refreshes them.
  auto table_pass = [&]() {
    PassResult res;
    refresh_screen();
    for (int t = n - 1; t >= first; --t) {
      const float* L = table_row(t - first);
      const auto [added, negative] = price_step(
          t, [&](size_t x) { return static_cast<double>(L[x]); }, 0.0,
          [&](size_t from, size_t to, double ut, double threshold) {
            return screen_table(L, from, to, ut, threshold, true);
          });
      res.added += added;
      res.negative += negative;
    }
    res.added += add_column_bests();
    return res;
  };
  // Whether the table proves the restricted potentials feasible for every unlisted pair: a float
  // L_f of an exact L satisfies L >= L_f - (2^-22 L_f + 2^-126) (round to nearest, with room for the
  // double arithmetic), and L at a step is at least L at its checkpoint, so a pair whose bound
  // prices at >= -tolerance needs no exact look.
  auto table_certifies = [&]() {
    const std::vector<double>& v = ra.column_potentials();
    refresh_screen();
    for (int t = first; t < n; ++t) {
      const int step = t - first;
      const float* L = table_row(step);
      const long long here = mark_listed(step);
      const double ut = ra.step_potential(step);
      const size_t arrived = arrived_at(t);
      for (size_t from = 0; from < arrived; from += kScreen) {
        const size_t to = std::min(arrived, from + kScreen);
        if (!screen_table(L, from, to, ut, std::numeric_limits<double>::infinity(), false)) continue;
        for (size_t x = from; x < to; ++x) {
          const double lf = static_cast<double>(L[x]);
          if (lf - (0x1p-22 * lf + 0x1p-126) - ut - v[x] < -tolerance && listed[x] != here) return false;
        }
      }
    }
    return true;
  };
  // Seeds each step's list with the c cheapest columns, by the table, of the cache that a greedy
  // schedule holds at that step: the schedule that evicts at each step the H columns it holds
  // whose cost L(t) is lowest (ties: the lowest column). Those pairs are a feasible assignment and
  // its nearest alternatives, where the globally cheapest pairs repeat the same few columns at every step.
  auto greedy_seed = [&]() {
    long long added = 0;
    std::vector<int> held;  // arrived columns the greedy schedule has not evicted
    for (int t = first; t < n; ++t) {
      const int step = t - first;
      const float* L = table_row(step);
      for (size_t x = t == first ? 0 : arrived_at(t - 1); x < arrived_at(t); ++x) held.push_back(static_cast<int>(x));
      const long long here = mark_listed(step);
      pool.clear();
      for (int x : held) pool.push_back({static_cast<double>(L[x]), x});
      const size_t take = std::min(c, pool.size());  // c >= H: the H evicted are listed
      std::partial_sort(pool.begin(), pool.begin() + static_cast<long>(take), pool.end());
      for (size_t x = 0; x < take; ++x)
        if (listed[static_cast<size_t>(pool[x].second)] != here) {
          ra.add(step, {pool[x].second, pool[x].first});
          ++added;
        }
      held.clear();
      for (size_t x = static_cast<size_t>(H); x < pool.size(); ++x) held.push_back(pool[x].second);
    }
    return added;
  };
  long long pairs = 0;
  // Re-solves match again only the rows whose lists changed, unless more than this share of them
  // must (a crowded round): then they solve from scratch, or, from the schedule seed, try warm first
  // up to the last scratch solve's work (docs/oracle.md §3d).
  constexpr double kWarmShare = 0.9;
  bool capped_warm = false;
  // After a solve whose value fell since the last pruning, each step keeps only its o.keep pairs
  // of lowest reduced cost (and its newcomers and held pairs): the Dijkstras of later solves scan
  // shorter lists. The value falls strictly between two prunings, so a pruned problem never
  // recurs and the rounds end.
  double pruned_at = std::numeric_limits<double>::infinity();
  auto newcomer = [&](int step, int col) {
    return static_cast<size_t>(col) >= arrived_at(first + step) - static_cast<size_t>(H);
  };
  auto solve = [&](bool may_prune) {
    ra.resolve(kWarmShare, 0.0, capped_warm);
    ++out.rounds;
    if (may_prune && o.keep > 0) {
      const double value = ra.value();
      if (value < pruned_at - tolerance) {
        pairs -= ra.prune(static_cast<size_t>(o.keep) * static_cast<size_t>(H), newcomer);
        pruned_at = value;
      }
    }
    if (o.on_round) o.on_round(out.rounds, pairs);
  };
  if (steps > 0) {
    pairs = exact_pass(true, false, 0.0).added;
    for (double x : suffix)  // suffix now holds L(first), each column's largest cost
      largest = std::max(largest, x);
    tolerance = 1e-16 * std::max(1.0, largest);
    if (largest > 1e30) {  // beyond what a float table can bound: price on the rows
      table.clear();
      table.shrink_to_fit();
    }
    if (!table.empty() && o.schedule_seed) {
      pairs += greedy_seed();
      capped_warm = true;
    }
    if (table.empty()) {
      for (;;) {  // price on recomputed rows until no pair prices below -tolerance
        solve(true);
        const PassResult p = exact_pass(false, false, 0.0);
        if (p.added == 0) break;
        pairs += p.added;
      }
    } else {
      for (;;) {  // rounds on the table until it finds no negative pair
        solve(true);
        const PassResult p = table_pass();
        if (p.negative == 0) break;
        pairs += p.added;
      }
      // The exact costs of every listed pair, and the pairs the table misjudged or cannot judge;
      // then the table certifies the new potentials, or another exact pass prices every pair.
      bool refreshed = false;
      for (;;) {
        const PassResult p = exact_pass(false, !refreshed, 0x1p-20);
        pairs += p.added;
        if (refreshed && p.negative == 0) break;  // exact pricing proves the current potentials feasible
        refreshed = true;
        solve(false);
        if (table_certifies()) break;
      }
    }
  }
  out.pairs = pairs;
  if (!table.empty()) {
    out.table_stride = stride;
    out.table_bytes = static_cast<long long>(table.size() * sizeof(float));
  }
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

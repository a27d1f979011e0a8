// Internal: the restricted assignment of column generation (docs/oracle.md §3c, §3d): rows are
// eviction steps (each shared by the H interchangeable rows of a shared step), columns are tokens,
// and each step lists a few candidate columns with their costs L_j(t). Solved exactly by shortest
// augmenting paths, from scratch or warm from the last solution; its potentials are what the pricer
// reads. Used by column_generation.hpp; tested alone by tests/oracle/column_generation_test.cpp.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <limits>
#include <utility>
#include <vector>

#include "kvo/core/error.hpp"

namespace kvo::detail {

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

}  // namespace kvo::detail

// Internal: column generation's pricer (docs/oracle.md §3c, §3d): prices a step's unlisted pairs
// against the restricted assignment's potentials and lists the most negative, remembers each
// column's most negative pair of a pass, screens blocks of columns on the cost table with a float
// test that never skips a pair the exact test would take, proves the potentials feasible from the
// table, and seeds the lists. Tested alone by tests/oracle/column_generation_test.cpp.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "cost_table.hpp"
#include "restricted_assignment.hpp"

namespace kvo::detail {

class ColumnPricer {
 public:
  // Blocks of columns the table screen judges at once.
  static constexpr size_t kScreen = 64;

  // `cols` columns; at most `take` pairs (candidates x H) join a step's list per pricing.
  ColumnPricer(size_t cols, size_t take) : take_(take), listed_(cols, -1), best_(cols), best_float_(cols, 0.0f) {}

  // Pairs priced above -tolerance count as non-negative (set once the costs' scale is known).
  void set_tolerance(double tolerance) { tolerance_ = tolerance; }
  double tolerance() const { return tolerance_; }

  // Marks the columns `step` lists (a new stamp per visit: pruning drops pairs, so an older
  // visit's marks say nothing); listed(x, stamp) then tells whether the step lists column x.
  long long mark_listed(const RestrictedAssignment& ra, int step) {
    ++stamp_;
    for (const Candidate& x : ra.list(step)) listed_[static_cast<size_t>(x.token)] = stamp_;
    return stamp_;
  }
  bool listed(size_t col, long long stamp) const { return listed_[col] == stamp; }

  // Lists the (at most `take`) lowest-keyed columns of the pool at `step` with cost(col); returns how many.
  template <class Cost>
  long long list_lowest(RestrictedAssignment& ra, int step, Cost cost) {
    const size_t take = std::min(take_, pool_.size());
    std::partial_sort(pool_.begin(), pool_.begin() + static_cast<long>(take), pool_.end());
    for (size_t x = 0; x < take; ++x) {
      const int col = pool_[x].second;
      ra.add(step, {col, cost(static_cast<size_t>(col))});
    }
    return static_cast<long long>(take);
  }

  // Seeds `step` with every column of [newcomers, arrived) (the pairs that keep every restricted
  // problem feasible) and the `take` cheapest of the columns before them; returns how many.
  template <class Cost>
  long long seed_step(RestrictedAssignment& ra, int step, size_t newcomers, size_t arrived, Cost cost) {
    long long added = 0;
    pool_.clear();
    for (size_t x = newcomers; x < arrived; ++x) {
      ra.add(step, {static_cast<int>(x), cost(x)});
      ++added;
    }
    for (size_t x = 0; x < newcomers; ++x) pool_.push_back({cost(x), static_cast<int>(x)});
    return added + list_lowest(ra, step, cost);
  }

  // The column potentials as floats, for the screen (after every solve that changed them).
  void refresh_screen(const RestrictedAssignment& ra) {
    const std::vector<double>& v = ra.column_potentials();
    v_float_.assign(v.begin(), v.end());
  }

  // Could a pair of columns [from, to) with table costs L price below `threshold` (+infinity: no
  // threshold) and below zero, and (best) below its column's best so far? Loose by 2^-20 of the
  // magnitudes involved (L + |v|, |u_t|, the thresholds; its own rounding is below 2^-22 of them),
  // so it never skips a pair the exact test would take. best = false asks only for a price below zero.
  bool screen_table(const float* L, size_t from, size_t to, double ut, double threshold, bool best) const {
    const float u = static_cast<float>(ut), slack = static_cast<float>(-tolerance_),
                pool_below = static_cast<float>(threshold),
                loose = static_cast<float>(0x1p-20 *
                                           (std::abs(ut) + (std::isfinite(threshold) ? std::abs(threshold) : 0.0))) +
                        1e-30f;
    int hit = 0;
    if (best) {
      for (size_t x = from; x < to; ++x) {
        const float bound =
            u + std::min(slack, std::max(pool_below, best_float_[x])) + loose + 0x1p-20f * std::abs(best_float_[x]);
        hit |= (L[x] - v_float_[x]) - 0x1p-20f * (L[x] + std::abs(v_float_[x])) < bound;
      }
    } else {
      for (size_t x = from; x < to; ++x)
        hit |= (L[x] - v_float_[x]) - 0x1p-20f * (L[x] + std::abs(v_float_[x])) < u + slack + loose;
    }
    return hit != 0;
  }

  // Prices the unlisted pairs of `step` (its first `arrived` columns, cost(x) = L_x(t)) against the
  // restricted potentials: the (at most `take`) most negative join its list, and each column
  // remembers its most negative pair (a column's pairs otherwise crowd out of every step's few).
  // Pairs within `relative_slack * cost` above zero count as negative (the last exact pass lists the
  // nearly tight pairs the table cannot judge). The pool keeps its `take` lowest once it reaches 4
  // take, and from then on takes only pairs at or below the take-th. `screen(from, to, ut,
  // threshold)` may skip a block none of whose pairs could be taken. Returns how many pairs it
  // listed and how many priced below -tolerance.
  template <class Cost, class Screen>
  std::pair<long long, long long> price_step(RestrictedAssignment& ra, int step, size_t arrived, Cost cost,
                                             double relative_slack, Screen screen) {
    const long long here = mark_listed(ra, step);
    pool_.clear();
    double threshold = std::numeric_limits<double>::infinity();
    const double ut = ra.step_potential(step);
    const std::vector<double>& v = ra.column_potentials();
    long long negative = 0;
    for (size_t from = 0; from < arrived; from += kScreen) {
      const size_t to = std::min(arrived, from + kScreen);
      if (!screen(from, to, ut, threshold)) continue;
      for (size_t x = from; x < to; ++x) {
        const double cx = cost(x), reduced = cx - ut - v[x];
        if (reduced < relative_slack * cx - tolerance_ && listed_[x] != here) {
          if (reduced < -tolerance_) ++negative;
          if (reduced <= threshold) {
            pool_.push_back({reduced, static_cast<int>(x)});
            if (pool_.size() >= 4 * take_) {
              std::nth_element(pool_.begin(), pool_.begin() + static_cast<long>(take_ - 1), pool_.end());
              pool_.resize(take_);
              threshold = pool_[take_ - 1].first;
            }
          }
          auto& b = best_[x];
          if (reduced < b.reduced) {
            b = {reduced, step, cx};
            best_float_[x] = static_cast<float>(reduced);
          }
        }
      }
    }
    return {list_lowest(ra, step, cost), negative};
  }

  // Each column's best pair of the pass joins its step's list unless listed there already; the
  // bests are then forgotten. Returns how many joined.
  long long add_column_bests(RestrictedAssignment& ra) {
    long long added = 0;
    for (size_t x = 0; x < best_.size(); ++x) {
      auto& b = best_[x];
      if (b.step >= 0) {
        const auto& list = ra.list(b.step);
        if (std::none_of(list.begin(), list.end(),
                         [&](const Candidate& y) { return y.token == static_cast<int>(x); })) {
          ra.add(b.step, {static_cast<int>(x), b.cost});
          ++added;
        }
      }
      b = {0.0, -1, 0.0};
      best_float_[x] = 0.0f;
    }
    return added;
  }

  // Whether the table proves the restricted potentials feasible for every unlisted pair: a float
  // L_f of an exact L satisfies L >= L_f - (2^-22 L_f + 2^-126) (round to nearest, with room for
  // the double arithmetic), and L at a step is at least L at its checkpoint, so a pair whose bound
  // prices at >= -tolerance needs no exact look.
  bool table_certifies(const RestrictedAssignment& ra, const CostTable& table, int steps,
                       const std::function<size_t(int)>& arrived) {
    const std::vector<double>& v = ra.column_potentials();
    refresh_screen(ra);
    for (int step = 0; step < steps; ++step) {
      const float* L = table.row(step);
      const long long here = mark_listed(ra, step);
      const double ut = ra.step_potential(step);
      const size_t n_arrived = arrived(step);
      for (size_t from = 0; from < n_arrived; from += kScreen) {
        const size_t to = std::min(n_arrived, from + kScreen);
        if (!screen_table(L, from, to, ut, std::numeric_limits<double>::infinity(), false)) continue;
        for (size_t x = from; x < to; ++x) {
          const double lf = static_cast<double>(L[x]);
          if (lf - (0x1p-22 * lf + 0x1p-126) - ut - v[x] < -tolerance_ && listed_[x] != here) return false;
        }
      }
    }
    return true;
  }

  // Seeds each step's list with the `take` cheapest columns, by the table, of the cache that a
  // greedy schedule holds at that step: the schedule that evicts at each step the `per` columns it
  // holds whose cost is lowest (ties: the lowest column). Those pairs are a feasible assignment and
  // its nearest alternatives, where the globally cheapest pairs repeat the same few columns at
  // every step. Returns how many pairs joined.
  long long seed_greedy_schedule(RestrictedAssignment& ra, const CostTable& table, int steps,
                                 const std::function<size_t(int)>& arrived, size_t per) {
    long long added = 0;
    std::vector<int> held;  // arrived columns the greedy schedule has not evicted
    for (int step = 0; step < steps; ++step) {
      const float* L = table.row(step);
      for (size_t x = step == 0 ? 0 : arrived(step - 1); x < arrived(step); ++x) held.push_back(static_cast<int>(x));
      const long long here = mark_listed(ra, step);
      pool_.clear();
      for (int x : held) pool_.push_back({static_cast<double>(L[x]), x});
      const size_t take = std::min(take_, pool_.size());  // take >= per: the evicted are listed
      std::partial_sort(pool_.begin(), pool_.begin() + static_cast<long>(take), pool_.end());
      for (size_t x = 0; x < take; ++x)
        if (listed_[static_cast<size_t>(pool_[x].second)] != here) {
          ra.add(step, {pool_[x].second, pool_[x].first});
          ++added;
        }
      held.clear();
      for (size_t x = per; x < pool_.size(); ++x) held.push_back(pool_[x].second);
    }
    return added;
  }

 private:
  struct Best {  // a column's most negative pair of the pass
    double reduced = 0.0;
    int step = -1;
    double cost = 0.0;
  };
  size_t take_;
  double tolerance_ = 0.0;
  std::vector<std::pair<double, int>> pool_;
  std::vector<long long> listed_;
  long long stamp_ = 0;
  std::vector<Best> best_;
  std::vector<float> v_float_, best_float_;  // v and best_[x].reduced, as floats
};

}  // namespace kvo::detail

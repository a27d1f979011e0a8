// A nested schedule's value and its dual certificate in one pass over the rows (docs/oracle.md §4):
// per token, the window reward, the heavy gain up to its end, and mu_j = max_e (R_j(e) - paid).
#include <algorithm>
#include <cmath>
#include <string>

#include "kvo/core/error.hpp"
#include "kvo/oracle/offline_streaming.hpp"

namespace kvo {

void validate_offline_sizes(int n, int budget, int recent) {
  require(n >= 1, "offline problem: w must be a non-empty square matrix");
  require(recent >= 0 && recent <= budget && budget <= n,
          "offline problem: need 0 <= recent <= budget <= n (got recent " + std::to_string(recent) + ", budget " +
              std::to_string(budget) + ", n " + std::to_string(n) + ")");
}

ScheduleEvaluator::ScheduleEvaluator(int n, int budget, int recent, std::vector<int> end, std::vector<double> price,
                                     int heavy_capacity)
    : n_(n), h_(budget - recent), r_(recent), end_(std::move(end)), price_(std::move(price)) {
  const int capacity = heavy_capacity < 0 ? h_ : heavy_capacity;
  validate_offline_sizes(n, budget, recent);
  require(static_cast<int>(end_.size()) == n && static_cast<int>(price_.size()) == n,
          "certificate: the schedule or the prices have the wrong length");
  // Primal feasibility: ends in range, the window kept, at most h heavy tokens per step.
  std::vector<int> change(static_cast<size_t>(n) + 1, 0);
  for (int j = 0; j < n; ++j) {
    const int arrival = j + r_, e = end_[static_cast<size_t>(j)];
    require(e >= std::min(arrival - 1, n - 1) && e <= n - 1,
            "certificate: token " + std::to_string(j) + " has an end outside its window..n");
    if (arrival <= e) {
      ++change[static_cast<size_t>(arrival)];
      --change[static_cast<size_t>(e) + 1];
    }
  }
  for (int i = 0, heavy = 0; i < n; ++i) {
    heavy += change[static_cast<size_t>(i)];
    require(heavy <= capacity, "certificate: step " + std::to_string(i) + " holds more than the heavy budget");
  }
  for (double p : price_) require(p >= 0.0 && std::isfinite(p), "certificate: a dual price is negative");
  for (auto* v : {&window_, &gain_, &kept_gain_, &paid_, &mu_}) v->assign(static_cast<size_t>(n), 0.0);
}

void ScheduleEvaluator::add(int i, std::span<const double> row) {
  for (int j = std::max(0, i - r_ + 1); j <= i; ++j) window_[static_cast<size_t>(j)] += row[static_cast<size_t>(j)];
  const double price = price_[static_cast<size_t>(i)];
  for (int j = 0; j <= i - r_; ++j) {  // tokens in the heavy pool's range: arrival j + r <= i
    const size_t t = static_cast<size_t>(j);
    gain_[t] += row[t];
    paid_[t] += price;
    mu_[t] = std::max(mu_[t], gain_[t] - paid_[t]);
    if (i <= end_[t]) kept_gain_[t] = gain_[t];
  }
}

double ScheduleEvaluator::window() const {
  double total = 0.0;
  for (double x : window_) total += x;
  return total;
}

double ScheduleEvaluator::value() const {
  double v = window();
  for (double g : kept_gain_) v += g;
  return v;
}

double ScheduleEvaluator::upper() const {
  double dual = window();
  for (double p : price_) dual += h_ * p;
  for (double m : mu_) dual += m;
  return dual;
}

double ScheduleEvaluator::token_dual() const {
  double dual = window();
  for (double m : mu_) dual += m;
  return dual;
}

ScheduleCheck evaluate_schedule(const WeightRows& w, int budget, int recent, const std::vector<int>& end,
                                const std::vector<double>& price, int threads) {
  ScheduleEvaluator ev(w.n(), budget, recent, end, price);
  for_each_row(w, 0, w.n(), false, threads, [&](int i, std::span<const double> row) { ev.add(i, row); });
  return {ev.value(), ev.upper()};
}

}  // namespace kvo

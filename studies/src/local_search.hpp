// The seeded local search both worst-case searches run (docs/worst-cases.md): restarts from random
// starts, each followed by one random move at a time, kept when it is no better for the policy (the
// value does not rise), with the move's size adapted by the one-fifth rule.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "kvo/studies/worst_case.hpp"

namespace kvo::studies::detail {

template <class State>
struct LocalSearch {
  std::function<State(std::mt19937_64&)> start;
  // A neighbour of the state; sigma is the move's size (a share of the space's radius).
  std::function<State(const State&, double sigma, std::mt19937_64&)> move;
  std::function<double(const State&)> evaluate;  // the value to push down
  // Whether a value is a candidate at all (an instance outside the searched set is evaluated, so the
  // search can walk back into it, but never reported); every value counts when unset.
  std::function<bool(double)> admissible;
};

template <class State>
struct SearchOutcome {
  State best;
  bool found = false;              // some admissible instance was evaluated
  double worst = INFINITY;         // the lowest admissible value
  double random_worst = INFINITY;  // the lowest admissible value among the random starts
  long found_at = 0, evaluated = 0, admissible = 0;
  std::vector<SearchPoint> curve;  // every improvement, then the last evaluation
};

template <class State>
SearchOutcome<State> local_search(const LocalSearch<State>& s, int restarts, long evaluations, std::uint64_t seed,
                                  const std::function<void()>& on_tick) {
  SearchOutcome<State> out;
  std::mt19937_64 g(seed);
  auto ok = [&](double v) { return !s.admissible || s.admissible(v); };
  auto evaluate = [&](const State& x) {
    const double v = s.evaluate(x);
    ++out.evaluated;
    if (on_tick) on_tick();
    if (ok(v)) {
      ++out.admissible;
      if (v < out.worst) {
        out.worst = v;
        out.found = true;
        out.found_at = out.evaluated;
        out.best = x;
        out.curve.push_back({out.evaluated, v});
      }
    }
    return v;
  };
  for (int r = 0; r < restarts; ++r) {
    const long budget = evaluations / restarts + (r < evaluations % restarts ? 1 : 0);
    State x = s.start(g);
    double current = evaluate(x);
    if (ok(current)) out.random_worst = std::min(out.random_worst, current);
    double sigma = 0.5;
    for (long e = 1; e < budget; ++e) {
      State y = s.move(x, sigma, g);
      const double v = evaluate(y);
      if (v <= current) {
        current = v;
        x = std::move(y);
        sigma = std::min(2.0, sigma * 1.5);
      } else {
        sigma = std::max(0.01, sigma * 0.9);
      }
    }
  }
  if (out.found) out.curve.push_back({out.evaluated, out.worst});
  return out;
}

}  // namespace kvo::studies::detail

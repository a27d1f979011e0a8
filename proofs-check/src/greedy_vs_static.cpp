#include "kvo/checks/greedy_vs_static.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/parallel.hpp"
#include "kvo/oracle/static_oracle.hpp"

namespace kvo {

RatioStats summarize_ratios(const std::vector<double>& rho, int first_step) {
  RatioStats s;
  std::vector<double> v;
  const double line = 1.0 - 1.0 / std::numbers::e;
  double sum = 0.0;
  for (size_t i = static_cast<size_t>(std::max(first_step, 0)); i < rho.size(); ++i) {
    v.push_back(rho[i]);
    sum += rho[i];
    if (s.worst_step < 0 || rho[i] < s.min) {
      s.min = rho[i];
      s.worst_step = static_cast<int>(i);
    }
    if (rho[i] < line) ++s.below_line;
  }
  s.steps = static_cast<int>(v.size());
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  s.median = v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
  s.mean = sum / static_cast<double>(v.size());
  return s;
}

GreedyVsStatic greedy_vs_static(const Trace& trace, const ReplayResult& replay, Concave h, int prompt_len,
                                int threads) {
  GreedyVsStatic out;
  out.policy = replay.policy;
  out.h = h;
  out.heads.resize(replay.heads.size());
  parallel_for(static_cast<int>(replay.heads.size()), threads, [&](int x) {
    const HeadReplay& hr = replay.heads[x];
    HeadRatio& r = out.heads[x];
    r.layer = hr.layer;
    r.head = hr.head;
    r.budget = hr.budget;
    r.mean_retained_mass = hr.mean_retained_mass;
    const HeadView view(trace, hr.layer, hr.head);
    const Eigen::MatrixXd a = dense_attention(view);
    const int n = view.n();
    std::vector<double> acc(static_cast<size_t>(n), 0.0);
    r.rho.assign(static_cast<size_t>(n), 1.0);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j <= i; ++j) acc[j] += a(i, j);
      const auto& kept = hr.steps[static_cast<size_t>(i)].kept;
      require(!kept.empty() || i == 0, "greedy_vs_static needs the replay's kept sets");
      const ModularConcave f(std::vector<double>(acc.begin(), acc.begin() + i + 1), h, "dense-acc");
      const double opt = solve_topk(f, hr.budget.total).value;
      const double got = f.evaluate(kept);
      r.rho[static_cast<size_t>(i)] = opt > 0 ? got / opt : 1.0;
    }
    r.stats = summarize_ratios(r.rho, std::max(hr.budget.total, prompt_len - 1));
  });
  return out;
}

}  // namespace kvo

// C17: attention sparsity (§3.1: entries below 1% of their row maximum) and (alpha, tau, k)-goodness
// of D.33 with the union bound of D.34 over a fixed key prefix; C18: retained mass bounds the
// output error, |o_T - o_full| <= 2 (1 - m_i(T)) max_j |v_j|, for every policy's attended sets.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "head_data.hpp"

namespace kvo::detail {

void check_attention_stats(const HeadData& h, const TraceChecksOptions& o, std::vector<CheckRecord>& out) {
  const int n = h.n;
  const Eigen::MatrixXd a_t = h.a.transpose();  // column i = row i of a, contiguous
  if (check_enabled(o, "C17")) {
    long below = 0, total = 0;
    for (int i = 0; i < n; ++i) {
      const auto row = a_t.col(i).head(i + 1);
      const double mx = row.maxCoeff();
      below += (row.array() < 0.01 * mx).count();
      total += i + 1;
    }
    const double sparsity = static_cast<double>(below) / static_cast<double>(total);
    // Goodness over the key prefix [0, m): D(x_i) = softmax(K_[m] q_i) for the queries i >= m.
    const int m = h.prompt_len > 0 ? h.prompt_len : n / 2;
    std::vector<int> keys(static_cast<size_t>(m));
    std::iota(keys.begin(), keys.end(), 0);
    std::vector<double> lg(keys.size());
    std::vector<int> in_all(static_cast<size_t>(m), 1), in_any(static_cast<size_t>(m), 0);
    std::vector<std::vector<int>> supports;
    for (int i = m; i < n; ++i) {
      h.view->logits(i, keys, lg);
      const double mx = *std::max_element(lg.begin(), lg.end());
      std::vector<int> supp;  // y_j >= 0.01 max y  <=>  logit_j >= max - ln 100
      for (int j = 0; j < m; ++j)
        if (lg[static_cast<size_t>(j)] >= mx + std::log(0.01)) supp.push_back(j);
      std::vector<char> mark(static_cast<size_t>(m), 0);
      for (int j : supp) mark[static_cast<size_t>(j)] = 1, in_any[static_cast<size_t>(j)] = 1;
      for (int j = 0; j < m; ++j) in_all[static_cast<size_t>(j)] &= mark[static_cast<size_t>(j)];
      supports.push_back(std::move(supp));
    }
    const long k0 = std::accumulate(in_all.begin(), in_all.end(), 0L);
    long worst_extra = 0, union_extra = 0;
    for (const auto& s : supports) {
      long extra = 0;
      for (int j : s) extra += in_all[static_cast<size_t>(j)] ? 0 : 1;
      worst_extra = std::max(worst_extra, extra);
    }
    for (int j = 0; j < m; ++j)
      union_extra += (in_any[static_cast<size_t>(j)] && !in_all[static_cast<size_t>(j)]) ? 1 : 0;
    const double alpha = k0 > 0 ? static_cast<double>(worst_extra) / static_cast<double>(k0) : INFINITY;
    auto r = head_record(h, "C17", "sparsity and goodness", ClaimKind::Finding, sparsity > 0.95, sparsity);
    r.detail = {{"sparsity", sparsity},
                {"tau", "0.01 x row max"},
                {"prefix_m", m},
                {"queries", n - m},
                {"k0_intersection", k0},
                {"alpha_hat", k0 > 0 ? nlohmann::json(alpha) : nlohmann::json("inf (empty intersection)")},
                {"union_minus_S0", union_extra}};
    // D.34's union bound |∪ supp \ S0| <= alpha k n holds by construction with the measured alpha
    // (alpha k0 is the largest |supp \ S0|), so it is reported in the detail, not checked.
    out.push_back(std::move(r));
  }
  if (check_enabled(o, "C18") && h.view->has_values()) {
    const int d = h.view->head_dim();
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> V(n, d);
    std::vector<double> vmax(static_cast<size_t>(n));
    for (int j = 0; j < n; ++j) {
      V.row(j) = h.view->value(j).transpose();
      vmax[static_cast<size_t>(j)] = std::max(j ? vmax[static_cast<size_t>(j) - 1] : 0.0, V.row(j).norm());
    }
    const Eigen::MatrixXd full = h.a * V;  // o_full, row i (a is zero above the diagonal)
    for (const auto& run : h.runs) {
      double worst = 0.0;
      long at = -1, fails = 0, first_fail = -1;
      Eigen::VectorXd ot(d);
      for (int i = 0; i < n; ++i) {
        const auto& T = run.replay.steps[static_cast<size_t>(i)].attended;
        ot.setZero();
        double mass = 0.0;
        for (int j : T) {
          ot += a_t(j, i) * V.row(j).transpose();
          mass += a_t(j, i);
        }
        if (mass <= 0) continue;
        const double err = (ot / mass - full.row(i).transpose()).norm();
        const double bound = 2.0 * std::max(0.0, 1.0 - mass) * vmax[static_cast<size_t>(i)];
        if (err > bound + 1e-9 * (1.0 + vmax[static_cast<size_t>(i)]) && fails++ == 0) first_fail = i;
        if (bound > 1e-12 && err / bound > worst) worst = err / bound, at = i;
      }
      auto r = head_record(h, "C18", run.name, ClaimKind::Theorem, fails == 0, worst, fails ? first_fail : at);
      r.detail = {{"failures", fails}, {"metric", "max error / bound"}};
      out.push_back(std::move(r));
    }
  }
}

}  // namespace kvo::detail

// Output fidelity of prefill compression: E(S) of many kept sets in one blocked pass over the
// following queries (prefill_oracle.hpp).
#include <algorithm>
#include <cmath>
#include <limits>

#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"
#include "kvo/oracle/prefill_oracle.hpp"
#include "prefill_values.hpp"

namespace kvo {
namespace {

constexpr int kBlock = 64;  // following queries per block

// o_t(S) from the logits when the kept probabilities underflow to 0 in the full softmax (a kept
// logit more than ~745 below the row's maximum): softmax over S and P..t only, as a decoder does.
Eigen::RowVectorXd restricted_output(std::span<const double> logits, const std::vector<int>& set, int P, int t,
                                     const Eigen::MatrixXd& V) {
  std::vector<int> kept(set);
  for (int j = P; j <= t; ++j) kept.push_back(j);
  std::vector<double> l(kept.size()), p(kept.size());
  for (size_t x = 0; x < kept.size(); ++x) l[x] = logits[static_cast<size_t>(kept[x])];
  softmax(l, p);
  Eigen::RowVectorXd o = Eigen::RowVectorXd::Zero(V.cols());
  for (size_t x = 0; x < kept.size(); ++x) o += p[x] * V.row(kept[x]);
  return o;
}

}  // namespace

std::vector<double> output_errors(const Trace& tr, int layer, int kv_head, int P,
                                  std::span<const std::vector<int>> sets) {
  require(P >= 1 && P < tr.n_tokens, "prefill: the prompt length must be in [1, " + std::to_string(tr.n_tokens - 1) +
                                         "], got " + std::to_string(P));
  for (const auto& s : sets) {
    require(std::is_sorted(s.begin(), s.end()) && std::adjacent_find(s.begin(), s.end()) == s.end(),
            "prefill: a kept set must be ascending without repeats");
    require(s.empty() || (s.front() >= 0 && s.back() < P), "prefill: a kept position is outside the prompt");
  }
  const Eigen::MatrixXd V = kv_values(tr, layer, kv_head);
  const int n = tr.n_tokens, g = tr.group_size(), d = static_cast<int>(V.cols());
  const auto VP = V.topRows(P);
  std::vector<Eigen::MatrixXd> kept_values(sets.size());  // V rows of each set, |S| x d
  for (size_t s = 0; s < sets.size(); ++s) kept_values[s] = V(sets[s], Eigen::all);
  std::vector<double> err(sets.size(), 0.0);
  Eigen::MatrixXd prompt_p(kBlock, P), decoded(kBlock, d), full, kept, gathered;
  Eigen::VectorXd decoded_mass(kBlock);
  std::vector<std::vector<double>> block_logits(kBlock);
  std::vector<int> keys;
  std::vector<double> probs;
  Eigen::RowVectorXd p(n);  // a row's probabilities, Eigen-owned so aligned the same way every run
  for (int h = kv_head * g; h < (kv_head + 1) * g; ++h) {
    const HeadView head(tr, layer, h);
    for (int t0 = P; t0 < n; t0 += kBlock) {
      const int rows = std::min(kBlock, n - t0);
      for (int r = 0; r < rows; ++r) {
        const int t = t0 + r;
        prefix_attention(head, t, keys, block_logits[static_cast<size_t>(r)], probs);
        // An Eigen-owned copy: vectorised sums split their lanes at the data's address, so a Map of
        // the vector's heap block would round differently from run to run.
        std::copy(probs.begin(), probs.end(), p.data());
        prompt_p.row(r) = p.head(P);
        decoded.row(r) = p.segment(P, t - P + 1) * V.middleRows(P, t - P + 1);
        decoded_mass(r) = p.segment(P, t - P + 1).sum();
      }
      full = prompt_p.topRows(rows) * VP + decoded.topRows(rows);
      for (size_t s = 0; s < sets.size(); ++s) {
        gathered = prompt_p(Eigen::seqN(0, rows), sets[s]);
        kept = gathered * kept_values[s];
        const Eigen::VectorXd mass = gathered.rowwise().sum();
        for (int r = 0; r < rows; ++r) {
          const double m = mass(r) + decoded_mass(r);
          const Eigen::RowVectorXd o =
              m > 0 ? Eigen::RowVectorXd((kept.row(r) + decoded.row(r)) / m)
                    : restricted_output(block_logits[static_cast<size_t>(r)], sets[s], P, t0 + r, V);
          err[s] += (o - full.row(r)).norm() / g;
        }
      }
    }
  }
  return err;
}

}  // namespace kvo

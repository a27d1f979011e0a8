// A toy decoder loop driving kvoracle's KvEvictionManager, built against the installed package:
// each step it "attends" the positions it holds, registers the attention, drops what the manager
// evicts, and at the end compares the heavy-hitter policy's kept set with the exact static optimum
// of the last step's attention. Prints one line per layer and exits non-zero on any inconsistency.
#include <cmath>
#include <cstdio>
#include <vector>

#include "kvo/core/cache_manager.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/modular_concave.hpp"
#include "kvo/oracle/static_oracle.hpp"
#include "kvo/version.hpp"

namespace {

// Attention of query `pos` over `held`: a few heavy positions (every 7th) and a recency bias.
std::vector<double> attention(int pos, const std::vector<int>& held) {
  std::vector<double> w;
  double sum = 0.0;
  for (int p : held) {
    const double logit = (p % 7 == 0 ? 2.0 : 0.0) + 0.05 * (p - pos);
    w.push_back(std::exp(logit));
    sum += w.back();
  }
  for (double& x : w) x /= sum;
  return w;
}

}  // namespace

int main() {
  const int n = 96, layers = 2, kv_heads = 2, budget = 16;
  kvo::CacheManagerOptions o;
  o.run.policy.id = kvo::PolicyId::H2O;  // kvo::policy_table(): every policy with its name and traits
  o.run.budget = kvo::Budget::parse(std::to_string(budget));
  o.n_layers = layers;
  o.n_kv_heads = kv_heads;
  o.max_len = n;
  kvo::KvEvictionManager manager(o);
  std::printf("kvoracle %s, policy %s, budget %d\n", kvo::version, manager.policy_name().c_str(), budget);
  for (int layer = 0; layer < layers; ++layer) {
    for (int head = 0; head < kv_heads; ++head) {
      std::vector<int> held;
      std::vector<double> last;
      // --8<-- [start:decoder-loop]
      for (int pos = 0; pos < n; ++pos) {
        held.push_back(pos);          // the new token's K/V joins the cache
        last = attention(pos, held);  // the decoder's attention of `pos` over what it holds
        for (int gone : manager.step(0, layer, head, pos, held, last))
          std::erase(held, gone);  // drop the evicted rows from the K/V tensors
        // --8<-- [end:decoder-loop]
        if (held != manager.held(0, layer, head) || static_cast<int>(held.size()) > budget) {
          std::printf("inconsistent cache at layer %d head %d step %d\n", layer, head, pos);
          return 1;
        }
      }
      // The exact best `budget` positions for the last query's attention, against what H2O kept.
      std::vector<double> full(static_cast<size_t>(n), 0.0);
      const std::vector<int> all = [&] {
        std::vector<int> v(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
        return v;
      }();
      const std::vector<double> w = attention(n - 1, all);
      const kvo::StaticSolution best = kvo::solve_topk(kvo::ModularConcave(w, kvo::Concave::Identity), budget);
      double kept = 0.0;
      for (int p : held) kept += w[static_cast<size_t>(p)];
      if (!best.exact || kept > best.value + 1e-12) {
        std::printf("the optimum is not an upper bound at layer %d head %d\n", layer, head);
        return 1;
      }
      if (head == 0)
        std::printf("layer %d: h2o keeps %zu tokens, attention mass %.4f of the optimum %.4f\n", layer, held.size(),
                    kept, best.value);
    }
  }
  return 0;
}

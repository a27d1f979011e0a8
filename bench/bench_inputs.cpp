#include "bench_inputs.hpp"

#include <map>
#include <mutex>
#include <random>

#include "kvo/core/synth.hpp"

namespace kvo::bench {

Eigen::MatrixXd similarity(int rows, int cols, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::exponential_distribution<double> E(1.0);
  Eigen::MatrixXd s(rows, cols);
  for (int c = 0; c < cols; ++c)
    for (int r = 0; r < rows; ++r) s(r, c) = E(g);
  return s;
}

const Trace& trace(int n, int d) {
  static std::map<std::pair<int, int>, Trace> cache;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find({n, d});
  if (it == cache.end()) {
    SynthOptions o;
    o.layers = 1;
    o.heads = 1;
    o.kv_heads = 1;
    o.tokens = n;
    o.head_dim = d;
    o.prompt_len = 0;
    it = cache.emplace(std::make_pair(n, d), synthesize(o)).first;
  }
  return it->second;
}

}  // namespace kvo::bench

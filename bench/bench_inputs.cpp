#include "bench_inputs.hpp"

#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <tuple>

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

const Trace& trace(int n, int d, int heads) {
  static std::map<std::tuple<int, int, int>, Trace> cache;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find({n, d, heads});
  if (it == cache.end()) {
    SynthOptions o;
    o.layers = 1;
    o.heads = heads;
    o.kv_heads = heads;
    o.tokens = n;
    o.head_dim = d;
    o.prompt_len = 0;
    it = cache.emplace(std::make_tuple(n, d, heads), synthesize(o)).first;
  }
  return it->second;
}

namespace {
std::uint64_t status_kib(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string k;
  std::uint64_t v = 0;
  while (in >> k) {
    if (k == key && in >> v) return v;
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0;
}
}  // namespace

std::uint64_t rss_bytes() { return status_kib("VmRSS:") * 1024; }
std::uint64_t peak_rss_bytes() { return status_kib("VmHWM:") * 1024; }
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

}  // namespace kvo::bench

// Test helpers: seeded random traces and set-function instances, an independent brute-force
// maximiser over bitmasks (no shared code with oracle/), and the message of a refused call.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <Eigen/Dense>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kvo/core/error.hpp"
#include "kvo/core/facility_location.hpp"
#include "kvo/core/modular_concave.hpp"
#include "kvo/core/saturated_coverage.hpp"
#include "kvo/core/synth.hpp"
#include "kvo/core/trace.hpp"

namespace kvo::test {

// An empty folder of this process's own under the system's temporary folder: kvo-<suite>-<name>-<pid>.
inline std::filesystem::path fresh_dir(const std::string& suite, const std::string& name) {
  const auto d =
      std::filesystem::temp_directory_path() / ("kvo-" + suite + "-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// One layer of a seeded synthetic heavy-hitter trace (kvo::synthesize) with the given shape.
inline Trace synthetic_layer(int heads, int kv_heads, int n, int d, int prompt_len, std::uint64_t seed) {
  SynthOptions so;
  so.layers = 1;
  so.heads = heads;
  so.kv_heads = kv_heads;
  so.tokens = n;
  so.head_dim = d;
  so.prompt_len = prompt_len;
  so.seed = seed;
  return synthesize(so);
}

inline Trace random_trace(int layers, int heads, int kv_heads, int n, int d, std::uint64_t seed, double scale = 1.0) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> N(0.f, 1.f);
  Trace tr;
  tr.resize_layers(layers);
  tr.n_heads = heads;
  tr.n_kv_heads = kv_heads;
  tr.n_tokens = n;
  tr.head_dim = d;
  tr.attn_scale = scale;
  for (int l = 0; l < layers; ++l) {
    tr.q[l].resize(static_cast<size_t>(heads) * n * d);
    tr.k[l].resize(static_cast<size_t>(kv_heads) * n * d);
    tr.v[l].resize(static_cast<size_t>(kv_heads) * n * d);
    for (auto& x : tr.q[l]) x = N(g);
    for (auto& x : tr.k[l]) x = N(g);
    for (auto& x : tr.v[l]) x = N(g);
  }
  return tr;
}

enum class Family { Modular, Sqrt, Log, FacilityLocation, SaturatedCoverage };
inline const std::vector<Family>& monotone_families() {
  static const std::vector<Family> f = {Family::Modular, Family::Sqrt, Family::Log, Family::FacilityLocation,
                                        Family::SaturatedCoverage};
  return f;
}

inline std::unique_ptr<SetFunction> random_function(Family fam, int n, std::mt19937_64& g) {
  std::exponential_distribution<double> E(1.0);
  // Attention-like similarity: a few clients, heavy-tailed weights, some exact zeros and ties.
  auto sim = [&](int rows) {
    Eigen::MatrixXd s(rows, n);
    for (int r = 0; r < rows; ++r)
      for (int j = 0; j < n; ++j) s(r, j) = (g() % 5 == 0) ? 0.0 : std::floor(E(g) * 8) / 8;
    return s;
  };
  std::vector<double> w(static_cast<size_t>(n));
  for (auto& x : w) x = E(g);
  switch (fam) {
    case Family::Modular:
      return std::make_unique<ModularConcave>(w, Concave::Identity);
    case Family::Sqrt:
      return std::make_unique<ModularConcave>(w, Concave::Sqrt);
    case Family::Log:
      return std::make_unique<ModularConcave>(w, Concave::Log);
    case Family::FacilityLocation:
      return std::make_unique<FacilityLocation>(sim(1 + static_cast<int>(g() % 6)));
    case Family::SaturatedCoverage:
      return std::make_unique<SaturatedCoverage>(sim(1 + static_cast<int>(g() % 6)),
                                                 0.2 + 0.6 * static_cast<double>(g() % 100) / 100.0);
  }
  return nullptr;
}

// max over |S| <= k of f(S) by enumerating bitmasks, evaluating each set from scratch.
inline double bitmask_opt(const SetFunction& f, int k) {
  const int n = f.ground_size();
  double best = -std::numeric_limits<double>::infinity();
  std::vector<int> set;
  for (std::uint32_t m = 0; m < (1u << n); ++m) {
    if (std::popcount(m) > k) continue;
    set.clear();
    for (int j = 0; j < n; ++j)
      if (m & (1u << j)) set.push_back(j);
    best = std::max(best, f.evaluate(set));
  }
  return best;
}

// The kvo::Error message `f` throws ("" when it returns).
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Fails the test unless `f` throws one line of kvo::Error that contains `part`.
inline void expect_refusal(const std::function<void()>& f, const std::string& part) {
  const std::string message = error_of(f);
  EXPECT_FALSE(message.empty()) << "accepted: " << part;
  EXPECT_NE(message.find(part), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

}  // namespace kvo::test

// Engines' contracts (oracle/contract_optimum.hpp): on small models every contract's optimum equals
// enumerating every schedule the contract allows, written from its definition (one end step per
// token and kept set; the budget counted over whole kept sets), and is certified by its dual; tied
// sets never beat per-head sets, admission never beats eviction, and bad contracts are refused.
#include "kvo/oracle/contract_optimum.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "kvo/core/error.hpp"
#include "kvo/oracle/offline_admission.hpp"
#include "kvo/oracle/offline_oracle.hpp"
#include "kvo/oracle/offline_pages.hpp"
#include "random_units.hpp"

using namespace kvo;

namespace {

struct Model {
  int layers, kv_heads, n;
  std::vector<OfflineProblem> units;  // layer-major; only w is read
  std::function<Eigen::MatrixXd(size_t)> w() const {
    return [this](size_t u) { return units[u].w; };
  }
};

Model random_model(int layers, int kv_heads, int n, std::uint64_t seed) {
  return {layers, kv_heads, n, test::random_units(layers * kv_heads, n, 1, 0, seed)};
}

// Every schedule the contract allows, from its definition: each kept set gives each token the last
// step it is held; sinks to the end; otherwise at least through the window (and the delay: an
// eviction decided at the token's arrival takes effect d steps later), and: evicting at every step,
// at any later step; compressing, only after a compression step (or never); admission only, right
// after the window or never. The budget: at every step (after every compression), the kept sets
// of a budget group hold at most k tokens each on average. Returns the best total reward.
double enumerate_contract(const Model& m, const EvictionContract& c) {
  const int n = m.n, s = c.sinks, r = c.recent;
  // Who holds one set and who shares a budget, written out here from the scopes' meaning.
  const auto unit_of = [&](int l, int h) { return static_cast<size_t>(l * m.kv_heads + h); };
  std::vector<std::vector<size_t>> sets;
  if (c.kept_sets == KeptSets::Head)
    for (int l = 0; l < m.layers; ++l)
      for (int h = 0; h < m.kv_heads; ++h) sets.push_back({unit_of(l, h)});
  if (c.kept_sets == KeptSets::Layer)
    for (int l = 0; l < m.layers; ++l) {
      sets.emplace_back();
      for (int h = 0; h < m.kv_heads; ++h) sets.back().push_back(unit_of(l, h));
    }
  if (c.kept_sets == KeptSets::KvHead)
    for (int h = 0; h < m.kv_heads; ++h) {
      sets.emplace_back();
      for (int l = 0; l < m.layers; ++l) sets.back().push_back(unit_of(l, h));
    }
  if (c.kept_sets == KeptSets::Model) {
    sets.emplace_back();
    for (int u = 0; u < m.layers * m.kv_heads; ++u) sets.back().push_back(static_cast<size_t>(u));
  }
  std::vector<std::vector<size_t>> groups;  // sets sharing one budget, as lists of their first units
  for (size_t x = 0; x < sets.size(); ++x) {
    const int layer = static_cast<int>(sets[x].front()) / m.kv_heads;
    const bool joins =
        !groups.empty() &&
        (c.budget_scope == BudgetScope::Model ||
         (c.budget_scope == BudgetScope::Layer && static_cast<int>(groups.back().front()) / m.kv_heads == layer));
    if (!joins) groups.emplace_back();
    groups.back().push_back(sets[x].front());
  }
  const std::vector<int> points = c.compression_steps(n);
  const int hold = std::max(r, c.compresses() ? 0 : c.delay);  // tokens held at least this many steps
  std::vector<std::vector<int>> options(static_cast<size_t>(n));
  for (int j = 0; j < n; ++j) {
    auto& o = options[static_cast<size_t>(j)];
    const int low = std::min(j + hold - 1, n - 1);
    if (j < s) {
      o = {n - 1};
    } else if (c.admission_only) {
      o = {low, n - 1};
      if (low == n - 1) o = {n - 1};
    } else if (c.compresses()) {
      for (int p : points)
        if (p >= j + r) o.push_back(p);
      o.push_back(n - 1);
    } else {
      for (int e = std::max(low, j - 1); e < n; ++e) o.push_back(e);
    }
  }
  std::vector<std::vector<int>> end(sets.size(), std::vector<int>(static_cast<size_t>(n)));
  double best = -1.0;
  const auto feasible = [&]() {
    for (const auto& g : groups) {
      std::vector<size_t> members;
      for (size_t x = 0; x < sets.size(); ++x)
        if (std::find(g.begin(), g.end(), sets[x].front()) != g.end()) members.push_back(x);  // g: first units
      const long cap = static_cast<long>(members.size()) * c.budget;
      const std::vector<int> checks = c.compresses() ? points : [&] {
        std::vector<int> all(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) all[static_cast<size_t>(i)] = i;
        return all;
      }();
      for (int i : checks) {
        long held = 0;
        for (size_t x : members)
          for (int j = 0; j <= i; ++j) held += c.compresses() ? end[x][j] > i : end[x][j] >= i;
        if (held > cap) return false;
      }
    }
    return true;
  };
  std::function<void(size_t, int)> walk = [&](size_t x, int j) {
    if (x == sets.size()) {
      if (!feasible()) return;
      double v = 0.0;
      for (size_t y = 0; y < sets.size(); ++y)
        for (size_t u : sets[y])
          for (int t = 0; t < n; ++t)
            for (int i = t; i <= end[y][t]; ++i) v += m.units[u].w(i, t);
      best = std::max(best, v);
      return;
    }
    if (j == n) return walk(x + 1, 0);
    for (int e : options[static_cast<size_t>(j)]) {
      end[x][static_cast<size_t>(j)] = e;
      walk(x, j + 1);
    }
  };
  walk(0, 0);
  return best;
}

void expect_optimal(const Model& m, const EvictionContract& c, const std::string& what) {
  const ContractOptimum opt = solve_contract(m.w(), m.n, m.layers, m.kv_heads, c);
  const double brute = enumerate_contract(m, c);
  ASSERT_GE(brute, 0.0) << what << ": no schedule is feasible";
  EXPECT_NEAR(opt.value, brute, 1e-9) << what;
  EXPECT_TRUE(opt.certified()) << what << ": value " << opt.value << ", bound " << opt.upper;
}

TEST(ContractOptimum, TiedSetsEqualEnumeration) {
  int cases = 0;
  for (KeptSets tie : {KeptSets::Layer, KeptSets::KvHead, KeptSets::Model})
    for (int k = 1; k <= 4; ++k)
      for (int r = 0; r <= std::min(k, 2); ++r)
        for (int sinks = 0; sinks + r <= k && sinks <= 1; ++sinks) {
          const Model m = random_model(2, 2, 5, 100u + static_cast<unsigned>(10 * k + 3 * r + sinks));
          EvictionContract c;
          c.kept_sets = tie;
          c.budget = k;
          c.recent = r;
          c.sinks = sinks;
          if (sinks + r == k && r == 0) continue;
          expect_optimal(m, c,
                         "tie " + kept_sets_name(tie) + " k=" + std::to_string(k) + " r=" + std::to_string(r) +
                             " s=" + std::to_string(sinks));
          ++cases;
        }
  EXPECT_GT(cases, 15);
}

TEST(ContractOptimum, LayerSetsSharingTheModelsBudgetEqualEnumeration) {
  for (int k = 1; k <= 3; ++k)
    for (int r = 0; r < k; ++r) {
      const Model m = random_model(2, 2, 4, 300u + static_cast<unsigned>(k * 7 + r));
      EvictionContract c;
      c.kept_sets = KeptSets::Layer;
      c.budget_scope = BudgetScope::Model;
      c.budget = k;
      c.recent = r;
      expect_optimal(m, c, "layer sets, model budget, k=" + std::to_string(k) + " r=" + std::to_string(r));
    }
}

TEST(ContractOptimum, DelayedEvictionEqualsEnumeration) {
  for (int k = 2; k <= 4; ++k)
    for (int d = 1; d <= k; ++d)
      for (int r = 0; r <= 1; ++r) {
        const Model m = random_model(1, 2, 6, 500u + static_cast<unsigned>(k * 11 + d * 3 + r));
        EvictionContract c;
        c.kept_sets = KeptSets::Model;
        c.budget = k;
        c.recent = r;
        c.delay = d;
        expect_optimal(m, c, "delay " + std::to_string(d) + " k=" + std::to_string(k) + " r=" + std::to_string(r));
      }
}

TEST(ContractOptimum, ChunkedPrefillAndPeriodicDecodingEqualEnumeration) {
  int cases = 0;
  for (int T = 1; T <= 3; ++T)
    for (int r = 0; r <= std::min(T, 1); ++r)
      for (int chunk = 0; chunk <= 3; ++chunk)
        for (int interval = 0; interval <= 2; ++interval)
          for (int sinks = 0; sinks <= 1 && sinks + r <= T && sinks < T; ++sinks) {
            if (chunk == 0 && interval == 0) continue;
            const Model m =
                random_model(1, 2, 7, 700u + static_cast<unsigned>(T * 101 + r * 37 + chunk * 7 + interval));
            EvictionContract c;
            c.kept_sets = KeptSets::Layer;
            c.budget = T;
            c.recent = r;
            c.sinks = sinks;
            c.prompt_len = 4;
            c.chunk = chunk;
            c.interval = interval;
            expect_optimal(m, c,
                           "T=" + std::to_string(T) + " r=" + std::to_string(r) + " chunk=" + std::to_string(chunk) +
                               " N=" + std::to_string(interval) + " s=" + std::to_string(sinks));
            ++cases;
          }
  EXPECT_GT(cases, 40);
}

TEST(ContractOptimum, AdmissionOnlyEqualsEnumeration) {
  for (KeptSets tie : {KeptSets::Head, KeptSets::Model})
    for (int k = 1; k <= 4; ++k)
      for (int r = 0; r < k; ++r)
        for (int sinks = 0; sinks <= 1 && sinks + r <= k && sinks < k; ++sinks) {
          const Model m = random_model(1, 2, 6, 900u + static_cast<unsigned>(k * 13 + r * 5 + sinks));
          EvictionContract c;
          c.kept_sets = tie;
          c.budget_scope = BudgetScope::Model;  // with per-head sets: the two heads share 2 k
          c.budget = k;
          c.recent = r;
          c.sinks = sinks;
          c.admission_only = true;
          expect_optimal(m, c,
                         "admission, tie " + kept_sets_name(tie) + " k=" + std::to_string(k) +
                             " r=" + std::to_string(r) + " s=" + std::to_string(sinks));
        }
}

TEST(ContractOptimum, PagesEqualTheFoldedSumOfTheSet) {
  // Whole pages of a tied set: the sum of its units folded into pages, solved alone (the fold's own
  // enumeration tests are in offline_pages_test.cpp); the sinks are whole pages before them.
  const Model m = random_model(2, 3, 70, 11);
  EvictionContract c;
  c.kept_sets = KeptSets::Model;
  c.budget = 24;
  c.recent = 5;
  c.sinks = 4;
  c.page_size = 4;
  const ContractOptimum opt = solve_contract(m.w(), m.n, m.layers, m.kv_heads, c);
  Eigen::MatrixXd sum = Eigen::MatrixXd::Zero(m.n, m.n);
  for (const OfflineProblem& u : m.units) sum += u.w;
  OfflineProblem rest;
  rest.w = sum.bottomRightCorner(m.n - 4, m.n - 4);
  rest.budget = 20;
  rest.recent = 5;
  const double sinks = sum.leftCols(4).sum();
  const double folded = solve_offline(fold_into_pages(rest, page_shape(20, 5, 4))).value;
  EXPECT_NEAR(opt.value, folded + sinks, 1e-9);
  EXPECT_TRUE(opt.certified());
  // The ends say the same: every page's tokens leave together, never more than k tokens held.
  ASSERT_EQ(opt.end.size(), 1u);
  for (int j = 4; j + 1 < m.n; ++j)
    if ((j - 4) % 4 != 3) {
      EXPECT_EQ(opt.end[0][j], opt.end[0][j + 1]) << "token " << j;
    }
  for (int i = 0; i < m.n; ++i) {
    int held = 0;
    for (int j = 0; j <= i; ++j) held += opt.end[0][j] >= i;
    EXPECT_LE(held, 24) << "step " << i;
  }
}

TEST(ContractOptimum, TyingAndAdmissionNeverGain) {
  const Model m = random_model(3, 2, 40, 21);
  EvictionContract c;
  c.budget = 10;
  c.recent = 2;
  const double per_head = solve_contract(m.w(), m.n, m.layers, m.kv_heads, c).value;
  c.kept_sets = KeptSets::Layer;
  const double per_layer = solve_contract(m.w(), m.n, m.layers, m.kv_heads, c).value;
  c.kept_sets = KeptSets::Model;
  const double model = solve_contract(m.w(), m.n, m.layers, m.kv_heads, c).value;
  c.admission_only = true;
  const double admission = solve_contract(m.w(), m.n, m.layers, m.kv_heads, c).value;
  EXPECT_LE(per_layer, per_head + 1e-9);
  EXPECT_LE(model, per_layer + 1e-9);
  EXPECT_LE(admission, model + 1e-9);
  c.admission_only = false;
  c.kept_sets = KeptSets::Head;
  c.budget_scope = BudgetScope::Model;
  EXPECT_GE(solve_contract(m.w(), m.n, m.layers, m.kv_heads, c).value, per_head - 1e-9);
}

TEST(ContractOptimum, CompressionSteps) {
  EvictionContract c;
  c.prompt_len = 7;
  c.chunk = 3;
  EXPECT_EQ(c.compression_steps(10), (std::vector<int>{2, 5, 6, 7, 8}));
  c.interval = 2;
  EXPECT_EQ(c.compression_steps(12), (std::vector<int>{2, 5, 6, 8, 10}));
  c.chunk = 0;
  EXPECT_EQ(c.compression_steps(12), (std::vector<int>{8, 10}));
  c.interval = 0;
  EXPECT_TRUE(c.compression_steps(12).empty());
}

TEST(ContractOptimum, AdmissionCertificateCatchesBadSchedules) {
  const auto units = test::random_units(2, 9, 4, 1, 5);
  const AdmissionSolution sol = solve_offline_admission(units);
  EXPECT_NEAR(sol.upper, sol.value, 1e-12);
  auto end = sol.end;
  end[0][2] = 5;  // neither dropped after its window nor kept
  EXPECT_THROW(evaluate_admission_schedule(units, end, sol.price), Error);
  end = sol.end;
  for (auto& unit : end) std::fill(unit.begin(), unit.end(), 8);  // everything admitted
  EXPECT_THROW(evaluate_admission_schedule(units, end, sol.price), Error);
  EXPECT_THROW(evaluate_admission_schedule(units, sol.end, -1.0), Error);
}

TEST(ContractOptimum, RefusesContractsThatMeanNothing) {
  const Model m = random_model(1, 2, 20, 3);
  const auto refuses = [&](auto edit, const std::string& field) {
    EvictionContract c;
    c.budget = 8;
    edit(c);
    try {
      solve_contract(m.w(), m.n, m.layers, m.kv_heads, c);
      ADD_FAILURE() << "accepted a contract with a bad " << field;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind(field + ":", 0), 0u) << e.what();
    }
  };
  refuses([](EvictionContract& c) { c.budget = 21; }, "budget");
  refuses([](EvictionContract& c) { c.recent = 9; }, "recent");
  refuses([](EvictionContract& c) { c.sinks = 8; }, "sinks");
  refuses([](EvictionContract& c) { c.sinks = 4, c.recent = 5; }, "recent");
  refuses([](EvictionContract& c) { c.delay = 9; }, "delay");
  refuses([](EvictionContract& c) { c.page_size = 3; }, "page_size");
  refuses([](EvictionContract& c) { c.page_size = 4, c.sinks = 2; }, "page_size");
  refuses([](EvictionContract& c) { c.page_size = 4, c.recent = 6; }, "page_size");
  refuses([](EvictionContract& c) { c.page_size = 2, c.interval = 4; }, "page_size");
  refuses([](EvictionContract& c) { c.interval = 4, c.delay = 1; }, "delay");
  refuses([](EvictionContract& c) { c.chunk = 4; }, "chunk");
  refuses([](EvictionContract& c) { c.interval = 2, c.admission_only = true; }, "admission_only");
  refuses([](EvictionContract& c) { c.budget_scope = BudgetScope::Layerwise; }, "budget_scope");
  refuses([](EvictionContract& c) { c.kept_sets = KeptSets::Model, c.budget_scope = BudgetScope::Layer; },
          "budget_scope");
  refuses([](EvictionContract& c) { c.prompt_len = 20; }, "prompt_len");
}

}  // namespace

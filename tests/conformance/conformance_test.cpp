// The conformance kit: golden files from kvoracle's policies, the checker, and the failing
// fixtures it must catch at the right first step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>

#include "kvo/conformance/check.hpp"
#include "kvo/conformance/golden.hpp"
#include "kvo/conformance/tie_trace.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/press_parameters.hpp"
#include "kvo/core/replay.hpp"
#include "kvo/core/trace_io.hpp"

namespace kvo::conformance {
namespace {

Trace small_trace() { return tie_trace({}); }

// The shipped press file's presses and ratio (docs/conformance.md): at 0.25 each press keeps 24 of
// the 32 prompt tokens, and the cut runs through the tied background keys of every unit.
constexpr double kPressRatio = 0.25;
const std::vector<std::string> kShippedPresses = {"snapkv",     "pyramidkv", "adakv(snapkv)", "knorm",
                                                  "press:tova", "keydiff",   "streaming_llm", "observed_attention"};

GoldenFile golden_of(const Trace& tr, std::vector<PolicyId> policies, std::vector<std::string> budgets = {"8"},
                     const std::string& recent = "") {
  GoldenRequest req;
  req.recent = recent;
  req.policies = std::move(policies);
  req.budgets = std::move(budgets);
  req.threads = 1;
  return make_golden(tr, req, "tie trace");
}

// The decisions of `policy` at `budget` replayed by kvoracle, as kept sets at every step.
std::vector<Decision> replayed(const Trace& tr, PolicySpec spec, const std::string& budget, const std::string& as,
                               int as_budget) {
  ReplayOptions o;
  o.run.policy = spec;
  o.run.budget = Budget::parse(budget);
  o.run.gqa = GqaMode::KvMean;
  o.threads = 1;
  std::vector<Decision> out;
  for (const HeadReplay& h : replay(tr, o).heads)
    for (size_t i = 0; i < h.steps.size() && h.head % tr.group_size() == 0; ++i)
      out.push_back({as, as_budget, h.layer, h.head / tr.group_size(), static_cast<int>(i), true, {}, h.steps[i].kept});
  return out;
}

TEST(TieTrace, PairsScoreBitForBitEqual) {
  const GoldenFile g = golden_of(small_trace(), {PolicyId::H2O}, {"40"});  // nothing evicted: every score seen
  const GoldenStep& last = g.cases[0].units[0].steps.back();
  for (int b : tied_pairs({})) {
    ASSERT_TRUE(last.scores[static_cast<size_t>(b)].has_value() || b >= 40 - g.cases[0].recent);
    if (last.scores[static_cast<size_t>(b)]) {
      EXPECT_EQ(*last.scores[static_cast<size_t>(b - 1)], *last.scores[static_cast<size_t>(b)]) << b;
    }
  }
  EXPECT_THROW(tie_trace({.heads = 3, .kv_heads = 2}), Error);
  EXPECT_THROW(tie_trace({.pair_every = 1}), Error);
}

TEST(Golden, RoundTripsThroughJsonAndConforms) {
  const GoldenFile g = golden_of(small_trace(),
                                 {PolicyId::H2O, PolicyId::Tova, PolicyId::Scissorhands, PolicyId::Streaming,
                                  PolicyId::H2OMask, PolicyId::H2OPaper},
                                 {"8", "12"});
  const GoldenFile back = GoldenFile::from_json(nlohmann::json::parse(g.to_json().dump()));
  ASSERT_EQ(back.cases.size(), 12u);
  EXPECT_EQ(back.to_json(), g.to_json());
  for (const GoldenCase& c : back.cases) {
    const ConformanceResult r = check_conformance(back, golden_decisions(c));
    ASSERT_EQ(r.cases.size(), 1u);
    EXPECT_TRUE(r.cases[0].conforms) << c.key() << "\n" << r.report().text();
    EXPECT_EQ(r.cases[0].decisions, static_cast<long>(g.n) * g.layers * g.kv_heads);
  }
}

GoldenRequest window_only() {
  GoldenRequest r;
  r.policies = {PolicyId::Window};
  r.threads = 1;
  return r;
}

// The shipped golden files (conformance/golden/) are what this build computes: the same kept sets
// and evictions at every step, the scores to 1e-12. A change to a policy's decisions fails here until
// the file is regenerated and its version raised (docs/conformance.md).
// Each file with the trace it was made on (the contract files share the tie trace).
class ShippedGolden : public testing::TestWithParam<std::pair<const char*, const char*>> {};

TEST_P(ShippedGolden, IsWhatThisBuildComputes) {
  const std::string dir = std::string(KVO_SOURCE_DIR) + "/conformance/golden/";
  const GoldenFile shipped = read_golden(dir + GetParam().first + ".json");
  const Trace tr = read_trace(dir + GetParam().second + ".safetensors");
  EXPECT_EQ(shipped.trace_sha256, make_golden(tr, window_only(), "").trace_sha256);
  GoldenRequest req;  // the file's policies and budgets, policy-major as make_golden writes them
  req.policies.clear();
  req.compression_ratio.clear();
  for (const GoldenCase& c : shipped.cases) {
    if (!c.press.is_null()) {  // a press's case: its press, ratio and parameters
      if (std::find(req.presses.begin(), req.presses.end(), c.policy) == req.presses.end())
        req.presses.push_back(c.policy);
      if (std::find(req.compression_ratio.begin(), req.compression_ratio.end(), *c.compression_ratio) ==
          req.compression_ratio.end())
        req.compression_ratio.push_back(*c.compression_ratio);
      nlohmann::json o = c.press;
      if (o.contains("alpha_safeguard")) {
        req.alpha_safeguard = o.at("alpha_safeguard").get<double>();
        o.erase("alpha_safeguard");
      }
      req.press = press_parameters_schema().from_json(o, req.press);  // each case names what its press reads
      continue;
    }
    if (std::find(req.policies.begin(), req.policies.end(), parse_policy(c.policy)) == req.policies.end())
      req.policies.push_back(parse_policy(c.policy));
    // Under a contract the shipped files keep the contract's own k (a case's budget adds the block being filled).
    if (shipped.contract.is_null() &&
        std::find(req.budgets.begin(), req.budgets.end(), std::to_string(c.budget)) == req.budgets.end())
      req.budgets.push_back(std::to_string(c.budget));
  }
  if (!shipped.contract.is_null()) req.contract = shipped.contract.dump();
  req.threads = 1;
  const GoldenFile now = make_golden(tr, req, shipped.trace);
  ASSERT_EQ(now.cases.size(), shipped.cases.size());
  for (size_t c = 0; c < now.cases.size(); ++c)
    for (size_t u = 0; u < now.cases[c].units.size(); ++u)
      for (size_t i = 0; i < now.cases[c].units[u].steps.size(); ++i) {
        const GoldenStep &a = now.cases[c].units[u].steps[i], &b = shipped.cases[c].units[u].steps[i];
        ASSERT_EQ(a.kept, b.kept) << now.cases[c].key() << " unit " << u << " step " << i;
        ASSERT_EQ(a.evicted, b.evicted);
        ASSERT_EQ(a.scores.size(), b.scores.size());
        for (size_t t = 0; t < a.scores.size(); ++t) {
          ASSERT_EQ(a.scores[t].has_value(), b.scores[t].has_value());
          if (a.scores[t]) {
            EXPECT_NEAR(*a.scores[t], *b.scores[t], 1e-12 * std::max(1.0, std::abs(*b.scores[t])));
          }
        }
      }
  // The shipped trace is the kit's tie trace with the file's prompt, or its press trace.
  const bool presses = !req.presses.empty();
  const GoldenFile tie =
      make_golden(presses ? press_tie_trace({}) : tie_trace({.prompt_len = shipped.prompt_len}), window_only(), "");
  EXPECT_EQ(shipped.trace_sha256, tie.trace_sha256);
  // With a prompt, the prompt is held in full and cut to the budget once, at its last token.
  if (shipped.prompt_len > 0 && !presses) {
    const GoldenCase& h2o = shipped.find("h2o", 8);
    EXPECT_EQ(h2o.units[0].steps[static_cast<size_t>(shipped.prompt_len - 2)].kept.size(),
              static_cast<size_t>(shipped.prompt_len - 1));
    EXPECT_EQ(h2o.units[0].steps[static_cast<size_t>(shipped.prompt_len - 1)].evicted.size(),
              static_cast<size_t>(shipped.prompt_len - 8));
  }
}

INSTANTIATE_TEST_SUITE_P(Files, ShippedGolden,
                         testing::Values(std::pair{"tie-trace", "tie-trace"},
                                         std::pair{"tie-trace-prompt16", "tie-trace-prompt16"},
                                         std::pair{"tie-trace-llama", "tie-trace"},
                                         std::pair{"tie-trace-openvino", "tie-trace"},
                                         std::pair{"press-trace", "press-trace"}),
                         [](const auto& param_info) {
                           std::string name = param_info.param.first;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(Golden, LibraryExampleOfDocs) {
  // --8<-- [start:conformance-library]
  const kvo::Trace trace = kvo::conformance::tie_trace({});
  kvo::conformance::GoldenRequest request;
  request.policies = {kvo::PolicyId::Tova};
  request.budgets = {"8"};
  const kvo::conformance::GoldenFile golden = kvo::conformance::make_golden(trace, request, "tie trace");
  const std::vector<kvo::conformance::Decision> mine = kvo::conformance::parse_decisions(
      R"({"policy": "tova", "budget": 8, "layer": 0, "head": 0, "step": 8, "evicted": [5]})");
  const kvo::conformance::ConformanceResult verdict = kvo::conformance::check_conformance(golden, mine);
  std::cout << verdict.report().text();  // tova@8: first departs at step 8, layer 0, KV head 0 (tie): ...
  // --8<-- [end:conformance-library]
  ASSERT_EQ(verdict.cases.size(), 1u);
  EXPECT_EQ(verdict.cases[0].first.step, 8);
  EXPECT_EQ(verdict.cases[0].first.kind, DepartureKind::Tie);
}

TEST(Golden, KvoraclesReplayConformsAsKeptSets) {
  const Trace tr = small_trace();
  const GoldenFile g = golden_of(tr, {PolicyId::H2O, PolicyId::Tova, PolicyId::Scissorhands});
  for (PolicyId id : {PolicyId::H2O, PolicyId::Tova, PolicyId::Scissorhands}) {
    PolicySpec spec;
    spec.id = id;
    const ConformanceResult r = check_conformance(g, replayed(tr, spec, "8", policy_name(id), 8));
    EXPECT_TRUE(r.conforms()) << r.report().text();
  }
}

// The first step where the golden policy evicted a token while a newer candidate scored exactly
// the same: where a scorer breaking ties toward the newer token departs.
int first_open_tie(const GoldenCase& c, int& layer, int& head) {
  int best = 1 << 30;
  for (const GoldenUnit& u : c.units)
    for (size_t i = 0; i < u.steps.size() && static_cast<int>(i) < best; ++i) {
      const GoldenStep& s = u.steps[i];
      if (s.evicted.size() != 1) continue;
      std::vector<int> cand = s.kept;
      cand.push_back(s.evicted[0]);
      std::sort(cand.begin(), cand.end());
      const auto pos = [&](int t) { return std::lower_bound(cand.begin(), cand.end(), t) - cand.begin(); };
      const auto victim = s.scores[static_cast<size_t>(pos(s.evicted[0]))];
      for (int t : s.kept)
        if (t > s.evicted[0] && victim && s.scores[static_cast<size_t>(pos(t))] == victim) {
          best = static_cast<int>(i), layer = u.layer, head = u.head;
          break;
        }
    }
  return best;
}

// A hand-written TOVA (evict the token the current query attends least, over the whole cache) whose
// ties evict the newer token: the fixture of "ties broken toward the newer token".
std::vector<Decision> tova_ties_newer(const Trace& tr, int budget) {
  std::vector<Decision> out;
  const size_t n = static_cast<size_t>(tr.n_tokens);
  for (int l = 0; l < tr.n_layers; ++l)
    for (int g = 0; g < tr.n_kv_heads; ++g) {
      const float* a = tr.attn[static_cast<size_t>(l)].data() + static_cast<size_t>(g * tr.group_size()) * n * n;
      std::vector<int> cache;
      for (size_t i = 0; i < n; ++i) {
        cache.push_back(static_cast<int>(i));
        if (static_cast<int>(cache.size()) <= budget) continue;
        size_t worst = 0;
        for (size_t p = 1; p < cache.size(); ++p)
          if (a[i * n + static_cast<size_t>(cache[p])] <= a[i * n + static_cast<size_t>(cache[worst])]) worst = p;
        out.push_back({"tova", budget, l, g, static_cast<int>(i), false, {cache[worst]}, {}});
        cache.erase(cache.begin() + static_cast<std::ptrdiff_t>(worst));
      }
    }
  return out;
}

TEST(Fixtures, TiesTowardTheNewerTokenDepartAtTheFirstOpenTie) {
  const Trace tr = small_trace();
  const GoldenFile g = golden_of(tr, {PolicyId::Tova});
  int layer = -1, head = -1;
  const int step = first_open_tie(g.cases[0], layer, head);
  ASSERT_LT(step, tr.n_tokens) << "the tie trace places no open tie";
  EXPECT_EQ(step, 8);  // the budget's first eviction: the tied pair (4, 5) weighs least in row 8
  const ConformanceResult r = check_conformance(g, tova_ties_newer(tr, 8));
  ASSERT_FALSE(r.conforms());
  const Departure& d = r.cases[0].first;
  EXPECT_EQ(d.step, step);
  EXPECT_EQ(d.layer, layer);
  EXPECT_EQ(d.head, head);
  EXPECT_EQ(d.expected, std::vector<int>{4});
  EXPECT_EQ(d.got, std::vector<int>{5});
  EXPECT_EQ(d.kind, DepartureKind::Tie) << r.report().text();
  EXPECT_NE(r.report().text().find("the oldest token leaves first"), std::string::npos);
}

TEST(Fixtures, ACacheOneShortDepartsAtTheStepBeforeTheFirstEviction) {
  const Trace tr = small_trace();
  const GoldenFile g = golden_of(tr, {PolicyId::H2O});
  PolicySpec spec;
  spec.id = PolicyId::H2O;
  const ConformanceResult r = check_conformance(g, replayed(tr, spec, "7", "h2o", 8));
  ASSERT_FALSE(r.conforms());
  EXPECT_EQ(r.cases[0].first.step, 7);  // budget 8: the first eviction is at step 8
  EXPECT_EQ(r.cases[0].first.layer, 0);
  EXPECT_EQ(r.cases[0].first.head, 0);
  EXPECT_EQ(r.cases[0].first.kind, DepartureKind::Differs);
  EXPECT_EQ(r.cases[0].units_departing, 4);
}

TEST(Fixtures, EvictedSinksDepartAtTheFirstEviction) {
  const Trace tr = small_trace();
  const GoldenFile g = golden_of(tr, {PolicyId::Streaming});
  PolicySpec spec;
  spec.id = PolicyId::Streaming;
  spec.sinks = 0;
  const ConformanceResult r = check_conformance(g, replayed(tr, spec, "8", "streaming", 8));
  ASSERT_FALSE(r.conforms());
  EXPECT_EQ(r.cases[0].first.step, 8);
  EXPECT_EQ(r.cases[0].first.expected, std::vector<int>{4});
  EXPECT_EQ(r.cases[0].first.got, std::vector<int>{0});
}

TEST(Fixtures, EveryHeadReusingTheFirstHeadsDecisionsIsCaught) {
  const Trace tr = small_trace();
  const GoldenFile g = golden_of(tr, {PolicyId::Tova});
  const GoldenCase& c = g.cases[0];
  std::vector<Decision> reused;
  int expected = 1 << 30;
  for (const GoldenUnit& u : c.units)
    for (size_t i = 0; i < u.steps.size(); ++i) {
      reused.push_back({"tova", 8, u.layer, u.head, static_cast<int>(i), false, c.units[0].steps[i].evicted, {}});
      if (u.steps[i].evicted != c.units[0].steps[i].evicted) expected = std::min(expected, static_cast<int>(i));
    }
  ASSERT_LT(expected, g.n) << "every unit of the trace evicts alike";
  const ConformanceResult r = check_conformance(g, reused);
  ASSERT_FALSE(r.conforms());
  EXPECT_EQ(r.cases[0].first.step, expected);
  EXPECT_FALSE(r.cases[0].first.layer == 0 && r.cases[0].first.head == 0);
}

// llama.cpp's contract: one kept set for the whole model, 2 sinks and a window of 2 (docs/engines.md).
constexpr const char* kLlama = R"({"engine": "llama.cpp", "n_ctx": 8, "kv_evict_sink": 2, "kv_evict_window": 2})";
// OpenVINO GenAI's: a layer's KV heads share whole blocks of 4, a start and a recent area of one block.
constexpr const char* kOpenVino =
    R"({"engine": "openvino", "block_size": 4, "start_size": 4, "recent_size": 4, "max_cache_size": 12})";

GoldenFile contract_golden(const char* contract, std::vector<PolicyId> policies) {
  GoldenRequest req;
  req.policies = std::move(policies);
  req.contract = contract;
  req.threads = 1;
  return make_golden(small_trace(), req, "tie trace");
}

TEST(ContractGolden, OneSetForTheWholeModelIsEveryUnitsSet) {
  const GoldenFile g = contract_golden(kLlama, {PolicyId::H2O, PolicyId::Tova, PolicyId::Scissorhands});
  ASSERT_EQ(g.cases.size(), 3u);
  EXPECT_EQ(g.contract["engine"], "llama.cpp");
  for (const GoldenCase& c : g.cases) {
    ASSERT_TRUE(c.contract.has_value());
    EXPECT_EQ(c.contract->kept_sets, KeptSets::Model);
    EXPECT_EQ(c.budget, 8);
    EXPECT_EQ(c.units.size(), 4u);
    std::vector<Decision> per_step;  // what llama.cpp's one position removal gives: no layer, no head
    long evictions = 0;
    for (size_t i = 0; i < c.units[0].steps.size(); ++i) {
      const GoldenStep& first = c.units[0].steps[i];
      EXPECT_LE(first.kept.size(), 8u);
      if (i >= 1) {
        EXPECT_EQ(first.kept[0], 0);
        EXPECT_EQ(first.kept[1], 1);  // the sinks
      }
      for (const GoldenUnit& u : c.units) {
        EXPECT_EQ(u.steps[i].kept, first.kept) << c.key() << " step " << i;
        EXPECT_EQ(u.steps[i].scores, first.scores);  // the set's score, summed over every unit
      }
      if (!first.evicted.empty())
        per_step.push_back({c.policy, 8, kEveryUnit, kEveryUnit, static_cast<int>(i), false, first.evicted, {}});
      evictions += static_cast<long>(first.evicted.size());
    }
    EXPECT_EQ(evictions, g.n - 8);
    const ConformanceResult r = check_conformance(g, per_step);
    EXPECT_TRUE(r.conforms()) << r.report().text();
    EXPECT_EQ(r.cases[0].decisions, static_cast<long>(g.n) * 4);
    EXPECT_NE(c.tie_rule.find("summed scores of a kept set"), std::string::npos);
  }
  // The tied-set optimum's own engine: a decision given per unit conforms just the same.
  EXPECT_TRUE(check_conformance(g, golden_decisions(g.cases[0])).conforms());
}

TEST(ContractGolden, BlocksLeaveWholeWhenANewBlockIsAllocated) {
  const GoldenFile g = contract_golden(kOpenVino, {PolicyId::H2O, PolicyId::Tova});
  for (const GoldenCase& c : g.cases) {
    ASSERT_TRUE(c.contract.has_value());
    EXPECT_EQ(c.contract->page_size, 4);
    EXPECT_EQ(c.contract->kept_sets, KeptSets::Layer);
    EXPECT_EQ(c.budget, 16);  // max_cache_size and the block being filled
    long evictions = 0;
    for (const GoldenUnit& u : c.units)
      for (size_t i = 0; i < u.steps.size(); ++i) {
        const GoldenStep& s = u.steps[i];
        EXPECT_LE(s.kept.size(), 16u);
        EXPECT_EQ(s.kept, c.units[u.layer * g.kv_heads].steps[i].kept);  // a layer's KV heads share the blocks
        if (s.evicted.empty()) continue;
        ++evictions;
        EXPECT_EQ((static_cast<int>(i) - 4) % 4, 0) << "evicted at step " << i << ", not at a block's allocation";
        ASSERT_EQ(s.evicted.size(), 4u);
        EXPECT_EQ((s.evicted[0] - 4) % 4, 0);
        EXPECT_EQ(s.evicted[3], s.evicted[0] + 3);
        EXPECT_GE(s.evicted[0], 4);  // never the start area
      }
    EXPECT_EQ(evictions, 6 * 4);  // steps 16, 20, ..., 36 in each of the 4 units
    // One decision per layer (head left out: the layer's KV heads share the set) conforms.
    std::vector<Decision> per_layer;
    for (const Decision& d : golden_decisions(c))
      if (d.head == 0) per_layer.push_back({d.policy, d.budget, d.layer, kEveryUnit, d.step, false, d.evicted, {}});
    EXPECT_TRUE(check_conformance(g, per_layer).conforms());
  }
}

TEST(Fixtures, ABlockEvictedOneStepLateDepartsAtItsAllocation) {
  // A paged cache that evicts after the new block's first token is written, not when it is allocated.
  const GoldenFile g = contract_golden(kOpenVino, {PolicyId::H2O});
  std::vector<Decision> late = golden_decisions(g.cases[0]);
  for (Decision& d : late) ++d.step;
  const ConformanceResult r = check_conformance(g, late);
  ASSERT_FALSE(r.conforms());
  EXPECT_EQ(r.cases[0].first.step, 16);  // 4 sinks and 3 blocks held: the fourth block is allocated at 16
  EXPECT_EQ(r.cases[0].first.got, std::vector<int>{});
  EXPECT_EQ(r.cases[0].first.kind, DepartureKind::Differs);
  EXPECT_NE(r.cases[0].first.why.find("evicted 0 tokens where the golden evicts 4"), std::string::npos)
      << r.cases[0].first.why;
}

TEST(ContractGolden, RefusesWhatCannotObeyOrMeansNothing) {
  EXPECT_THROW(contract_golden(kLlama, {PolicyId::Streaming}), Error);  // no per-token score
  EXPECT_THROW(contract_golden(R"({"engine": "llama.cpp", "n_ctx": 8, "typo": 1})", {PolicyId::H2O}), Error);
  GoldenRequest req;
  req.contract = kLlama;
  req.recent = "2";
  EXPECT_THROW(req.validate(), Error);  // the contract names its window
  // Every-unit decisions only where the case's kept sets tie those units.
  const GoldenFile per_head = golden_of(small_trace(), {PolicyId::H2O});
  EXPECT_THROW(check_conformance(per_head, parse_decisions(R"({"policy":"h2o","budget":8,"step":9,"evicted":[4]})")),
               Error);
  const GoldenFile blocks = contract_golden(kOpenVino, {PolicyId::H2O});
  try {
    check_conformance(blocks, parse_decisions(R"({"policy":"h2o","budget":16,"head":0,"step":16,"evicted":[4]})"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("name its layer"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(check_conformance(
      blocks, parse_decisions(R"({"policy":"h2o","budget":16,"layer":0,"step":16,"evicted":[4,5,6,7]})")));
}

TEST(Check, RefusesBadDecisionsInOneLine) {
  const GoldenFile g = golden_of(small_trace(), {PolicyId::H2O});
  EXPECT_THROW(parse_decisions("{\"policy\": \"h2o\"}\n"), Error);
  EXPECT_THROW(parse_decisions("not json\n"), Error);
  EXPECT_THROW(parse_decisions(R"({"policy":"h2o","budget":8,"layer":0,"head":0,"step":1,"evicted":[1],"kept":[0]})"),
               Error);
  try {
    check_conformance(g, parse_decisions(R"({"policy":"tova","budget":8,"layer":0,"head":0,"step":1,"evicted":[]})"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no case tova@8 (it holds h2o@8)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(
      check_conformance(g, parse_decisions(R"({"policy":"h2o","budget":8,"layer":5,"head":0,"step":1,"evicted":[]})")),
      Error);
  GoldenRequest req;
  req.policies = {PolicyId::Random};
  EXPECT_THROW(req.validate(), Error);
  nlohmann::json j = g.to_json();
  j["version"] = 99;
  EXPECT_THROW(GoldenFile::from_json(j), Error);
}

// ---- presses: kvpress's prefill presses on the press trace -----------------------------------

// The shipped press file's request: SnapKV's window of 4 (the trace holds 32 prompt tokens).
GoldenRequest press_request(std::vector<std::string> presses, std::vector<double> ratios = {kPressRatio}) {
  GoldenRequest req;
  req.policies.clear();
  req.presses = std::move(presses);
  req.compression_ratio = std::move(ratios);
  req.press.window_size = 4;
  req.threads = 1;
  return req;
}

// Whether a unit's cut at the prompt's last step leaves out a token that scores exactly as one it
// keeps: the tie rule decided it.
bool cut_splits_a_tie(const GoldenUnit& u, int P) {
  const GoldenStep& s = u.steps[static_cast<size_t>(P - 1)];
  for (int e : s.evicted)
    for (int k : s.kept)
      if (s.scores[static_cast<size_t>(e)] == s.scores[static_cast<size_t>(k)]) return true;
  return false;
}

TEST(PressTrace, RepeatedKeysScoreBitForBitEqual) {
  const PressTraceOptions o;
  const Trace tr = press_tie_trace(o);
  EXPECT_EQ(tr.prompt_len, tr.n_tokens);
  PressOptions snap;
  snap.id = PressId::SnapKV;
  snap.window_size = 4;
  const int L = tr.n_tokens - snap.window_size, pad = snap.kernel_size / 2;
  for (int l = 0; l < tr.n_layers; ++l) {
    const PressResult r = run_press(press_layer_of(tr, l, tr.prompt_len), snap);
    for (int h = 0; h < tr.n_kv_heads; ++h) {
      const std::vector<int> heavy = heavy_keys(o, l, h);
      ASSERT_GE(heavy.size(), 3u);
      // Background keys whose whole pooling window is background, inside the scored range: one score.
      std::optional<double> background;
      int tied = 0;
      for (int j = pad; j + pad < L; ++j) {
        const bool clear = std::none_of(heavy.begin(), heavy.end(), [&](int x) { return std::abs(x - j) <= pad; });
        if (!clear) continue;
        const double v = r.scores[static_cast<size_t>(h)][static_cast<size_t>(j)];
        if (!background) background = v;
        EXPECT_EQ(v, *background) << "layer " << l << " head " << h << " token " << j;
        ++tied;
      }
      EXPECT_GE(tied, 3) << "layer " << l << " head " << h;
      // Heavy keys score above the background.
      EXPECT_GT(r.scores[static_cast<size_t>(h)][static_cast<size_t>(heavy[0])], *background);
    }
  }
  EXPECT_NE(heavy_keys(o, 0, 0), heavy_keys(o, 0, 1));
  EXPECT_THROW(press_tie_trace({.heads = 3, .kv_heads = 2}), Error);
  EXPECT_THROW(press_tie_trace({.head_dim = 1}), Error);
  EXPECT_THROW(press_tie_trace({.heavy_every = 1}), Error);
}

TEST(PressGolden, CutsThePromptOnceSplittingPlantedTiesAndConforms) {
  const Trace tr = press_tie_trace({});
  const int P = tr.prompt_len;
  const GoldenFile g = make_golden(tr, press_request(kShippedPresses), "press trace");
  ASSERT_EQ(g.cases.size(), kShippedPresses.size());
  const GoldenFile back = GoldenFile::from_json(nlohmann::json::parse(g.to_json().dump()));
  EXPECT_EQ(back.to_json(), g.to_json());
  const int n_kept = press_n_kept(P, kPressRatio);
  for (const GoldenCase& c : back.cases) {
    SCOPED_TRACE(c.key());
    EXPECT_EQ(c.budget, n_kept);
    ASSERT_TRUE(c.compression_ratio.has_value());
    if (c.press.contains("window_size")) {
      EXPECT_EQ(c.press.at("window_size"), 4);
    }
    long held = 0;
    bool tie = false;
    for (const GoldenUnit& u : c.units) {
      for (int i = 0; i < g.n; ++i) {
        const GoldenStep& s = u.steps[static_cast<size_t>(i)];
        EXPECT_EQ(s.evicted.empty(), i != P - 1) << "step " << i;
      }
      const GoldenStep& cut = u.steps[static_cast<size_t>(P - 1)];
      held += static_cast<long>(cut.kept.size());
      if (c.policy != "pyramidkv" && c.policy.rfind("adakv(", 0) != 0) {
        EXPECT_EQ(static_cast<int>(cut.kept.size()), n_kept);
      }
      tie = tie || cut_splits_a_tie(u, P);
    }
    // AdaKV moves slots between a layer's heads and PyramidKV between layers; each holds its total.
    if (c.policy.rfind("adakv(", 0) == 0) {
      EXPECT_EQ(held, static_cast<long>(n_kept) * g.layers * g.kv_heads);
    }
    // StreamingLLM scores positions; ObservedAttention sums a key's column over the queries after it, which
    // differ between equal keys.
    if (c.policy != "streaming_llm" && c.policy != "observed_attention") {
      EXPECT_TRUE(tie) << "no unit's cut is decided by a tie";
    }
    const ConformanceResult r = check_conformance(back, golden_decisions(c));
    EXPECT_TRUE(r.conforms()) << r.report().text();
  }
}

// SnapKV whose top-k keeps the later of equal scores (kvoracle's scores, the order reversed):
// the fixture of a press breaking ties the other way.
TEST(Fixtures, APressKeepingTheLaterOfEqualScoresDepartsAsATieAtTheCut) {
  const Trace tr = press_tie_trace({});
  const int P = tr.prompt_len;
  const GoldenFile g = make_golden(tr, press_request({"snapkv"}), "press trace");
  std::vector<Decision> later;
  PressOptions o;
  o.id = PressId::SnapKV;
  o.window_size = 4;
  o.compression_ratio = kPressRatio;
  for (int l = 0; l < tr.n_layers; ++l) {
    const PressResult r = run_press(press_layer_of(tr, l, P), o);
    for (int h = 0; h < tr.n_kv_heads; ++h) {
      std::vector<int> order(static_cast<size_t>(P));
      for (int j = 0; j < P; ++j) order[static_cast<size_t>(j)] = j;
      const auto& s = r.scores[static_cast<size_t>(h)];
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return s[static_cast<size_t>(a)] > s[static_cast<size_t>(b)] ||
               (s[static_cast<size_t>(a)] == s[static_cast<size_t>(b)] && a > b);
      });
      std::vector<int> kept(order.begin(), order.begin() + r.n_kept);
      std::sort(kept.begin(), kept.end());
      later.push_back({"snapkv", g.cases[0].budget, l, h, P - 1, true, {}, kept});
    }
  }
  const ConformanceResult r = check_conformance(g, later);
  ASSERT_FALSE(r.conforms());
  EXPECT_EQ(r.cases[0].first.step, P - 1);
  EXPECT_EQ(r.cases[0].first.kind, DepartureKind::Tie) << r.report().text();
  EXPECT_NE(r.report().text().find("the earlier of equal scores is kept"), std::string::npos);
}

// AdaKV without its shared budget (every head keeping n_kept of its own scores) is SnapKV alone:
// it departs at the cut, where the heads' counts differ.
TEST(Fixtures, AdaKVWithoutTheSharedBudgetDepartsAtTheCut) {
  const Trace tr = press_tie_trace({});
  const GoldenFile g = make_golden(tr, press_request({"adakv(snapkv)", "snapkv"}), "press trace");
  std::vector<Decision> alone = golden_decisions(g.cases[1]);
  for (Decision& d : alone) d.policy = "adakv(snapkv)";
  const ConformanceResult r = check_conformance(g, alone);
  ASSERT_FALSE(r.conforms());
  EXPECT_EQ(r.cases[0].first.step, tr.prompt_len - 1);
  EXPECT_EQ(r.cases[0].first.kind, DepartureKind::Differs);
}

TEST(PressGolden, RefusesWhatTheKitCannotFixInOneLine) {
  const Trace tr = press_tie_trace({});
  const auto refused = [&](GoldenRequest req, const Trace& on, const std::string& says) {
    try {
      make_golden(on, req, "t");
      ADD_FAILURE() << "accepted; expected: " << says;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  };
  refused(press_request({"random"}), tr, "seeded draw");
  refused(press_request({"adakv(observed_attention)"}), tr, "does not wrap observed_attention");
  refused(press_request({"snapkvv"}), tr, "unknown press 'snapkvv'");
  refused(press_request({"snapkv"}, {1.0}), tr, "outside [0, 1)");
  GoldenRequest contract = press_request({"snapkv"});
  contract.contract = kLlama;
  refused(contract, tr, "not under a contract");
  refused(press_request({"snapkv"}), small_trace(), "no prompt");
  refused(press_request({"knorm"}), tie_trace({.prompt_len = 16}), "knorm");
  GoldenRequest wide = press_request({"snapkv"});
  wide.press.window_size = 64;
  refused(wide, tr, "window_size");
}

}  // namespace
}  // namespace kvo::conformance

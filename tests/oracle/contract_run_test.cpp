// `oracle contract` as a library call (oracle/contract_run.hpp): on a small random trace, every
// engine's contract gives a certified optimum that no policy obeying it beats, never above the
// per-head optimum where the contract only restricts it, equal to it for per-head sets at every
// step; the policies' values from their end steps equal the value of their recorded kept sets;
// bad documents are refused in one line naming the problem.
#include "kvo/oracle/contract_run.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "kvo/core/error.hpp"
#include "kvo/core/replay.hpp"
#include "kvo/oracle/offline_oracle.hpp"
#include "kvo/oracle/offline_streaming.hpp"
#include "kvo/oracle/shared_decoding.hpp"
#include "kvo/oracle/weight_rows.hpp"
#include "test_support.hpp"

using namespace kvo;

namespace {

Trace small_trace() {
  Trace tr = test::random_trace(2, 4, 2, 48, 8, 21, 1.5);
  tr.prompt_len = 12;
  return tr;
}

ContractResult run(const Trace& tr, const std::string& doc, std::vector<std::string> budgets) {
  ContractRequest req;
  req.contracts = {doc};
  req.budgets = std::move(budgets);
  req.threads = 1;
  return run_contract(tr, req);
}

}  // namespace

TEST(ContractRun, EveryEnginesOptimumIsCertifiedAndNoPolicyBeatsIt) {
  const Trace tr = small_trace();
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {R"({"engine": "llama.cpp", "n_ctx": 16, "kv_evict_sink": 2, "kv_evict_window": 4})", {"10", "20"}},
      {R"({"engine": "tensorrt-llm", "eviction_mode": "union", "budget": 8, "beta": 6})", {}},
      {R"({"engine": "tensorrt-llm", "eviction_mode": "per_head", "budget": 8, "beta": 6})", {}},
      {R"({"engine": "tensorrt-llm", "eviction_mode": "per_layer_perhead", "budget": 8, "beta": 6})", {}},
      {R"({"engine": "openvino", "start_size": 4, "recent_size": 4, "max_cache_size": 16, "block_size": 4})", {}},
      {R"({"engine": "dms", "window_size": 4, "budget": 14})", {"14", "25%"}},
      {R"({"engine": "kvpress", "compression_interval": 5, "target_size": 10, "adakv": true})", {}},
      {R"({"engine": "kvoracle", "kept_sets": "layer", "budget": 12, "recent": 2, "chunk": 5})", {}},
      {R"({"engine": "kvoracle", "kept_sets": "model", "budget": 12, "recent": 1, "delay": 3})", {}},
  };
  for (const auto& [doc, budgets] : cases) {
    const ContractResult res = run(tr, doc, budgets);
    ASSERT_EQ(res.rows.size(), std::max<size_t>(1, budgets.size())) << doc;
    for (const ContractRow& row : res.rows) {
      EXPECT_TRUE(row.certified) << doc << ": " << row.optimum << " vs " << row.upper;
      EXPECT_LE(row.optimum, row.total + 1e-9) << doc;
      if (!row.contract.compresses()) {
        EXPECT_LE(row.price, 1.0 + 1e-12) << doc << ": the contract only restricts";
      }
      for (const ContractPolicyValue& p : row.policies) EXPECT_LE(p.share, 1.0 + 1e-12) << doc << " " << p.policy;
      if (row.contract.admission_only) {
        EXPECT_GE(row.first_come, 0.0);
        EXPECT_LE(row.first_come, row.optimum + 1e-9) << doc;
      }
    }
    EXPECT_FALSE(res.report().text().empty());
    EXPECT_EQ(res.to_json()["rows"].size(), res.rows.size());
  }
}

TEST(ContractRun, PerHeadSetsAtEveryStepCostNothing) {
  const Trace tr = small_trace();
  const ContractResult res = run(tr, R"({"engine": "kvoracle", "budget": 10})", {"10", "30%"});
  for (const ContractRow& row : res.rows) EXPECT_NEAR(row.price, 1.0, 1e-12);
}

TEST(ContractRun, PerHeadOptimumIsEveryUnitsOfflineOptimumSummedBitForBit) {
  const Trace tr = small_trace();
  for (const char* doc :
       {R"({"engine": "kvoracle", "budget": 10})", R"({"engine": "dms", "window_size": 4, "budget": 14})"}) {
    const ContractResult res = run(tr, doc, {"10", "30%"});
    for (const ContractRow& row : res.rows) {
      double value = 0.0, upper = 0.0, total = 0.0;
      for (int l = 0; l < tr.n_layers; ++l)
        for (int h = 0; h < tr.n_kv_heads; ++h) {
          OfflineProblem p;
          p.w = decoding_unit(tr, l, h, 1, 0).w;
          p.budget = row.contract.budget;
          const OfflineSolution alone = solve_offline_streaming(DenseWeightRows(p.w), p.budget, p.recent);
          value += alone.value;
          upper += alone.upper;
          double mass = 0.0;
          for (int i = 0; i < tr.n_tokens; ++i) mass += p.w.row(i).head(i + 1).sum();
          total += mass;
        }
      EXPECT_EQ(row.per_head, value) << doc;
      EXPECT_EQ(row.per_head_upper, upper) << doc;
      EXPECT_EQ(row.total, total) << doc;
    }
  }
}

TEST(ContractRun, ValuesFromEndStepsEqualTheRecordedKeptSets) {
  const Trace tr = small_trace();
  for (const bool compress : {false, true}) {
    EvictionContract c;
    c.kept_sets = KeptSets::Layer;
    c.budget = 9;
    c.recent = 2;
    if (compress) c.interval = 4, c.prompt_len = 12;
    ReplayOptions o;
    o.run.policy.id = PolicyId::H2O;
    o.run.gqa = GqaMode::KvMean;
    o.contract = c;
    const ReplayResult res = replay(tr, o);
    for (const HeadReplay& h : res.heads) {
      if (h.head % tr.group_size() != 0) continue;
      const Eigen::MatrixXd w = decoding_unit(tr, h.layer, h.head / tr.group_size(), 9, 0).w;
      std::vector<int> end(48, 47);
      double direct = 0.0;
      for (int i = 0; i < 48; ++i) {
        for (int j : h.steps[static_cast<size_t>(i)].evicted) end[static_cast<size_t>(j)] = i - 1;
        // Compressing: the query of step i saw the set before step i's evictions, S_{i-1} and i.
        const std::vector<int>& seen =
            compress ? h.steps[static_cast<size_t>(i)].attended : h.steps[static_cast<size_t>(i)].kept;
        for (int j : seen) direct += w(i, j);
      }
      EXPECT_NEAR(contract_schedule_value(w, end, c), direct, 1e-12) << "compress " << compress;
    }
  }
}

TEST(ContractRun, BadDocumentsAreRefusedInOneLine) {
  const Trace tr = small_trace();
  const auto message = [&](const std::string& doc, std::vector<std::string> budgets = {}) {
    try {
      run(tr, doc, std::move(budgets));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("/no/such/contract.json").find("cannot read /no/such/contract.json"), std::string::npos);
  EXPECT_NE(message("{not json").find("is not JSON"), std::string::npos);
  EXPECT_NE(message(R"({"n_ctx": 8})").find("name the engine"), std::string::npos);
  EXPECT_NE(message(R"({"engine": "vllm"})").find("unknown engine 'vllm'"), std::string::npos);
  EXPECT_NE(message(R"({"engine": "llama.cpp", "n_ctx": 8, "n_keep": 2})").find("unknown field 'n_keep'"),
            std::string::npos);
  EXPECT_NE(message(R"({"engine": "llama.cpp", "n_ctx": "eight"})").find("'n_ctx' has the wrong type"),
            std::string::npos);
  EXPECT_NE(message(R"({"engine": "llama.cpp", "n_ctx": 8, "kv_evict_window": 9})").find("recent:"), std::string::npos);
  EXPECT_NE(
      message(R"({"engine": "openvino", "start_size": 4, "recent_size": 6, "max_cache_size": 16, "block_size": 4})")
          .find("recent_size (6) must be a positive multiple of block_size 4"),
      std::string::npos);
  EXPECT_NE(
      message(R"({"engine": "openvino", "start_size": 4, "recent_size": 4, "max_cache_size": 8, "block_size": 4})")
          .find("max_cache_size must exceed"),
      std::string::npos);
  EXPECT_NE(message(R"({"engine": "tensorrt-llm", "eviction_mode": "per_layer"})").find("eviction_mode 'per_layer'"),
            std::string::npos);
  EXPECT_NE(message(R"({"engine": "llama.cpp", "n_ctx": 8})", {"60"}).find("budget: 60 tokens is outside"),
            std::string::npos);
  EXPECT_NE(message(R"({"engine": "llama.cpp", "n_ctx": 8})", {"lots"}).find("lots"), std::string::npos);
  EXPECT_NE(message(R"({"engine": "kvoracle", "kept_sets": "model", "budget_scope": "layer", "budget": 8})")
                .find("budget_scope:"),
            std::string::npos);
  ContractRequest req;
  req.contracts = {R"({"engine": "llama.cpp", "n_ctx": 8})"};
  req.policies = {PolicyId::Window};
  EXPECT_THROW(run_contract(tr, req), Error);
}

TEST(ContractRun, DocsExample) {  // docs/engines.md's C++ example, on a synthetic trace of 300 tokens
  Trace trace = test::random_trace(2, 4, 2, 300, 8, 4, 1.5);
  testing::internal::CaptureStdout();
  // --8<-- [start:contract]
  kvo::ContractRequest req;
  req.contracts = {R"({"engine": "openvino", "start_size": 32, "recent_size": 32, "max_cache_size": 256})"};
  const kvo::ContractResult res = kvo::run_contract(trace, req);
  std::cout << res.report().text();
  // --8<-- [end:contract]
  const std::string out = testing::internal::GetCapturedStdout();
  ASSERT_EQ(res.rows.size(), 1u);
  EXPECT_EQ(res.rows[0].contract.budget, 288);  // a block being filled on top of max_cache_size
  EXPECT_TRUE(res.rows[0].certified);
  EXPECT_NE(out.find("1. openvino: layer kept sets"), std::string::npos) << out;
}

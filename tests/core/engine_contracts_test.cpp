// Engines' contract documents (core/engine_contracts.hpp): each engine's fields read into the
// contract docs/engines.md says they impose, on a trace of 1 000 tokens with a prompt of 100.
#include "kvo/core/engine_contracts.hpp"

#include <gtest/gtest.h>

#include "kvo/core/error.hpp"

using namespace kvo;

namespace {

EvictionContract read(const char* doc, int budget = 0) {
  return read_engine_contract(nlohmann::json::parse(doc), 1000, 100, budget).contract;
}

}  // namespace

TEST(EngineContracts, TensorRtLlmKeepsThePromptOnTopAndCompressesEveryBeta) {
  const EvictionContract c = read(R"({"engine": "tensorrt-llm", "budget": 256, "beta": 64})");
  EXPECT_EQ(c.kept_sets, KeptSets::Model);  // union, the default
  EXPECT_EQ(c.sinks, 100);
  EXPECT_EQ(c.budget, 356);
  EXPECT_EQ(c.interval, 64);
  EXPECT_EQ(c.prompt_len, 100);
  EXPECT_EQ(read(R"({"engine": "tensorrt-llm", "eviction_mode": "per_head", "budget": 8})").kept_sets,
            KeptSets::KvHead);
  EXPECT_EQ(read(R"({"engine": "tensorrt-llm", "eviction_mode": "per_layer_perhead", "budget": 8})").kept_sets,
            KeptSets::Head);
  EXPECT_EQ(read(R"({"engine": "tensorrt-llm", "budget": 8})", 500).budget, 500);  // --budgets replaces k
}

TEST(EngineContracts, OpenVinoEvictsWholeBlocksOfALayer) {
  const EvictionContract c =
      read(R"({"engine": "openvino", "start_size": 32, "recent_size": 64, "max_cache_size": 256, "block_size": 16})");
  EXPECT_EQ(c.kept_sets, KeptSets::Layer);
  EXPECT_EQ(c.page_size, 16);
  EXPECT_EQ(c.sinks, 32);
  EXPECT_EQ(c.recent, 64);
  EXPECT_EQ(c.budget, 272);
}

TEST(EngineContracts, LlamaCppDmsAndKvpress) {
  const EvictionContract l = read(R"({"engine": "llama.cpp", "n_ctx": 200, "kv_evict_sink": 4, "kv_evict_window": 8})");
  EXPECT_EQ(l.kept_sets, KeptSets::Model);
  EXPECT_EQ(l.budget, 200);
  EXPECT_EQ(l.sinks, 4);
  EXPECT_EQ(l.recent, 8);
  EXPECT_FALSE(l.compresses());
  const EvictionContract d = read(R"({"engine": "dms", "window_size": 16, "budget": 120})");
  EXPECT_TRUE(d.admission_only);
  EXPECT_EQ(d.recent, 16);
  EXPECT_EQ(d.kept_sets, KeptSets::Head);
  const EvictionContract k =
      read(R"({"engine": "kvpress", "compression_interval": 32, "target_size": 90, "adakv": true})");
  EXPECT_EQ(k.budget_scope, BudgetScope::Layer);
  EXPECT_EQ(k.interval, 32);
  EXPECT_EQ(k.budget, 90);
  EXPECT_EQ(k.prompt_len, 100);
  const EvictionContract o = read(R"({"engine": "kvoracle", "kept_sets": "kv-head", "budget": 64, "delay": 3})");
  EXPECT_EQ(o.kept_sets, KeptSets::KvHead);
  EXPECT_EQ(o.delay, 3);
  EXPECT_EQ(o.prompt_len, 100);  // the trace's, unless given
}

TEST(EngineContracts, EveryEngineListsItsFields) {
  for (const EngineEntry& e : engine_table()) {
    EXPECT_FALSE(e.fields().empty()) << e.name;
    for (const EngineField& f : e.fields()) EXPECT_FALSE(f.help.empty()) << e.name << " " << f.name;
  }
}

TEST(EngineContracts, BadDocumentsNameTheProblem) {
  const auto message = [](const char* doc) {
    try {
      read(doc);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message("[1]"), "contract: expected a JSON object with an \"engine\" field");
  EXPECT_NE(message(R"({"engine": 3})").find("name the engine"), std::string::npos);
  EXPECT_NE(message(R"({"engine": "sglang"})").find("unknown engine 'sglang' (known: kvoracle, tensorrt-llm"),
            std::string::npos);
  EXPECT_NE(message(R"({"engine": "dms", "window": 4, "budget": 9})").find("unknown field 'window'"),
            std::string::npos);
  EXPECT_NE(
      message(R"({"engine": "openvino", "start_size": 32, "recent_size": 64, "max_cache_size": 250, "block_size": 16})")
          .find("max_cache_size (250) must be a positive multiple of block_size 16"),
      std::string::npos);
  EXPECT_NE(message(R"({"engine": "kvoracle", "kept_sets": "everything"})").find("unknown kept-set scope 'everything'"),
            std::string::npos);
  EXPECT_NE(message(R"({"engine": "kvoracle", "budget": 64, "page_size": 16, "sinks": 4})").find("page_size:"),
            std::string::npos);
  EXPECT_NE(message(R"({"engine": "llama.cpp", "n_ctx": 2000})").find("budget: 2000 tokens is outside [1, 1000]"),
            std::string::npos);
  EXPECT_NE(message(R"({"engine": "tensorrt-llm", "budget": 8, "algorithm": "snapkv"})").find("algorithm 'snapkv'"),
            std::string::npos);
}

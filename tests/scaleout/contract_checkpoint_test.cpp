// `oracle contract` through a checkpointed team (oracle/contract_run.hpp, scaleout/rank_team.hpp):
// one unit per (contract, budget) row and per budget's per-head optimum that no row is; a run that
// resumes from its stored units gives one process's rows bit for bit, and stored units of another
// contract are refused in one line.
#include <gtest/gtest.h>

#include <filesystem>

#include "kvo/core/error.hpp"
#include "kvo/oracle/contract_run.hpp"
#include "kvo/scaleout/checkpoint.hpp"
#include "kvo/scaleout/rank_team.hpp"
#include "test_support.hpp"

using namespace kvo;
using kvo::scaleout::Checkpoint;
using kvo::scaleout::RankTeam;

namespace {

const char* kLlama = R"({"engine": "llama.cpp", "n_ctx": 16, "kv_evict_sink": 2, "kv_evict_window": 4})";
const char* kPerHead = R"({"engine": "kvoracle", "budget": 10})";

ContractRequest request(std::vector<std::string> contracts) {
  ContractRequest req;
  req.contracts = std::move(contracts);
  req.budgets = {"10", "30%"};
  req.threads = 2;
  return req;
}

std::string fresh_dir(const std::string& name) {
  const std::string dir = (std::filesystem::temp_directory_path() / name).string();
  std::filesystem::remove_all(dir);
  return dir;
}

}  // namespace

TEST(ContractCheckpoint, ResumedRowsAreOneProcesssBitForBit) {
  Trace tr = test::random_trace(2, 4, 2, 48, 8, 21, 1.5);
  tr.prompt_len = 12;
  const ContractRequest req = request({kLlama, kPerHead});
  const nlohmann::json alone = run_contract(tr, req).to_json();
  const std::string dir = fresh_dir("kvo_contract_checkpoint");
  {
    const Checkpoint ck(dir, {{"run", "contract"}});
    const RankTeam team(2, false, &ck);
    const std::optional<ContractResult> first = run_contract(tr, req, team);
    ASSERT_TRUE(first);
    EXPECT_EQ(first->to_json(), alone);
    // Two budgets x two documents; the per-head document's rows are the per-head optima themselves.
    EXPECT_EQ(ck.stored("contract"), 4);
  }
  {
    const Checkpoint ck(dir, {{"run", "contract"}});
    const std::optional<ContractResult> resumed = run_contract(tr, req, RankTeam(1, false, &ck));
    ASSERT_TRUE(resumed);
    EXPECT_EQ(resumed->to_json(), alone);
  }
  {  // The same checkpoint under other contracts: its stored units answer the old ones.
    const Checkpoint ck(dir, {{"run", "contract"}});
    try {
      run_contract(tr, request({kPerHead, kLlama}), RankTeam(1, false, &ck));
      ADD_FAILURE() << "stored units of another contract were used";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("was computed under another contract"), std::string::npos) << e.what();
    }
  }
  std::filesystem::remove_all(dir);
  // Without a per-head document, each budget's per-head optimum is a unit of its own.
  const std::string dir2 = fresh_dir("kvo_contract_checkpoint2");
  const Checkpoint ck(dir2, {{"run", "contract"}});
  const std::optional<ContractResult> llama = run_contract(tr, request({kLlama}), RankTeam(2, false, &ck));
  ASSERT_TRUE(llama);
  EXPECT_EQ(ck.stored("contract"), 4);
  for (const ContractRow& row : llama->rows) EXPECT_LE(row.price, 1.0 + 1e-12);
  std::filesystem::remove_all(dir2);
}

// Every request and option set of the libraries declares its fields once (Schema<T>): one name and
// one flag per field, help for each, defaults whose text and JSON forms read back to themselves.
// The CLI's flags and Python's keywords are generated from these schemas, so what holds here holds
// there.
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "kvo/core/error.hpp"
#include "kvo/core/press_parameters.hpp"
#include "kvo/core/replay_run.hpp"
#include "kvo/core/run_options.hpp"
#include "kvo/core/synth.hpp"
#include "kvo/gpu/score_run.hpp"
#include "kvo/model/generate.hpp"
#include "kvo/model/recorder.hpp"
#include "kvo/oracle/allocation.hpp"
#include "kvo/oracle/contract_run.hpp"
#include "kvo/oracle/offline_run.hpp"
#include "kvo/oracle/prefill_run.hpp"
#include "kvo/oracle/static_run.hpp"
#include "kvo/proofs_check/verify_run.hpp"
#include "kvo/studies/diversity.hpp"
#include "kvo/studies/eval_run.hpp"
#include "kvo/studies/hypothesis_search.hpp"
#include "kvo/studies/paired_power.hpp"
#include "kvo/studies/press_eval_run.hpp"
#include "kvo/studies/task_options.hpp"
#include "kvo/studies/worst_case.hpp"

using namespace kvo;

namespace {

// One check over a schema of any type, run on T's defaults.
struct SchemaCase {
  std::string what;
  std::function<void()> check;
};

template <class T>
void check_schema(const Schema<T>& schema) {
  SCOPED_TRACE(schema.what());
  const T defaults{};
  std::set<std::string> names, flags;
  for (const Field<T>& f : schema.fields()) {
    EXPECT_FALSE(f.name().empty());
    EXPECT_EQ(f.name().find('-'), std::string::npos) << f.name() << ": names are Python keywords";
    if (f.has_text()) {
      EXPECT_TRUE(names.insert(f.name()).second) << "two fields named " << f.name();
      EXPECT_FALSE(f.info.help.empty()) << f.name();
      EXPECT_FALSE(f.kind.empty()) << f.name();
      if (f.info.cli) {
        std::string spellings = f.flag() + (f.info.alias.empty() ? "" : "," + f.info.alias);
        for (size_t start = 0; start <= spellings.size();) {
          const size_t comma = std::min(spellings.find(',', start), spellings.size());
          const std::string flag = spellings.substr(start, comma - start);
          EXPECT_EQ(flag[0], '-') << f.name();
          EXPECT_TRUE(flags.insert(flag).second) << "two fields spelled " << flag;
          start = comma + 1;
        }
      }
      T back{};
      const std::string text = f.get(defaults);
      if (!text.empty()) {
        f.set(back, text);
        EXPECT_EQ(f.get(back), text) << f.name() << ": the default's text reads back to itself";
      }
    }
  }
  const nlohmann::json j = schema.to_json(defaults);
  EXPECT_EQ(schema.to_json(schema.from_json(j)), j);
}

std::vector<SchemaCase> every_schema() {
  return {
      {"run options", [] { check_schema(run_options_schema()); }},
      {"press parameters", [] { check_schema(press_parameters_schema()); }},
      {"synth", [] { check_schema(synth_options_schema()); }},
      {"replay", [] { check_schema(ReplayRequest::schema()); }},
      {"score", [] { check_schema(ScoreRequest::schema()); }},
      {"static", [] { check_schema(StaticOracleRequest::schema()); }},
      {"offline", [] { check_schema(OfflineOracleRequest::schema()); }},
      {"prefill", [] { check_schema(PrefillOracleRequest::schema()); }},
      {"allocation", [] { check_schema(AllocationRequest::schema()); }},
      {"contract", [] { check_schema(ContractRequest::schema()); }},
      {"contract document", [] { check_schema(eviction_contract_schema()); }},
      {"verify", [] { check_schema(VerifyRequest::schema()); }},
      {"eval", [] { check_schema(studies::EvalRequest::schema()); }},
      {"eval prefill", [] { check_schema(studies::PressEvalRequest::schema()); }},
      {"tasks", [] { check_schema(studies::task_options_schema()); }},
      {"diversity", [] { check_schema(studies::DiversityRequest::schema()); }},
      {"tasks power", [] { check_schema(studies::PairedPowerRequest::schema()); }},
      {"search attention", [] { check_schema(studies::AttentionSearchRequest::schema()); }},
      {"search hypotheses", [] { check_schema(studies::HypothesisSearchRequest::schema()); }},
      {"generate", [] { check_schema(model::GenerateRequest::schema()); }},
      {"record", [] { check_schema(model::RecordOptions::schema()); }},
  };
}

}  // namespace

TEST(RequestSchemas, OneNameOneFlagAndDefaultsThatReadBack) {
  for (const SchemaCase& c : every_schema()) {
    SCOPED_TRACE(c.what);
    c.check();
  }
}

TEST(RequestSchemas, ARequestsJsonIsItsSchemas) {
  studies::EvalRequest e;
  e.kv_bits = 4;
  EXPECT_EQ(e.to_json(), studies::EvalRequest::schema().to_json(e));
  EXPECT_EQ(studies::EvalRequest::from_json(e.to_json()).kv_bits, 4);
  // kvpress's names where kvpress has one, the older ones refused with the new.
  EXPECT_NE(AllocationRequest::schema().find("compression_ratio"), nullptr);
  try {
    PrefillOracleRequest::from_json({{"ratios", {0.5}}});
    ADD_FAILURE() << "no error";
  } catch (const Error& x) {
    EXPECT_EQ(std::string(x.what()), "prefill oracle request: 'ratios' is now called 'compression_ratio'");
  }
}

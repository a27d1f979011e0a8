// The policy registry: one complete table whose traits agree with the policies it builds and with
// the policy table of docs/policies.md.
#include "kvo/core/policy_registry.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "kvo/core/error.hpp"

using namespace kvo;

TEST(PolicyRegistry, OneEntryPerIdInOrderWithUniqueNames) {
  const auto table = policy_table();
  ASSERT_EQ(table.size(), kPolicyCount);
  std::set<std::string_view> names;
  for (std::size_t x = 0; x < table.size(); ++x) {
    EXPECT_EQ(static_cast<std::size_t>(table[x].id), x);
    EXPECT_TRUE(names.insert(table[x].name).second) << table[x].name;
    EXPECT_EQ(parse_policy(table[x].name), table[x].id);
    EXPECT_FALSE(table[x].summary.empty());
    EXPECT_NE(table[x].make, nullptr) << table[x].name;
  }
  EXPECT_EQ(parse_policy_list("h2o, tova"), (std::vector<PolicyId>{PolicyId::H2O, PolicyId::Tova}));
  EXPECT_THROW(parse_policy_list("h2o,,tova"), Error);  // one list rule: an empty item is refused
  EXPECT_THROW(parse_policy_list(","), Error);
  EXPECT_EQ(join_policy_names(default_policies(PolicyListUse::Checks)),
            "h2o,h2o-paper,tova,scissorhands,streaming,window,random,h2o-mask");
}

TEST(PolicyRegistry, TraitsAgreeWithThePoliciesBuilt) {
  for (const auto& e : policy_table()) {
    PolicySpec spec;
    spec.id = e.id;
    if (e.traits.offline) {
      // Without a schedule an offline policy refuses to be built, unless it can read the dense
      // attention instead (lookahead).
      if (e.traits.dense == DenseNeed::Always) {
        EXPECT_TRUE(make_policy(spec)->needs_dense()) << e.name;
      } else {
        EXPECT_THROW(make_policy(spec), Error) << e.name;
      }
      spec.schedule = std::make_shared<const ScheduleSource>([](int, int) { return std::vector<int>{}; });
    }
    const auto p = make_policy(spec);
    EXPECT_EQ(p->nested(), e.traits.nested) << e.name;
    EXPECT_EQ(p->needs_dense(), needs_dense(spec)) << e.name;
    EXPECT_EQ(p->name().rfind(std::string(e.name), 0), 0u) << e.name;
    EXPECT_FALSE(e.traits.decoder && !e.traits.nested) << e.name << ": a decoder can only drive nested policies";
  }
  PolicySpec greedy = PolicySpec::named("greedy");
  for (const char* objective : {"acc", "one-step", "dense-acc", "mass", "fl", "sat-cov", "fidelity"}) {
    greedy.objective.name = objective;
    EXPECT_EQ(make_policy(greedy)->needs_dense(), needs_dense(greedy)) << objective;
  }
}

// Every row of the table in docs/policies.md names registry policies and its "uses" column is the
// registry's `reads`; every policy has a row.
TEST(PolicyRegistry, TheDocsTableIsTheRegistry) {
  std::ifstream in(std::string(KVO_SOURCE_DIR) + "/docs/policies.md");
  ASSERT_TRUE(in.good());
  std::map<std::string, std::string> uses;
  std::string line;
  const std::regex name_re("`([a-z0-9-]+)`");
  bool in_table = false;  // the first table, headed "| policy |"
  while (std::getline(in, line)) {
    if (line.rfind("| policy |", 0) == 0) in_table = true;
    if (in_table && line.rfind("|", 0) != 0) break;
    if (!in_table || line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    std::string cell;
    for (size_t x = 1; x < line.size(); ++x) {
      if (line[x] == '|' && line[x - 1] != '\\') {
        cells.push_back(cell);
        cell.clear();
      } else {
        cell += line[x];
      }
    }
    ASSERT_GE(cells.size(), 4u) << line;
    const std::string last = std::regex_replace(cells.back(), std::regex("^ +| +$"), "");
    for (std::sregex_iterator it(cells[0].begin(), cells[0].end(), name_re), end; it != end; ++it)
      uses[(*it)[1].str()] = last;
  }
  for (const auto& e : policy_table()) {
    ASSERT_TRUE(uses.count(std::string(e.name))) << e.name << " has no row in docs/policies.md";
    EXPECT_EQ(uses[std::string(e.name)], std::string(e.reads)) << e.name;
  }
  for (const auto& [name, u] : uses) EXPECT_NO_THROW(parse_policy(name)) << name << " in docs/policies.md";
}

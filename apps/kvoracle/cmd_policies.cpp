// kvoracle policies: lists the eviction policies.
#include <iostream>

#include "commands.hpp"
#include "kvo/core/policy_registry.hpp"
#include "kvo/core/press.hpp"
#include "kvo/report/table.hpp"

namespace kvo::cli {

Runner add_policies(CLI::App& app, const Global&) {
  app.add_subcommand("policies", "list the eviction policies and their traits");
  return [] {
    auto yes = [](bool b) { return std::string(b ? "yes" : "-"); };
    Table t({"policy", "nested", "dense", "decoder", "scorer", "seeded", "reads", "summary", "ties"});
    for (const auto& p : policy_table()) {
      const PolicyTraits& tr = p.traits;
      const std::string dense = tr.dense == DenseNeed::Always        ? "yes"
                                : tr.dense == DenseNeed::ByObjective ? "by objective"
                                                                     : "-";
      t.row({std::string(p.name), yes(tr.nested), dense, yes(tr.decoder), yes(tr.scorer != ScorerVariant::None),
             yes(tr.seeded), std::string(p.reads), std::string(p.summary), std::string(p.tie_rule)});
    }
    std::cout << t.text();
    return 0;
  };
}

Runner add_presses(CLI::App& app, const Global&) {
  app.add_subcommand("presses", "list kvpress's presses that kvoracle computes (oracle prefill)");
  return [] {
    Table t({"press", "kvpress class", "values", "reads", "score"});
    for (const auto& p : press_table())
      t.row({std::string(p.name), std::string(p.kvpress_class), p.needs_values ? "yes" : "-", std::string(p.reads),
             std::string(p.score)});
    std::cout << t.text();
    return 0;
  };
}

}  // namespace kvo::cli

// kvoracle policies: lists the eviction policies.
#include <iostream>

#include "commands.hpp"
#include "kvo/core/policy_factory.hpp"
#include "table.hpp"

namespace kvo::cli {

Runner add_policies(CLI::App& app, const Global&) {
  app.add_subcommand("policies", "list the eviction policies");
  return [] {
    Table t({"policy", "nested", "summary"});
    for (const auto& p : policy_catalogue()) t.row({p.name, p.nested ? "yes" : "no", p.summary});
    t.print(std::cout);
    return 0;
  };
}

}  // namespace kvo::cli

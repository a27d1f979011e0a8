// `kvoracle oracle allocation`: the exact prefill optimum when KV heads and layers share one
// budget, against per-head budgets of the same total (kvo/oracle/shared_prefill.hpp).
#pragma once
#include <CLI/CLI.hpp>

#include "commands.hpp"

namespace kvo::cli {

struct AllocationCommand {
  CLI::App* cmd = nullptr;
  Runner run;
};
// Registers the subcommand under `oracle`; its flags come from shared_prefill_option_table().
AllocationCommand add_allocation(CLI::App* oracle, const Global& g);

}  // namespace kvo::cli

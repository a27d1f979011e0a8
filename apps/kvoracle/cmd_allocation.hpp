// `kvoracle oracle allocation`: the exact optima when KV heads and layers share one budget, against
// per-head budgets of the same total, for prefill compression (kvo/oracle/shared_prefill.hpp) and
// for eviction at every step (kvo/oracle/shared_decoding.hpp).
#pragma once
#include <CLI/CLI.hpp>

#include "commands.hpp"

namespace kvo::cli {

struct AllocationCommand {
  CLI::App* cmd = nullptr;
  Runner run;
};
// Registers the subcommand under `oracle`; its flags come from AllocationRequest::schema().
AllocationCommand add_allocation(CLI::App* oracle, const Global& g);

}  // namespace kvo::cli

// `kvoracle oracle contract`: the exact optimum under an engine's eviction contract, what the
// contract costs against per-head sets, and each policy obeying it (kvo/oracle/contract_run.hpp).
#pragma once
#include <CLI/CLI.hpp>

#include "commands.hpp"

namespace kvo::cli {

struct ContractCommand {
  CLI::App* cmd = nullptr;
  Runner run;
};
// Registers the subcommand under `oracle`; its flags come from ContractRequest::schema().
ContractCommand add_contract(CLI::App* oracle, const Global& g);

}  // namespace kvo::cli

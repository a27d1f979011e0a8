// `kvoracle oracle prefill`: kvpress's presses (the press list, compression ratios and press
// parameters, kvpress's names and defaults) measured against the exact prefill optimum.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "commands.hpp"
#include "kvo/oracle/prefill_run.hpp"
#include "schema_flags.hpp"

namespace kvo::cli {

struct PrefillArgs {
  std::string trace, json;
  RequestFlags<PrefillOracleRequest> request;
};
int run_prefill_oracle(const PrefillArgs& a, const Global& g);

}  // namespace kvo::cli

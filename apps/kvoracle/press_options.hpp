// kvpress's presses on the command line: the press list, compression ratios and press parameters
// (kvpress's names and defaults), and `kvoracle oracle --prefill P`, which measures each press
// against the exact prefill optimum.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "commands.hpp"
#include "kvo/core/press.hpp"
#include "kvo/core/text_list.hpp"
#include "kvo/oracle/prefill_run.hpp"

namespace kvo::cli {

struct PressArgs {
  std::string presses = PrefillOracleRequest{}.presses;
  std::string ratios = join_numbers(PrefillOracleRequest{}.ratios);  // --compression-ratio (text_list.hpp)
  std::vector<double> ratio_list() const;
  PressOptions defaults;        // window_size, kernel_size, beta, n_sink, lag_size, local_window_size, seed
  bool output_fidelity = true;  // oracle --prefill: each set's output error and the output bound

  // Every press at every compression ratio (kvo::Error for an unknown press or a ratio outside [0, 1)).
  std::vector<PressOptions> build() const;
};
void add_press_options(CLI::App* cmd, PressArgs& a);
// Only the press parameters (press_parameter_table()), for commands that choose presses otherwise.
void add_press_parameter_options(CLI::App* cmd, PressOptions& parameters);

struct PrefillArgs {
  std::string trace, json;
  int prompt_len = 0;
  std::vector<int> layers;
  PressArgs press;
};
int run_prefill_oracle(const PrefillArgs& a, const Global& g);

}  // namespace kvo::cli

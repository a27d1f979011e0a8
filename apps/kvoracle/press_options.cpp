#include "press_options.hpp"

#include <iostream>
#include <nlohmann/json.hpp>
#include <variant>

#include "kvo/core/atomic_file.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/press_parameters.hpp"
#include "kvo/core/progress.hpp"
#include "kvo/core/text_list.hpp"
#include "kvo/core/trace_io.hpp"
#include "kvo/oracle/prefill_run.hpp"
#include "table.hpp"

namespace kvo::cli {

std::vector<double> PressArgs::ratio_list() const { return parse_number_list(ratios, "compression_ratio"); }

std::vector<PressOptions> PressArgs::build() const { return press_grid(presses, ratio_list(), defaults); }

void add_press_parameter_options(CLI::App* cmd, PressOptions& parameters) {
  const std::string group = "Press options (kvpress's names and defaults)";
  for (const PressParameterEntry& e : press_parameter_table())  // the one table of press parameters
    std::visit(
        [&](auto field) {
          cmd->add_option(std::string(e.flag), parameters.*field, std::string(e.help))
              ->capture_default_str()
              ->group(group);
        },
        e.field);
}

void add_press_options(CLI::App* cmd, PressArgs& a) {
  const std::string group = "Press options (kvpress's names and defaults)";
  cmd->add_option("--presses", a.presses, "comma-separated kvpress presses, or all (kvoracle presses lists them)")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--compression-ratio", a.ratios,
                  "fractions of the prompt's keys removed (kvpress's compression_ratio)")
      ->capture_default_str()
      ->group(group);
  add_press_parameter_options(cmd, a.defaults);
  cmd->add_flag("--output-fidelity,!--no-output-fidelity", a.output_fidelity,
                "oracle --prefill: measure each kept set's attention-output error and the output bound (one more pass "
                "over the following queries per KV head)")
      ->capture_default_str()
      ->group(group);
}

int run_prefill_oracle(const PrefillArgs& a, const Global& g) {
  const Trace tr = read_trace(a.trace);
  PrefillOracleRequest req;
  req.prompt_len = a.prompt_len;
  req.presses = a.press.presses;
  req.ratios = a.press.ratio_list();
  req.press = a.press.defaults;
  req.output_fidelity = a.press.output_fidelity;
  req.layers = a.layers;
  req.threads = g.threads;
  req.validate(tr);
  Progress bar("prefill", static_cast<long>(a.layers.empty() ? tr.n_layers : static_cast<int>(a.layers.size())),
               !g.quiet);
  req.on_layer = [&bar] { bar.tick(); };
  const PrefillOracleResult res = run_prefill_oracle(tr, req);
  bar.finish();
  std::cout << "prefill compression of " << a.trace << ": prompt " << a.prompt_len << " tokens, " << res.following
            << " following queries, " << res.layers.size() << " layers x " << res.kv_heads << " KV heads\n"
            << "objective: the following queries' attention mass on the kept prompt keys (mean over each KV head's "
               "group); optimum: the k heaviest prompt keys (exact, LP-dual certified)\n";
  if (a.press.output_fidelity && !res.fidelity)
    std::cout << "output error: not measured, a layer of the trace holds no values (dense attention only)\n";
  if (res.fidelity)
    std::cout << "output error: |o_t(kept) - o_t(full)|, mean over the following queries and the group; "
                 "references at the same k: the mass optimum and the minimiser of the bound E <= B (docs/presses.md)\n";
  Table t({"press", "compression", "mean k", "mean of optimum", "worst unit", "where", "mean overlap with opt",
           "mean prompt mass kept", "optimum's", "output error", "mass opt's", "bound opt's"});
  for (const PrefillPressSummary& s : res.summary)
    t.row({press_name(s.press), fmt(s.compression_ratio, 3), fmt(s.mean_k, 4), fmt(s.fraction), fmt(s.worst), s.where,
           fmt(s.overlap), fmt(s.share), fmt(s.optimum_share), res.fidelity ? fmt(s.output_error) : "-",
           res.fidelity ? fmt(s.mass_optimum_error) : "-", res.fidelity ? fmt(s.bound_optimum_error) : "-"});
  t.print(std::cout);
  if (!a.json.empty()) {
    write_file_atomic(a.json, res.to_json(a.trace).dump(1) + "\n");
    std::cout << "results: " << a.json << '\n';
  }
  return 0;
}

}  // namespace kvo::cli

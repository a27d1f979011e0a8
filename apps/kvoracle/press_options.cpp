#include "press_options.hpp"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "kvo/core/atomic_file.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/parallel.hpp"
#include "kvo/core/progress.hpp"
#include "kvo/core/trace_io.hpp"
#include "kvo/dist/team.hpp"
#include "kvo/oracle/prefill_oracle.hpp"
#include "table.hpp"

namespace kvo::cli {
namespace {

nlohmann::json finite_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

}  // namespace

std::vector<PressOptions> PressArgs::build() const {
  std::vector<PressOptions> out;
  require(!ratios.empty(), "--compression-ratio: give at least one ratio");
  for (const PressId id : parse_press_list(presses))
    for (const double r : ratios) {
      require(r >= 0 && r < 1,
              "--compression-ratio " + fmt(r) + " is outside [0, 1) (kvpress's rule: the fraction removed)");
      PressOptions o = defaults;
      o.id = id;
      o.compression_ratio = r;
      out.push_back(o);
    }
  return out;
}

void add_press_options(CLI::App* cmd, PressArgs& a) {
  const std::string group = "Press options (kvpress's names and defaults)";
  cmd->add_option("--presses", a.presses, "comma-separated kvpress presses, or all (kvoracle presses lists them)")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--compression-ratio", a.ratios,
                  "fractions of the prompt's keys removed (kvpress's compression_ratio)")
      ->delimiter(',')
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--window-size", a.defaults.window_size, "snapkv, pyramidkv: last queries scored and kept")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--kernel-size", a.defaults.kernel_size, "snapkv, pyramidkv: pooling kernel (odd)")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--beta", a.defaults.beta, "pyramidkv: pyramid steepness")->capture_default_str()->group(group);
  cmd->add_option("--n-sink", a.defaults.n_sink, "streaming_llm, lagkv, cur: first tokens kept")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--lag-size", a.defaults.lag_size, "lagkv: partition length")->capture_default_str()->group(group);
  cmd->add_option("--local-window-size", a.defaults.local_window_size, "cur: local normalisation window")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--chunk-size", a.defaults.chunk_size, "non_causal_attn: tile of the non-causal attention")
      ->capture_default_str()
      ->group(group);
  cmd->add_flag("--output-fidelity,!--no-output-fidelity", a.output_fidelity,
                "oracle --prefill: measure each kept set's attention-output error and the output bound (one more pass "
                "over the following queries per KV head)")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--press-seed", a.defaults.seed, "random: torch.manual_seed of RandomPress(seed=...)")
      ->capture_default_str()
      ->group(group);
}

int run_prefill_oracle(const PrefillArgs& a, const Global& g) {
  if (!dist::Team::world().root()) return 0;  // the prefill oracle runs on rank 0
  const Trace tr = read_trace(a.trace);
  require(a.prompt_len >= 1 && a.prompt_len < tr.n_tokens,
          "--prefill must be in [1, " + std::to_string(tr.n_tokens - 1) + "] (the trace has " +
              std::to_string(tr.n_tokens) + " tokens; queries must follow the prompt)");
  PrefillComparisonOptions co;
  co.prompt_len = a.prompt_len;
  co.presses = a.press.build();
  co.output_fidelity = a.press.output_fidelity;
  std::vector<int> layers = a.layers;
  if (layers.empty())
    for (int l = 0; l < tr.n_layers; ++l) layers.push_back(l);
  for (int l : layers)
    require(l >= 0 && l < tr.n_layers, "--layers: layer " + std::to_string(l) + " is not in the trace");
  // Refuse a press the trace cannot serve before any work (the first layer stands for all).
  for (const PressOptions& po : co.presses) run_press(press_layer_of(tr, layers.front(), a.prompt_len), po);
  const bool fidelity =
      a.press.output_fidelity && std::all_of(layers.begin(), layers.end(), [&](int l) { return tr.has_values(l); });
  std::vector<std::vector<PressVsOptimum>> per_layer(layers.size());
  Progress bar("prefill", static_cast<long>(layers.size()), !g.quiet);
  parallel_for(static_cast<int>(layers.size()), g.threads, [&](int x) {
    per_layer[static_cast<size_t>(x)] = compare_presses(tr, layers[static_cast<size_t>(x)], co);
    bar.tick();
  });
  bar.finish();
  struct Sum {
    double fraction = 0, share = 0, opt_share = 0, overlap = 0, worst = 2;
    double error = 0, mass_opt_error = 0, bound_opt_error = 0;  // output fidelity, per following query
    long units = 0, k = 0;
    std::string where;
  };
  std::map<std::pair<int, double>, Sum> sums;  // (press, ratio) in option order
  nlohmann::json records = nlohmann::json::array();
  for (const auto& rows : per_layer)
    for (const PressVsOptimum& r : rows) {
      Sum& s = sums[{static_cast<int>(r.press), r.compression_ratio}];
      s.fraction += r.fraction;
      s.share += r.prompt_share;
      s.opt_share += r.optimum_share;
      s.overlap += r.k > 0 ? static_cast<double>(r.overlap) / r.k : 1.0;
      s.k += r.k;
      ++s.units;
      const double per_query = 1.0 / (tr.n_tokens - a.prompt_len);
      s.error += r.output_error * per_query;
      s.mass_opt_error += r.mass_optimum_error * per_query;
      s.bound_opt_error += r.bound_optimum_error * per_query;
      if (r.fraction < s.worst) {
        s.worst = r.fraction;
        s.where = "L" + std::to_string(r.layer) + " KV" + std::to_string(r.kv_head);
      }
      records.push_back({{"press", press_name(r.press)},
                         {"compression_ratio", r.compression_ratio},
                         {"layer", r.layer},
                         {"kv_head", r.kv_head},
                         {"k", r.k},
                         {"value", r.value},
                         {"optimum", r.optimum},
                         {"fraction_of_optimum", r.fraction},
                         {"prompt_share", r.prompt_share},
                         {"optimum_prompt_share", r.optimum_share},
                         {"overlap", r.overlap},
                         {"output_error", finite_or_null(r.output_error)},
                         {"output_bound", finite_or_null(r.output_bound)},
                         {"mass_optimum_output_error", finite_or_null(r.mass_optimum_error)},
                         {"bound_optimum_output_error", finite_or_null(r.bound_optimum_error)},
                         {"bound_optimum_bound", finite_or_null(r.bound_optimum_bound)}});
    }
  std::cout << "prefill compression of " << a.trace << ": prompt " << a.prompt_len << " tokens, "
            << tr.n_tokens - a.prompt_len << " following queries, " << layers.size() << " layers x " << tr.n_kv_heads
            << " KV heads\n"
            << "objective: the following queries' attention mass on the kept prompt keys (mean over each KV head's "
               "group); optimum: the k heaviest prompt keys (exact, LP-dual certified)\n";
  if (a.press.output_fidelity && !fidelity)
    std::cout << "output error: not measured, a layer of the trace holds no values (dense attention only)\n";
  if (fidelity)
    std::cout << "output error: |o_t(kept) - o_t(full)|, mean over the following queries and the group; "
                 "references at the same k: the mass optimum and the minimiser of the bound E <= B (docs/presses.md)\n";
  Table t({"press", "compression", "mean k", "mean of optimum", "worst unit", "where", "mean overlap with opt",
           "mean prompt mass kept", "optimum's", "output error", "mass opt's", "bound opt's"});
  for (const PressOptions& po : co.presses) {
    const Sum& s = sums[{static_cast<int>(po.id), po.compression_ratio}];
    const double u = static_cast<double>(std::max(1L, s.units));
    t.row({press_name(po.id), fmt(po.compression_ratio, 3), fmt(static_cast<double>(s.k) / u, 4), fmt(s.fraction / u),
           fmt(s.worst), s.where, fmt(s.overlap / u), fmt(s.share / u), fmt(s.opt_share / u),
           fidelity ? fmt(s.error / u) : "-", fidelity ? fmt(s.mass_opt_error / u) : "-",
           fidelity ? fmt(s.bound_opt_error / u) : "-"});
  }
  t.print(std::cout);
  if (!a.json.empty()) {
    write_file_atomic(a.json, nlohmann::json{{"trace", a.trace},
                                             {"prompt_len", a.prompt_len},
                                             {"following_queries", tr.n_tokens - a.prompt_len},
                                             {"records", records}}
                                      .dump(1) +
                                  "\n");
    std::cout << "results: " << a.json << '\n';
  }
  return 0;
}

}  // namespace kvo::cli

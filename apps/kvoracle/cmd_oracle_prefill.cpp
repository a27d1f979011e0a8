#include "cmd_oracle_prefill.hpp"

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

int run_prefill_oracle(const PrefillArgs& a, const Global& g) {
  PrefillOracleRequest req = a.request.request();
  req.threads = g.threads;
  const Trace tr = read_trace(a.trace);
  req.validate(tr);
  Progress bar("prefill", static_cast<long>(req.layers.empty() ? tr.n_layers : static_cast<int>(req.layers.size())),
               !g.quiet);
  req.on_layer = [&bar] { bar.tick(); };
  const PrefillOracleResult res = run_prefill_oracle(tr, req);
  bar.finish();
  std::cout << "prefill compression of " << a.trace << ": prompt " << req.prompt_len << " tokens, " << res.following
            << " following queries, " << res.layers.size() << " layers x " << res.kv_heads << " KV heads\n"
            << "objective: the following queries' attention mass on the kept prompt keys (mean over each KV head's "
               "group); optimum: the k heaviest prompt keys (exact, LP-dual certified)\n";
  if (req.output_fidelity && !res.fidelity)
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

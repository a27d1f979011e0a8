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
  std::cout << res.report(req, a.trace).text();
  if (!a.json.empty()) {
    write_file_atomic(a.json, res.to_json(a.trace).dump(1) + "\n");
    std::cout << "results: " << a.json << '\n';
  }
  return 0;
}

}  // namespace kvo::cli

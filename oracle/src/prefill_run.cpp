#include "kvo/oracle/prefill_run.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "kvo/core/error.hpp"
#include "kvo/core/parallel.hpp"
#include "kvo/core/press_parameters.hpp"
#include "kvo/core/request_json.hpp"

namespace kvo {

namespace {

nlohmann::json finite_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

std::string number(double x) {
  std::ostringstream s;
  s << x;
  return s.str();
}

std::vector<int> chosen_layers(const Trace& tr, const std::vector<int>& layers) {
  std::vector<int> out = layers;
  if (out.empty())
    for (int l = 0; l < tr.n_layers; ++l) out.push_back(l);
  for (int l : out) require(l >= 0 && l < tr.n_layers, "layers: layer " + std::to_string(l) + " is not in the trace");
  return out;
}

}  // namespace

std::vector<PressOptions> press_grid(const std::string& presses, const std::vector<double>& ratios,
                                     const PressOptions& defaults) {
  std::vector<PressOptions> out;
  require(!ratios.empty(), "compression_ratio: give at least one ratio");
  for (const PressId id : parse_press_list(presses))
    for (const double r : ratios) {
      require(r >= 0 && r < 1,
              "compression_ratio " + number(r) + " is outside [0, 1) (kvpress's rule: the fraction removed)");
      PressOptions o = defaults;
      o.id = id;
      o.compression_ratio = r;
      out.push_back(o);
    }
  return out;
}

void PrefillOracleRequest::validate(const Trace& tr) const {
  require(prompt_len >= 1 && prompt_len < tr.n_tokens, "prompt_len must be in [1, " + std::to_string(tr.n_tokens - 1) +
                                                           "] (the trace has " + std::to_string(tr.n_tokens) +
                                                           " tokens; queries must follow the prompt)");
  const std::vector<PressOptions> grid = press_grid(presses, ratios, press);
  const std::vector<int> ls = chosen_layers(tr, layers);
  // Refuse a press the trace cannot serve before any work (the first layer stands for all).
  for (const PressOptions& po : grid) run_press(press_layer_of(tr, ls.front(), prompt_len), po);
}

const Schema<PrefillOracleRequest>& PrefillOracleRequest::schema() {
  using R = PrefillOracleRequest;
  static const Schema<R> schema(
      "prefill oracle request",
      fields<R>(
          {{member(&R::prompt_len, {.name = "prompt_len",
                                    .help = "prompt length P: the prompt is compressed once, queries P..n-1 follow"}),
            member(&R::presses, {.name = "presses", .help = "kvpress presses (comma-separated, or all)"}),
            member(&R::ratios, {.name = "compression_ratio",
                                .help = "fractions of the prompt's keys removed (kvpress's compression_ratio), each "
                                        "in [0, 1)",
                                .renamed_from = "ratios"}),
            member(&R::output_fidelity, {.name = "output_fidelity",
                                         .help = "each set's attention-output error and the output bound "
                                                 "(--no-output-fidelity: leave them out)",
                                         .flag = "--no-output-fidelity",
                                         .switch_text = "false"}),
            member(&R::layers, {.name = "layers", .help = "layers to run (default: all)"}),
            member(&R::threads, {.name = "threads", .help = "threads (0: all cores)", .cli = false})},
           nested("press", &R::press, press_parameters_schema(), "Press parameters",
                  "prefill oracle request: press")}));
  return schema;
}

nlohmann::json PrefillOracleRequest::to_json() const { return schema().to_json(*this); }
PrefillOracleRequest PrefillOracleRequest::from_json(const nlohmann::json& j) { return schema().from_json(j); }

nlohmann::json PrefillOracleResult::to_json(const std::string& trace) const {
  return {{"trace", trace}, {"prompt_len", prompt_len}, {"following_queries", following}, {"records", records()}};
}

nlohmann::json PrefillOracleResult::records() const {
  nlohmann::json out = nlohmann::json::array();
  for (const PressVsOptimum& r : rows)
    out.push_back({{"press", press_name(r.press)},
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
  return out;
}

PrefillOracleResult run_prefill_oracle(const Trace& tr, const PrefillOracleRequest& request) {
  request.validate(tr);
  PrefillComparisonOptions co;
  co.prompt_len = request.prompt_len;
  co.presses = press_grid(request.presses, request.ratios, request.press);
  co.output_fidelity = request.output_fidelity;
  PrefillOracleResult res;
  res.prompt_len = request.prompt_len;
  res.following = tr.n_tokens - request.prompt_len;
  res.kv_heads = tr.n_kv_heads;
  res.layers = chosen_layers(tr, request.layers);
  res.fidelity = request.output_fidelity &&
                 std::all_of(res.layers.begin(), res.layers.end(), [&](int l) { return tr.has_values(l); });
  std::vector<std::vector<PressVsOptimum>> per_layer(res.layers.size());
  parallel_for(static_cast<int>(res.layers.size()), request.threads, [&](int x) {
    per_layer[static_cast<size_t>(x)] = compare_presses(tr, res.layers[static_cast<size_t>(x)], co);
    if (request.on_layer) request.on_layer();
  });
  std::map<std::pair<int, double>, PrefillPressSummary> sums;  // (press, ratio)
  const double per_query = 1.0 / res.following;
  for (const auto& rows : per_layer)
    for (const PressVsOptimum& r : rows) {
      res.rows.push_back(r);
      PrefillPressSummary& s = sums[{static_cast<int>(r.press), r.compression_ratio}];
      s.fraction += r.fraction;
      s.share += r.prompt_share;
      s.optimum_share += r.optimum_share;
      s.overlap += r.k > 0 ? static_cast<double>(r.overlap) / r.k : 1.0;
      s.mean_k += r.k;
      ++s.units;
      s.output_error += r.output_error * per_query;
      s.mass_optimum_error += r.mass_optimum_error * per_query;
      s.bound_optimum_error += r.bound_optimum_error * per_query;
      if (r.fraction < s.worst) {
        s.worst = r.fraction;
        std::ostringstream where;  // (GCC 12 warns falsely on the chained string concatenation here)
        where << 'L' << r.layer << " KV" << r.kv_head;
        s.where = where.str();
      }
    }
  for (const PressOptions& po : co.presses) {
    PrefillPressSummary s = sums[{static_cast<int>(po.id), po.compression_ratio}];
    s.press = po.id;
    s.compression_ratio = po.compression_ratio;
    const double u = static_cast<double>(std::max(1L, s.units));
    for (double* x : {&s.mean_k, &s.fraction, &s.overlap, &s.share, &s.optimum_share, &s.output_error,
                      &s.mass_optimum_error, &s.bound_optimum_error})
      *x /= u;
    res.summary.push_back(s);
  }
  return res;
}

}  // namespace kvo

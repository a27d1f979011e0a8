#include "kvo/oracle/allocation.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <numeric>

#include "kvo/core/adakv.hpp"
#include "kvo/core/budget.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/press.hpp"
#include "kvo/core/press_parameters.hpp"
#include "kvo/core/request_json.hpp"
#include "kvo/core/text_list.hpp"
#include "kvo/oracle/offline_pages.hpp"

namespace kvo {

int resolve_allocation_floor(const std::string& text, int k) {
  Amount a;
  try {
    a = Amount::parse(text, /*allow_zero=*/true);
  } catch (const Error& e) {
    throw Error("floor: " + std::string(e.what()));
  }
  return a.value == 0 ? 0 : a.resolve(k);
}

std::vector<int> AllocationRequest::chosen_layers(const Trace& tr) const {
  std::vector<int> out = layers;
  if (out.empty())
    for (int l = 0; l < tr.n_layers; ++l) out.push_back(l);
  for (int l : out) require(l >= 0 && l < tr.n_layers, "layers: layer " + std::to_string(l) + " is not in the trace");
  return out;
}

std::string to_string(AllocationProtocol protocol) {
  return protocol == AllocationProtocol::Prefill ? "prefill" : "decoding";
}

AllocationProtocol parse_allocation_protocol(std::string_view name) {
  if (name == "prefill") return AllocationProtocol::Prefill;
  require(name == "decoding", "unknown protocol '" + std::string(name) + "' (known: prefill, decoding)");
  return AllocationProtocol::Decoding;
}

std::string to_string(DecodingSolver solver) { return solver == DecodingSolver::Dense ? "dense" : "column-generation"; }

DecodingSolver parse_decoding_solver(std::string_view name) {
  if (name == "dense") return DecodingSolver::Dense;
  require(name == "column-generation", "unknown solver '" + std::string(name) + "' (known: dense, column-generation)");
  return DecodingSolver::ColumnGeneration;
}

std::vector<BudgetScope> AllocationRequest::chosen_scopes() const {
  if (!scopes.empty()) return scopes;
  if (protocol == AllocationProtocol::Prefill) return parse_budget_scopes("all");
  return {BudgetScope::Head, BudgetScope::Layer};
}

void AllocationRequest::validate(const Trace& tr) const {
  chosen_layers(tr);
  require(!page_sizes.empty(), "page_sizes: give at least one page size (1: tokens)");
  for (int b : page_sizes)
    require(b >= 1 && std::has_single_bit(static_cast<unsigned>(b)),
            "page size " + std::to_string(b) + " is not a positive power of two");
  if (protocol == AllocationProtocol::Decoding) {
    const std::vector<BudgetScope> chosen = chosen_scopes();
    const bool layerwise = std::find(chosen.begin(), chosen.end(), BudgetScope::Layerwise) != chosen.end();
    require(!layerwise, "the layerwise scope is computed for the prefill protocol only (decoding: head, layer, model)");
    require(resolve_allocation_floor(floor, 1) == 0, "floor is computed for the prefill protocol only");
    require(presses.empty() && alpha_safeguard.empty(),
            "presses and alpha_safeguard are measured under the prefill protocol only");
    require(layer_ratios.empty(),
            "layer_ratios (PerLayerCompressionPress) is measured under the prefill protocol only");
    if (!periodic()) {
      require(targets.empty(), "target is read with interval only (eviction at every step takes budgets)");
      require(prompt_len == 0, "prompt_len is read by the prefill protocol and by periodic compression (interval)");
      for (const auto& [k, r] : decoding_budgets(tr))
        for (int b : page_sizes) page_shape(k, r, b);
      return;
    }
    require(!targets.empty(),
            "interval needs target: the tokens each unit keeps after a compression "
            "(kvpress's target_size)");
    require(budgets.empty(), "budgets is read by eviction at every step; with interval, give target");
    require(page_sizes == std::vector<int>{1},
            "page sizes are computed for eviction at every step and for the prefill protocol, not with interval");
    require(
        solver == DecodingSolver::Dense,
        "solver column-generation solves eviction at every step; periodic compression (interval) is solved densely");
    for (int n : intervals) require(n >= 1, "compression interval " + std::to_string(n) + " must be at least 1 step");
    require(prompt_len >= 0 && prompt_len < tr.n_tokens,
            "prompt_len must be in [0, " + std::to_string(tr.n_tokens - 1) + "] for periodic compression");
    periodic_targets(tr);
    return;
  }
  require(prompt_len >= 1 && prompt_len < tr.n_tokens, "prompt_len must be in [1, " + std::to_string(tr.n_tokens - 1) +
                                                           "] (the trace has " + std::to_string(tr.n_tokens) +
                                                           " tokens; queries must follow the prompt)");
  require(solver == DecodingSolver::Dense, "solver is read by the decoding protocol only");
  require(!ratios.empty(), "compression_ratio: give at least one ratio");
  for (double r : ratios) {
    require(r >= 0 && r < 1,
            "compression_ratio " + join_numbers({r}) + " is outside [0, 1) (kvpress's rule: the fraction removed)");
    const int k = press_n_kept(prompt_len, r);
    const int f = resolve_allocation_floor(floor, k);
    require(f <= k, "floor " + floor + " is " + std::to_string(f) +
                        " slots per unit, more than the per-unit budget k = " + std::to_string(k) +
                        " at compression ratio " + join_numbers({r}) + ": the floors would exceed the total budget");
    for (int b : page_sizes)
      require(b <= k, "page size " + std::to_string(b) + " exceeds the per-unit budget k = " + std::to_string(k) +
                          " at compression ratio " + join_numbers({r}) + ": no whole page fits");
  }
  require(alpha_safeguard.empty() || !presses.empty(),
          "alpha_safeguard wraps each of presses in AdaKV: give presses (e.g. --presses snapkv)");
  for (double a : alpha_safeguard) adakv_safeguard(1, a);
  require(layer_ratios.empty() || !presses.empty(),
          "layer_ratios wraps each of presses in PerLayerCompressionPress: give presses (e.g. --presses snapkv)");
  if (presses.empty()) return;
  const std::vector<int> chosen = chosen_layers(tr);
  require(layer_ratios.empty() || layer_ratios.size() == chosen.size(),
          "layer_ratios: one ratio per layer, in the order of layers: " + std::to_string(chosen.size()) + " layers, " +
              std::to_string(layer_ratios.size()) + " given");
  for (double r : layer_ratios)
    require(r >= 0 && r < 1,
            "layer ratio " + join_numbers({r}) + " is outside [0, 1) (kvpress's rule: the fraction removed)");
  // Refuse a press the trace cannot serve before any work (the first layer stands for all).
  const int first = chosen.front();
  std::vector<double> every_ratio = ratios;  // each distinct ratio once (layer ratios repeat)
  every_ratio.insert(every_ratio.end(), layer_ratios.begin(), layer_ratios.end());
  std::sort(every_ratio.begin(), every_ratio.end());
  every_ratio.erase(std::unique(every_ratio.begin(), every_ratio.end()), every_ratio.end());
  for (PressId id : parse_press_list(presses))
    for (double r : every_ratio) {
      PressOptions o = press;
      o.id = id;
      o.compression_ratio = r;
      run_press(press_layer_of(tr, first, prompt_len), o);
    }
}

namespace {

// (k, r) per amount of `list`, resolved against the trace's n.
std::vector<std::pair<int, int>> resolve_amounts(const std::vector<std::string>& list, const char* what,
                                                 const std::string& recent, int n) {
  std::vector<std::pair<int, int>> out;
  for (const std::string& text : list) {
    const ResolvedBudget rb = Budget::parse(text, recent).resolve(n, 0, 0);
    require(rb.total <= n,
            std::string(what) + " " + text + " is more than the trace's " + std::to_string(n) + " tokens");
    out.emplace_back(rb.total, rb.recent);
  }
  return out;
}

}  // namespace

std::vector<std::pair<int, int>> AllocationRequest::decoding_budgets(const Trace& tr) const {
  return resolve_amounts(budgets.empty() ? std::vector<std::string>{"20%"} : budgets, "budget", recent, tr.n_tokens);
}

std::vector<std::pair<int, int>> AllocationRequest::periodic_targets(const Trace& tr) const {
  return resolve_amounts(targets, "target", recent, tr.n_tokens);
}

const Schema<AllocationRequest>& AllocationRequest::schema() {
  using R = AllocationRequest;
  static const Schema<R> schema(
      "allocation request",
      fields<R>(
          {{custom<R>(
                {.name = "protocol",
                 .help = "prefill (the prompt compressed once) or decoding (irreversible eviction at every "
                         "step, offline optimum)"},
                "prefill|decoding", [](R& r, std::string_view t) { r.protocol = parse_allocation_protocol(t); },
                [](const R& r) { return to_string(r.protocol); }),
            member(&R::prompt_len,
                   {.name = "prompt_len",
                    .help = "prefill: prompt length P, compressed once; the queries after it weigh its keys "
                            "(periodic decoding: the steps before the first decoding step, default 0)"}),
            member(&R::budgets,
                   {.name = "budgets",
                    .help = "decoding, every step: each unit's budget k, comma-separated (tokens, or shares of n: "
                            "20%); empty: 20%"}),
            member(&R::intervals,
                   {.name = "interval",
                    .help = "decoding, periodic compression (kvpress's DecodingPress): compress every N decoding "
                            "steps after the prompt (--prompt-len), comma-separated intervals; needs --target",
                    .renamed_from = "intervals"}),
            member(&R::targets, {.name = "target",
                                 .help = "decoding with --interval: tokens each unit keeps after a compression "
                                         "(kvpress's target_size), comma-separated (tokens, or shares of n)",
                                 .renamed_from = "targets"}),
            member(&R::recent,
                   {.name = "recent",
                    .help = "decoding: each unit's forced recent window r (tokens, or a share of k); 0: none"}),
            custom<R>(
                {.name = "solver",
                 .help = "decoding, every step: dense (each unit's n x n weights in memory) or "
                         "column-generation (attention rows recomputed from q and k, O(n (d + candidates)) "
                         "memory per unit; the same optimum)"},
                "dense|column-generation", [](R& r, std::string_view t) { r.solver = parse_decoding_solver(t); },
                [](const R& r) { return to_string(r.solver); }),
            member(&R::ratios, {.name = "compression_ratio",
                                .help = "prefill: fractions of each unit's prompt keys removed (kvpress's "
                                        "compression_ratio): the per-unit share k",
                                .renamed_from = "ratios"}),
            member(&R::scopes, {.name = "scopes",
                                .help = "who shares the budget: head, layer, layerwise (prefill), model "
                                        "(comma-separated), or all; default: all for prefill, head,layer for "
                                        "decoding"}),
            member(&R::floor, {.name = "floor",
                               .help = "prefill: the least any unit keeps: tokens, or a share of k (20%: Ada-KV's "
                                       "alpha_safeguard); 0: none"}),
            member(&R::page_sizes, {.name = "page_sizes",
                                    .help = "pages of b positions evicted whole (powers of two, comma-separated; "
                                            "decoding: not with --interval); 1: tokens"}),
            member(&R::layers, {.name = "layers",
                                .help = "comma-separated layers (default: all); the model scope shares over these"}),
            member(&R::presses,
                   {.name = "presses",
                    .help = "prefill: kvpress presses whose allocations are measured against the optimum of the same "
                            "memory, each alone (pyramidkv: its pyramid of layer budgets) and under AdaKV at each "
                            "--alpha-safeguard (comma-separated, or all)"}),
            member(&R::alpha_safeguard, {.name = "alpha_safeguard",
                                         .help = "prefill, with --presses: AdaKVPress's alpha_safeguard values, each "
                                                 "wrapping every press (comma-separated)"}),
            member(&R::layer_ratios,
                   {.name = "layer_ratios",
                    .help = "prefill, with --presses: kvpress's PerLayerCompressionPress around every press, one "
                            "compression_ratio per layer (comma-separated, in the order of --layers)"}),
            member(&R::threads, {.name = "threads", .help = "threads (0: all cores)", .cli = false})},
           nested("press", &R::press, press_parameters_schema(), "Press parameters", "allocation request: press")}));
  return schema;
}

nlohmann::json AllocationRequest::to_json() const { return schema().to_json(*this); }
AllocationRequest AllocationRequest::from_json(const nlohmann::json& j) { return schema().from_json(j); }

}  // namespace kvo

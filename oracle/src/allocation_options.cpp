#include "kvo/oracle/allocation_options.hpp"

#include <algorithm>
#include <array>
#include <variant>
#include <vector>

#include "kvo/core/error.hpp"
#include "kvo/core/press_parameters.hpp"
#include "kvo/core/text_list.hpp"

namespace kvo {
namespace {

using R = AllocationRequest;

std::string join_ints(const std::vector<int>& v) {
  std::vector<std::string> items;
  for (int x : v) items.push_back(std::to_string(x));
  return join_list(items);
}

std::vector<AllocationOptionEntry> build_options() {
  std::vector<AllocationOptionEntry> options = {
      {"protocol", "--protocol",
       "prefill (the prompt compressed once) or decoding (irreversible eviction at every step, offline optimum)", false,
       [](R& r, std::string_view t) { r.protocol = parse_allocation_protocol(t); },
       [](const R& r) { return to_string(r.protocol); }},
      {"prompt_len", "--prompt-len",
       "prefill: prompt length P, compressed once; the queries after it weigh its keys (periodic decoding: the steps "
       "before the first decoding step, default 0)",
       false, [](R& r, std::string_view t) { r.prompt_len = parse_int(t, "prompt_len"); },
       [](const R& r) { return r.prompt_len > 0 ? std::to_string(r.prompt_len) : std::string(); }},
      {"budgets", "--budgets",
       "decoding, every step: each unit's budget k, comma-separated (tokens, or shares of n: 20%)", false,
       [](R& r, std::string_view t) { r.budgets = std::string(t); },
       [](const R& r) { return r.budgets.empty() && !r.periodic() ? std::string("20%") : r.budgets; }},
      {"interval", "--interval",
       "decoding, periodic compression (kvpress's DecodingPress): compress every N decoding steps after the prompt "
       "(--prompt-len), comma-separated intervals; needs --target",
       false, [](R& r, std::string_view t) { r.intervals = parse_int_list(t, "interval"); },
       [](const R& r) { return join_ints(r.intervals); }},
      {"target", "--target",
       "decoding with --interval: tokens each unit keeps after a compression (kvpress's target_size), comma-separated "
       "(tokens, or shares of n)",
       false, [](R& r, std::string_view t) { r.targets = std::string(t); }, [](const R& r) { return r.targets; }},
      {"recent", "--recent", "decoding: each unit's forced recent window r (tokens, or a share of k); 0: none", false,
       [](R& r, std::string_view t) { r.recent = std::string(t); }, [](const R& r) { return r.recent; }},
      {"solver", "--solver",
       "decoding, every step: dense (each unit's n x n weights in memory) or column-generation (attention rows "
       "recomputed from q and k, O(n (d + candidates)) memory per unit; the same optimum)",
       false, [](R& r, std::string_view t) { r.solver = parse_decoding_solver(t); },
       [](const R& r) { return to_string(r.solver); }},
      {"compression_ratio", "--compression-ratio",
       "prefill: fractions of each unit's prompt keys removed (kvpress's compression_ratio): the per-unit share k",
       false, [](R& r, std::string_view t) { r.ratios = parse_number_list(t, "compression_ratio"); },
       [](const R& r) { return join_numbers(r.ratios); }},
      {"scopes", "--scopes",
       "who shares the budget: head, layer, layerwise (prefill), model (comma-separated), or all; default: all for "
       "prefill, head,layer for decoding",
       false, [](R& r, std::string_view t) { r.scopes = parse_budget_scopes(t); },
       [](const R& r) { return join_budget_scopes(r.scopes); }},
      {"floor", "--floor",
       "prefill: the least any unit keeps: tokens, or a share of k (20%: Ada-KV's alpha_safeguard); 0: none", false,
       [](R& r, std::string_view t) { r.floor = std::string(t); }, [](const R& r) { return r.floor; }},
      {"page_sizes", "--page-sizes",
       "pages of b positions evicted whole (powers of two, comma-separated; decoding: not with --interval); 1: tokens",
       false, [](R& r, std::string_view t) { r.page_sizes = parse_int_list(t, "page_sizes"); },
       [](const R& r) { return join_ints(r.page_sizes); }},
      {"layers", "--layers", "comma-separated layers (default: all); the model scope shares over these", false,
       [](R& r, std::string_view t) { r.layers = t.empty() ? std::vector<int>{} : parse_int_list(t, "layers"); },
       [](const R& r) { return join_ints(r.layers); }},
      {"presses", "--presses",
       "prefill: kvpress presses whose allocations are measured against the optimum of the same memory, each alone "
       "(pyramidkv: its pyramid of layer budgets) and under AdaKV at each --alpha-safeguard (comma-separated, or all)",
       false, [](R& r, std::string_view t) { r.presses = std::string(t); }, [](const R& r) { return r.presses; }},
      {"alpha_safeguard", "--alpha-safeguard",
       "prefill, with --presses: AdaKVPress's alpha_safeguard values, each wrapping every press (comma-separated)",
       false, [](R& r, std::string_view t) { r.alpha_safeguard = parse_number_list(t, "alpha_safeguard"); },
       [](const R& r) { return join_numbers(r.alpha_safeguard); }},
      {"layer_ratios", "--layer-ratios",
       "prefill, with --presses: kvpress's PerLayerCompressionPress around every press, one compression_ratio per "
       "layer (comma-separated, in the order of --layers)",
       false, [](R& r, std::string_view t) { r.layer_ratios = parse_number_list(t, "layer_ratios"); },
       [](const R& r) { return join_numbers(r.layer_ratios); }},
  };
  for (const PressParameterEntry& e : press_parameter_table())  // read by --presses
    options.push_back(
        {e.name, e.flag, e.help, false,
         [&e](R& r, std::string_view t) { set_press_parameter(r.press, e, parse_int(t, std::string(e.name))); },
         [&e](const R& r) { return std::visit([&](auto field) { return std::to_string(r.press.*field); }, e.field); }});
  return options;
}

const std::vector<AllocationOptionEntry>& options_table() {
  static const std::vector<AllocationOptionEntry> table = build_options();
  return table;
}

}  // namespace

std::span<const AllocationOptionEntry> allocation_option_table() { return options_table(); }

void set_allocation_option(AllocationRequest& request, std::string_view name, std::string_view text) {
  const auto& table = options_table();
  const auto it = std::find_if(table.begin(), table.end(), [&](const auto& e) { return e.name == name; });
  if (it == table.end()) {
    std::vector<std::string> known;
    for (const auto& e : table) known.emplace_back(e.name);
    throw Error("unknown allocation option '" + std::string(name) + "' (known: " + join_list(known) + ")");
  }
  it->set(request, text);
}

}  // namespace kvo

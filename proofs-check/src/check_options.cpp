#include "kvo/proofs_check/check_options.hpp"

#include "kvo/core/budget.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/text_list.hpp"

namespace kvo {

namespace {

using O = TraceChecksOptions;
constexpr CheckSizeEntry kSizes[] = {
    {"samples", "--samples", &O::samples, "sampled sets per submodularity scan (C5, C6, C12)"},
    {"sampled_steps", "--sampled-steps", &O::sampled_steps, "steps per head for the brute-force checks"},
    {"ground", "--ground", &O::ground, "ground-set size of the brute-force checks (<= 16)"},
    {"small_k", "--small-k", &O::small_k, "budget of the brute-force checks"},
    {"sweep_heads", "--sweep-heads", &O::sweep_heads, "heads per layer in the budget sweep"},
    {"offline_tokens", "--offline-tokens", &O::offline_tokens,
     "C19, D10 and the sweep's OPT_dyn solve the offline optimum on the first N steps (0: every step)"},
    {"loss_heads", "--loss-heads", &O::loss_heads,
     "key matrices (first, middle, last layer) of the loss/Hessian checks C23-C26; 0 skips them"},
    {"loss_random", "--loss-random", &O::loss_random, "random instances of the loss/Hessian checks"},
    {"power_law_bootstrap", "--power-law-bootstrap", &O::power_law_bootstrap,
     "E2: bootstrap samples of each head's power-law goodness of fit (0: no p-value)"},
    {"cooccurrence_window", "--cooccurrence-window", &O::cooccurrence_window,
     "E3: two words co-occur when at most this many tokens apart"},
};

}  // namespace

std::span<const CheckSizeEntry> check_size_table() { return kSizes; }

const CheckSizeEntry* find_check_size(std::string_view name) {
  for (const auto& e : kSizes)
    if (e.name == name) return &e;
  return nullptr;
}

std::vector<double> parse_sweep(std::string_view text) {
  std::vector<double> out;
  if (text == "none") return out;
  for (const auto& item : split_list(text, "sweep")) {
    const Amount b = Amount::parse(item);
    require(b.is_ratio, "sweep budgets must be fractions of n (0.1 or 10%), not '" + item + "'");
    out.push_back(b.value);
  }
  return out;
}

std::string sweep_text(const std::vector<double>& sweep) { return sweep.empty() ? "none" : join_numbers(sweep); }

}  // namespace kvo

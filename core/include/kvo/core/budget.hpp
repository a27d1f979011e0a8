// KV budgets: an absolute token count or a ratio of the sequence length, split into a heavy
// part and a recent window as the H2O code does, with per-layer and per-head overrides.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kvo {

// One amount: either an absolute number of tokens or a fraction of a reference length.
struct Amount {
  bool is_ratio = false;
  double value = 0.0;  // tokens when !is_ratio, fraction in (0, 1] when is_ratio

  // Parses "64" (tokens), "0.2" or "20%" (ratio). Throws kvo::Error on bad text.
  static Amount parse(const std::string& text, bool allow_zero = false);
  // Resolves against a reference length, rounding down but never below 1 for a positive ratio.
  int resolve(int reference) const;
  std::string str() const;
};

// The resolved budget of one (layer, head): total = heavy + recent cache slots.
struct ResolvedBudget {
  int total = 0;
  int heavy = 0;
  int recent = 0;
};

// A budget with an optional recent-window part and per-layer / per-(layer, head) overrides.
class Budget {
 public:
  Budget() = default;
  explicit Budget(Amount total, std::optional<Amount> recent = std::nullopt);
  // The one parser of budget text: a total ("64", "0.2", "20%"), an optional recent part (empty:
  // half the total; tokens, or a ratio of the total) and overrides ("L3=0.1", "L3H2=32").
  static Budget parse(const std::string& total, const std::string& recent = "",
                      const std::vector<std::string>& overrides = {});
  // The same recent part and overrides with another total (budget sweeps).
  Budget with_total(Amount total) const;
  bool has_overrides() const { return !layer_.empty() || !head_.empty(); }

  // Parses "L3=0.1" (layer 3) or "L3H2=32" (layer 3, head 2) into an override.
  void add_override(const std::string& spec);
  void set_layer(int layer, Amount total);
  void set_head(int layer, int head, Amount total);

  // Resolves for a sequence of n tokens. The recent part defaults to half of the total
  // (H2O §5.1: "evenly assigns the caching budget"); a recent ratio is a fraction of the total.
  // Throws kvo::Error when the total is <= 0 or larger than n.
  ResolvedBudget resolve(int n, int layer, int head) const;

  const Amount& total() const { return total_; }
  std::string str() const;

 private:
  Amount total_{true, 0.2};
  std::optional<Amount> recent_;
  std::map<int, Amount> layer_;
  std::map<std::pair<int, int>, Amount> head_;
};

}  // namespace kvo

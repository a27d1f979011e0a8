#include "kvo/core/budget.hpp"

#include <cmath>
#include <cstdlib>
#include <regex>
#include <sstream>

#include "kvo/core/error.hpp"

namespace kvo {

Amount Amount::parse(const std::string& text, bool allow_zero) {
  std::string t = text;
  bool percent = false;
  if (!t.empty() && t.back() == '%') {
    percent = true;
    t.pop_back();
  }
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  require(!t.empty() && end == t.c_str() + t.size() && std::isfinite(v),
          "budget '" + text + "' is not a number, a ratio or a percentage");
  require(v > 0 || (allow_zero && v == 0), "budget '" + text + "' must be > 0");
  Amount a;
  if (percent) {
    require(v <= 100, "budget '" + text + "' is above 100%");
    a.is_ratio = true;
    a.value = v / 100.0;
  } else if (t.find_first_of(".eE") != std::string::npos) {
    require(v <= 1, "budget '" + text + "' has a fraction but is > 1: give a ratio in (0,1] or a whole token count");
    a.is_ratio = true;
    a.value = v;
  } else {
    a.value = v;
  }
  return a;
}

int Amount::resolve(int reference) const {
  if (!is_ratio) return static_cast<int>(value);
  const int r = static_cast<int>(std::floor(value * reference + 1e-9));
  return r < 1 ? 1 : r;
}

std::string Amount::str() const {
  std::ostringstream o;
  if (is_ratio)
    o << value * 100 << "%";
  else
    o << static_cast<long long>(value);
  return o.str();
}

Budget::Budget(Amount total, std::optional<Amount> recent) : total_(total), recent_(recent) {}

Budget Budget::parse(const std::string& total, const std::string& recent, const std::vector<std::string>& overrides) {
  std::optional<Amount> r;
  if (!recent.empty()) r = Amount::parse(recent, /*allow_zero=*/true);
  Budget b(Amount::parse(total), r);
  for (const auto& o : overrides) b.add_override(o);
  return b;
}

Budget Budget::with_total(Amount total) const {
  Budget b = *this;
  b.total_ = total;
  return b;
}

void Budget::add_override(const std::string& spec) {
  static const std::regex re(R"(L(\d+)(?:H(\d+))?=(.+))");
  std::smatch m;
  require(std::regex_match(spec, m, re), "budget override '" + spec + "' must look like L3=0.1 or L3H2=32");
  const int layer = std::stoi(m[1].str());
  const Amount a = Amount::parse(m[3].str());
  if (m[2].matched)
    set_head(layer, std::stoi(m[2].str()), a);
  else
    set_layer(layer, a);
}

void Budget::set_layer(int layer, Amount total) { layer_[layer] = total; }
void Budget::set_head(int layer, int head, Amount total) { head_[{layer, head}] = total; }

ResolvedBudget Budget::resolve(int n, int layer, int head) const {
  Amount a = total_;
  if (auto it = layer_.find(layer); it != layer_.end()) a = it->second;
  if (auto it = head_.find({layer, head}); it != head_.end()) a = it->second;
  ResolvedBudget b;
  b.total = a.resolve(n);
  require(b.total >= 1, "budget " + a.str() + " resolves to " + std::to_string(b.total) + " tokens; it must be >= 1");
  require(b.total <= n, "budget " + a.str() + " (" + std::to_string(b.total) +
                            " tokens) is larger than the sequence (" + std::to_string(n) + " tokens)");
  if (recent_) {
    b.recent = recent_->is_ratio ? static_cast<int>(std::floor(recent_->value * b.total + 1e-9))
                                 : static_cast<int>(recent_->value);
  } else {
    b.recent = b.total / 2;
  }
  require(b.recent <= b.total,
          "recent window " + std::to_string(b.recent) + " is larger than the budget " + std::to_string(b.total));
  b.heavy = b.total - b.recent;
  return b;
}

std::string Budget::str() const {
  std::string s = total_.str();
  if (recent_) s += " (recent " + recent_->str() + ")";
  return s;
}

}  // namespace kvo

#include "kvo/proofs_check/check_options.hpp"

#include "kvo/core/budget.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/text_list.hpp"
#include "kvo/proofs_check/report.hpp"

namespace kvo {

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

std::set<std::string> parse_papers(std::string_view text) {
  std::set<std::string> out;
  for (const auto& item : split_list(text, "claims")) {
    if (item == "all") {
      for (const auto& p : paper_catalogue()) out.insert(p.key);
      continue;
    }
    out.insert(paper_info(item).key);
  }
  return out;
}

std::string sweep_text(const std::vector<double>& sweep) { return sweep.empty() ? "none" : join_numbers(sweep); }

}  // namespace kvo

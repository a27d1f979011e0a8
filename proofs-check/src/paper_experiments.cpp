#include "kvo/proofs_check/paper_experiments.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "kvo/core/error.hpp"
#include "kvo/core/policy_registry.hpp"

namespace kvo {
namespace {

// Measured values at one budget, by row.
using BudgetCell = std::map<std::string, double>;

std::string percent(double budget) {
  const double p = budget * 100.0;
  char buf[32];
  std::snprintf(buf, sizeof buf, std::abs(p - std::round(p)) < 1e-9 ? "%.0f%%" : "%.3g%%", p);
  return buf;
}

CheckRecord finding(const std::string& id, const std::string& variant, bool holds, double metric) {
  return make_record(id, variant, ClaimKind::Finding, holds, metric);
}

// Rows are named by the policy registry.
std::string name(PolicyId id) { return policy_name(id); }

}  // namespace

std::string_view to_string(LoopMetric m) { return m == LoopMetric::Perplexity ? "perplexity" : "accuracy"; }

double loop_loss(const LoopMeasurements& m, double value) {
  return m.metric == LoopMetric::Perplexity ? value / m.full - 1.0 : m.full - value;
}

std::vector<CheckRecord> paper_experiment_records(const LoopMeasurements& m) {
  require(m.metric == LoopMetric::Accuracy || (std::isfinite(m.full) && m.full > 0),
          "the paper's experiments: the full cache's perplexity must be positive");
  require(m.tolerance >= 0, "the paper's experiments: the tolerance must be >= 0");
  std::map<double, BudgetCell> cells;
  for (const auto& r : m.rows)
    if (r.budget < 1.0) cells[r.budget][r.row] = r.value;
  const std::string metric(to_string(m.metric));
  const double tol = m.tolerance;
  const auto loss = [&](double v) { return loop_loss(m, v); };

  std::vector<CheckRecord> out;
  const auto each = [&](auto&& judge) {
    for (const auto& [budget, cell] : cells) {
      const auto has = [&](std::initializer_list<std::string> rows) {
        for (const std::string& r : rows)
          if (!cell.contains(r)) return false;
        return true;
      };
      judge(budget, cell, has);
    }
  };
  // With paired outcomes, the sign test of each comparison the claim makes: {row, against}, both at
  // the budget except the full cache (at 1).
  const auto paired = [&](CheckRecord& r, double budget,
                          std::initializer_list<std::pair<std::string, std::string>> pairs) {
    if (!m.paired) return;
    nlohmann::json a = nlohmann::json::array();
    for (const auto& [row, against] : pairs) {
      const double against_budget = against == kLoopFullRow ? 1.0 : budget;
      if (const std::optional<PairedTest> t = m.paired(row, budget, against, against_budget))
        a.push_back({{"row", row},
                     {"against", against},
                     {"instances", t->instances},
                     {"better", t->better},
                     {"worse", t->worse},
                     {"p_value", t->p_value}});
    }
    r.detail["paired"] = std::move(a);
  };
  const std::string full_row(kLoopFullRow);
  const auto base = [&](double budget, nlohmann::json detail) {
    detail["budget"] = budget;
    detail["budget_label"] = percent(budget);
    detail["metric"] = metric;
    detail["full"] = m.full;
    detail["tolerance"] = tol;
    return detail;
  };

  // E7: on few-shot inputs h2o stays comparable to the full cache (loss <= tol).
  if (m.shots > 0) {
    each([&](double b, const BudgetCell& c, auto) {
      if (!c.contains(name(PolicyId::H2O))) return;
      const double l = loss(c.at(name(PolicyId::H2O)));
      auto r = finding("E7", metric + ", " + std::to_string(m.shots) + " shots", l <= tol, l);
      r.detail = base(b, {{name(PolicyId::H2O), c.at(name(PolicyId::H2O))}, {"shots", m.shots}});
      paired(r, b, {{name(PolicyId::H2O), full_row}});
      out.push_back(std::move(r));
    });
    return out;
  }
  // E4: masking the heavy hitters hurts more than masking as many random tokens (by > tol).
  each([&](double b, const BudgetCell& c, auto has) {
    if (!has({name(PolicyId::AntiH2O), name(PolicyId::Random)})) return;
    const double anti = loss(c.at(name(PolicyId::AntiH2O))), rnd = loss(c.at(name(PolicyId::Random)));
    auto r = finding("E4", metric, anti - rnd > tol, anti - rnd);
    r.detail = base(b, {{name(PolicyId::AntiH2O), c.at(name(PolicyId::AntiH2O))},
                        {name(PolicyId::Random), c.at(name(PolicyId::Random))}});
    if (c.contains(name(PolicyId::Oldest))) r.detail[name(PolicyId::Oldest)] = c.at(name(PolicyId::Oldest));
    paired(r, b, {{name(PolicyId::AntiH2O), name(PolicyId::Random)}});
    out.push_back(std::move(r));
  });
  // E5: local heavy hitters are as good as look-ahead ones (h2o no worse by more than tol).
  each([&](double b, const BudgetCell& c, auto has) {
    if (!has({name(PolicyId::H2O), name(PolicyId::Lookahead)})) return;
    const double gap = loss(c.at(name(PolicyId::H2O))) - loss(c.at(name(PolicyId::Lookahead)));
    auto r = finding("E5", metric, gap <= tol, gap);
    r.detail = base(b, {{name(PolicyId::H2O), c.at(name(PolicyId::H2O))},
                        {name(PolicyId::Lookahead), c.at(name(PolicyId::Lookahead))}});
    paired(r, b, {{name(PolicyId::H2O), name(PolicyId::Lookahead)}});
    out.push_back(std::move(r));
  });
  // E6: each pattern falls short of the full cache (loss > tol) and is comparable to it once heavy
  // hitters take half of its long-range slots (loss <= tol).
  for (const auto& [plain_id, mixed_id] :
       {std::pair{PolicyId::Strided, PolicyId::StridedH2O}, std::pair{PolicyId::Fixed, PolicyId::FixedH2O}}) {
    const std::string pattern = name(plain_id), mixed = name(mixed_id);
    each([&](double b, const BudgetCell& c, auto) {
      if (!c.contains(pattern) || !c.contains(mixed)) return;
      const double plain = loss(c.at(pattern)), with = loss(c.at(mixed));
      auto r = finding("E6", pattern + ", " + metric, plain > tol && with <= tol, plain - with);
      r.detail = base(b, {{pattern, c.at(pattern)},
                          {mixed, c.at(mixed)},
                          {"pattern_falls_short", plain > tol},
                          {"heavy_hitters_recover", with <= tol}});
      paired(r, b, {{pattern, full_row}, {mixed, full_row}, {mixed, pattern}});
      out.push_back(std::move(r));
    });
  }
  // E8: h2o with quantized K/V is no worse than either alone (h2o in fp32, the full cache quantized)
  // by more than tol.
  if (!m.quantized_suffix.empty()) {
    const std::string h2o_q = name(PolicyId::H2O) + m.quantized_suffix;
    each([&](double b, const BudgetCell& c, auto) {
      if (!c.contains(name(PolicyId::H2O)) || !c.contains(h2o_q)) return;
      const double both = loss(c.at(h2o_q)),
                   worst_alone = std::max(loss(c.at(name(PolicyId::H2O))), loss(m.full_quantized));
      auto r = finding("E8", metric, both <= worst_alone + tol, both - worst_alone);
      r.detail = base(b, {{name(PolicyId::H2O), c.at(name(PolicyId::H2O))},
                          {h2o_q, c.at(h2o_q)},
                          {name(PolicyId::Full) + m.quantized_suffix, m.full_quantized}});
      out.push_back(std::move(r));
    });
  }
  // E9: heavy hitters alone and recent tokens alone each fall short, both together (h2o) are
  // comparable to the full cache, and heavy hitters alone beat recent tokens alone. The sign tests
  // also put both together against each alone, which "each alone falls short" implies.
  each([&](double b, const BudgetCell& c, auto has) {
    if (!has({name(PolicyId::Heavy), name(PolicyId::Window), name(PolicyId::H2O)})) return;
    const double heavy = loss(c.at(name(PolicyId::Heavy))), local = loss(c.at(name(PolicyId::Window))),
                 both = loss(c.at(name(PolicyId::H2O)));
    const bool alone_short = heavy > tol && local > tol, together = both <= tol, heavy_first = heavy < local;
    auto r = finding("E9", metric, alone_short && together && heavy_first, both);
    r.detail = base(b, {{name(PolicyId::Heavy), c.at(name(PolicyId::Heavy))},
                        {name(PolicyId::Window), c.at(name(PolicyId::Window))},
                        {name(PolicyId::H2O), c.at(name(PolicyId::H2O))},
                        {"each_alone_falls_short", alone_short},
                        {"together_comparable", together},
                        {"heavy_beats_local", heavy_first}});
    paired(r, b,
           {{name(PolicyId::Heavy), full_row},
            {name(PolicyId::Window), full_row},
            {name(PolicyId::H2O), full_row},
            {name(PolicyId::Heavy), name(PolicyId::Window)},
            {name(PolicyId::H2O), name(PolicyId::Heavy)},
            {name(PolicyId::H2O), name(PolicyId::Window)}});
    out.push_back(std::move(r));
  });
  return out;
}

CheckRecord diversity_record(const DiversityComparison& c) {
  const bool more_distinct = c.h2o_distinct2 >= c.full_distinct2,
             less_repeated = c.h2o_repetition4 <= c.full_repetition4;
  auto r = finding("E10", "distinct-2 and 4-gram repetition", more_distinct && less_repeated,
                   c.h2o_distinct2 - c.full_distinct2);
  r.detail = {{"budget", c.budget},
              {"budget_label", percent(c.budget)},
              {"metric", "distinct-2"},
              {"full_distinct2", c.full_distinct2},
              {"h2o_distinct2", c.h2o_distinct2},
              {"full_repetition4", c.full_repetition4},
              {"h2o_repetition4", c.h2o_repetition4},
              {"more_distinct", more_distinct},
              {"less_repeated", less_repeated}};
  return r;
}

nlohmann::json paper_experiments_json(const std::vector<CheckRecord>& records) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& r : records) a.push_back(record_to_json(r));
  return a;
}

void add_paper_experiments(Report& out, const std::vector<CheckRecord>& records) {
  if (records.empty()) return;
  const nlohmann::json& first = records.front().detail;
  std::string heading = "The paper's experiments (findings, docs/checks.md#";
  heading += first.contains("tolerance") ? "e4" : "e10";
  if (first.contains("tolerance"))
    heading += "; loss: vs the full cache " + first.value("metric", std::string()) + ", comparable within " +
               fmt(first.value("tolerance", 0.0));
  out.line(heading + "):");
  const bool with_paired =
      std::any_of(records.begin(), records.end(), [](const CheckRecord& r) { return r.detail.contains("paired"); });
  std::vector<std::string> head = {"claim", "variant", "budget", "paper holds", "metric", "rows"};
  if (with_paired) head.push_back("paired sign tests (p)");
  Table& t = out.table(head);
  for (const CheckRecord& r : records) {
    std::string rows;
    for (const auto& [key, value] : r.detail.items())
      if (value.is_number_float() && key != "budget" && key != "tolerance")
        rows.append(rows.empty() ? "" : ", ").append(key + " " + fmt(value.get<double>()));
    std::vector<Cell> cells = {
        r.id, r.variant, r.detail.value("budget_label", std::string()), r.holds ? "yes" : "no", decimal(r.metric),
        rows};
    if (with_paired) {
      std::string tests;
      for (const nlohmann::json& p : r.detail.value("paired", nlohmann::json::array()))
        tests.append(tests.empty() ? "" : ", ")
            .append(p.at("row").get<std::string>() + " vs " + p.at("against").get<std::string>() + " " +
                    fmt(p.at("p_value").get<double>()));
      cells.push_back(tests);
    }
    t.row(std::move(cells));
  }
}

}  // namespace kvo

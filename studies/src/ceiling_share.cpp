#include "kvo/studies/ceiling_share.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "kvo/core/error.hpp"
#include "kvo/report/svg_plot.hpp"

namespace kvo::studies {
namespace {

// Percentile (2.5%, 97.5%) of sorted draws.
std::pair<double, double> percentile_95(std::vector<double> draws) {
  std::sort(draws.begin(), draws.end());
  const auto at = [&](double q) {
    const double pos = q * static_cast<double>(draws.size() - 1);
    const auto lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, draws.size() - 1);
    return draws[lo] + (pos - static_cast<double>(lo)) * (draws[hi] - draws[lo]);
  };
  return {at(0.025), at(0.975)};
}

// "[low, high]" to three decimals.
std::string interval(double low, double high) {
  std::string text{"["};
  text.append(fmt(low, 3)).append(", ").append(fmt(high, 3)).append("]");
  return text;
}

double ratio_of_means(double a, double b) { return b != 0.0 ? a / b : (a == 0.0 ? 1.0 : INFINITY); }

// One press at one ratio against the ceiling's scores on the same instances.
CeilingShareRow paired_row(const std::string& press, double ratio, const std::vector<double>& s,
                           const std::vector<double>& c, const CeilingShareRequest& req) {
  CeilingShareRow row;
  row.press = press;
  row.compression_ratio = ratio;
  const size_t n = s.size();
  row.instances = static_cast<int>(n);
  double sum_s = 0, sum_c = 0;
  for (size_t i = 0; i < n; ++i) sum_s += s[i], sum_c += c[i];
  row.score = sum_s / static_cast<double>(n);
  row.ceiling = sum_c / static_cast<double>(n);
  row.share = ratio_of_means(row.score, row.ceiling);
  // Bootstrap over instances (pairs kept together); the seed makes every interval reproducible.
  std::mt19937_64 rng(req.seed);
  std::vector<double> ds, dc, dshare;
  for (int b = 0; b < req.resamples; ++b) {
    double bs = 0, bc = 0;
    for (size_t i = 0; i < n; ++i) {
      const size_t j = static_cast<size_t>(rng() % n);
      bs += s[j], bc += c[j];
    }
    ds.push_back(bs / static_cast<double>(n));
    dc.push_back(bc / static_cast<double>(n));
    dshare.push_back(ratio_of_means(bs, bc));
  }
  std::tie(row.score_low, row.score_high) = percentile_95(ds);
  std::tie(row.ceiling_low, row.ceiling_high) = percentile_95(dc);
  std::tie(row.share_low, row.share_high) = percentile_95(dshare);
  // Sign-flip test: under no difference each paired difference is as likely negated.
  double observed = 0;
  std::vector<double> diff(n);
  for (size_t i = 0; i < n; ++i) observed += diff[i] = s[i] - c[i];
  int as_extreme = 0;
  for (int b = 0; b < req.resamples; ++b) {
    double t = 0;
    for (size_t i = 0; i < n; ++i) t += (rng() & 1U) ? diff[i] : -diff[i];
    if (std::fabs(t) >= std::fabs(observed) - 1e-12) ++as_extreme;
  }
  row.p_value = (as_extreme + 1.0) / (req.resamples + 1.0);
  if (observed == 0.0) row.p_value = 1.0;
  return row;
}

}  // namespace

std::string compression_label(double ratio) {
  if (ratio < 1.0) {
    const double x = 1.0 / (1.0 - ratio);
    if (x >= 8.0 - 1e-9 && std::fabs(x - std::round(x)) < 1e-6) {
      std::string label = fmt(std::round(x), 0);
      label.append(":1");
      return label;
    }
  }
  return fmt(ratio, ratio * 100 == std::round(ratio * 100) ? 2 : 4);
}

CeilingShareResult ceiling_share(std::span<const CeilingRecord> records, const CeilingShareRequest& req) {
  require(!records.empty(), "ceiling share: no scores");
  require(req.resamples >= 100, "ceiling share: resamples " + std::to_string(req.resamples) + " is below 100");
  // scores[ratio][press][instance]; presses in the records' order.
  std::map<double, std::map<std::string, std::map<std::string, double>>> scores;
  std::vector<std::string> order;
  for (const CeilingRecord& r : records) {
    require(std::isfinite(r.score),
            "ceiling share: press " + r.press + " has a non-finite score on instance '" + r.instance + "'");
    auto& by_instance = scores[r.compression_ratio][r.press];
    require(by_instance.emplace(r.instance, r.score).second,
            "ceiling share: press " + r.press + " is scored twice on instance '" + r.instance + "' at ratio " +
                compression_label(r.compression_ratio));
    if (std::find(order.begin(), order.end(), r.press) == order.end()) order.push_back(r.press);
  }
  std::erase(order, req.ceiling);
  order.insert(order.begin(), req.ceiling);
  CeilingShareResult result;
  result.ceiling = req.ceiling;
  for (const auto& [ratio, presses] : scores) {
    const auto top = presses.find(req.ceiling);
    require(top != presses.end(),
            "ceiling share: the ceiling (" + req.ceiling + ") has no scores at ratio " + compression_label(ratio));
    for (const std::string& press : order) {
      const auto p = presses.find(press);
      if (p == presses.end()) continue;
      std::vector<double> s, c;
      for (const auto& [instance, score] : p->second) {
        const auto ci = top->second.find(instance);
        require(ci != top->second.end(), "ceiling share: the ceiling did not score instance '" + instance +
                                             "' (press " + press + ", ratio " + compression_label(ratio) + ")");
        s.push_back(score);
        c.push_back(ci->second);
      }
      result.rows.push_back(paired_row(press, ratio, s, c, req));
    }
  }
  return result;
}

nlohmann::json CeilingShareResult::to_json() const {
  nlohmann::json rows_json = nlohmann::json::array();
  for (const CeilingShareRow& r : rows)
    rows_json.push_back({{"press", r.press},
                         {"compression_ratio", r.compression_ratio},
                         {"instances", r.instances},
                         {"score", r.score},
                         {"score_interval", {r.score_low, r.score_high}},
                         {"ceiling", r.ceiling},
                         {"ceiling_interval", {r.ceiling_low, r.ceiling_high}},
                         {"share", r.share},
                         {"share_interval", {r.share_low, r.share_high}},
                         {"p_value", r.p_value}});
  return {{"ceiling", ceiling}, {"rows", rows_json}};
}

Report CeilingShareResult::report() const {
  Report rep;
  rep.line("Each press against the ceiling (" + ceiling +
           ": the exact query-aware prefill optimum) on the same instances; 95% bootstrap intervals; p: paired "
           "sign-flip test of the mean difference.");
  Table& t = rep.table({"ratio", "press", "n", "score", "95%", "ceiling", "share of ceiling", "95%", "p"});
  LinePlot plot;
  plot.title = "Share of the ceiling's score";
  plot.x_label = "compression ratio (share of the context evicted)";
  plot.y_label = "press score / ceiling score";
  double top = 1.0;
  for (const CeilingShareRow& r : rows) {
    t.row({compression_label(r.compression_ratio), r.press, integer(r.instances), decimal(r.score, 3),
           interval(r.score_low, r.score_high), decimal(r.ceiling, 3), decimal(r.share, 3),
           interval(r.share_low, r.share_high), decimal(r.p_value, 4)});
    if (r.press != ceiling && std::isfinite(r.share)) {
      plot.add_point(r.press, r.compression_ratio, r.share);
      top = std::max(top, r.share);
    }
  }
  plot.y_max = std::min(2.0, top * 1.05);
  plot.lines.push_back({"ceiling", 1.0});
  rep.plot("ceiling-share.svg", plot.svg());
  return rep;
}

}  // namespace kvo::studies

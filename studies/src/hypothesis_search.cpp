#include "kvo/studies/hypothesis_search.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numbers>
#include <random>

#include "kvo/core/error.hpp"
#include "kvo/core/request_json.hpp"
#include "kvo/core/trace_io.hpp"
#include "kvo/proofs_check/trace_checks.hpp"
#include "kvo/report/svg_plot.hpp"
#include "kvo/report/table.hpp"
#include "local_search.hpp"

namespace kvo::studies {

namespace {
constexpr double kHypothesisBoundLine = 1.0 - 1.0 / std::numbers::e;
constexpr double kOutsideHypotheses = 1e6;  // added to the search value of a trace outside the hypotheses
constexpr const char* kHypothesesRecord = "hypotheses (theta, gamma <= 1/(10n))";
}  // namespace

void HypothesisSearchRequest::validate() const {
  validate_search_size(policies, tokens, evaluations, restarts, run);
  require(logit_range > 0 && std::isfinite(logit_range),
          "logit_range: " + number_text(logit_range) + " is not a positive number");
}

const Schema<HypothesisSearchRequest>& HypothesisSearchRequest::schema() {
  using R = HypothesisSearchRequest;
  static const Schema<R> schema(
      "hypothesis search request",
      fields<R>({{member(&R::policies, {.name = "policies", .help = "policies to search a worst case for"}),
                  member(&R::tokens, {.name = "tokens", .help = "n: the instance's length"}),
                  member(&R::logit_range, {.name = "logit_range", .help = "B: every logit within [-B, B]"}),
                  member(&R::evaluations,
                         {.name = "evaluations", .help = "instances evaluated per policy, over every restart"}),
                  member(&R::restarts, {.name = "restarts", .help = "independent random starts"}),
                  member(&R::out, {.name = "out", .help = "save each policy's worst instance in this directory"})},
                 nested("run", &R::run, run_options_schema())}));
  return schema;
}

Trace logit_instance(const std::vector<double>& logits, int n) {
  std::vector<float> q(static_cast<size_t>(n) * n, 0.f), k(q.size(), 0.f);
  const float unit = static_cast<float>(std::sqrt(static_cast<double>(n)));
  for (int i = 0; i < n; ++i) {
    k[static_cast<size_t>(i) * n + i] = unit;
    for (int j = 0; j <= i; ++j)
      q[static_cast<size_t>(i) * n + j] = static_cast<float>(logits[static_cast<size_t>(i) * n + j]);
  }
  Trace t = attention_instance(q, k, n, n);
  t.metadata["source"] = "kvoracle search hypotheses";
  return t;
}

HypothesisMeasure measure_hypotheses(const Trace& trace, PolicyId policy, const RunOptions& run) {
  TraceChecksOptions o;
  o.run = run.build(policy, &trace);
  o.policies = {policy};
  o.checks = {"C15"};
  o.sweep.clear();
  o.threads = 1;
  const TraceChecksResult r = run_trace_checks(trace, o);
  HypothesisMeasure m;
  bool saw_rho = false, saw_gamma = false;
  for (const CheckRecord& rec : r.report.records()) {
    if (rec.id != "C15") continue;
    if (rec.variant == kHypothesesRecord) {
      m.gamma = rec.metric;
      saw_gamma = true;
    } else if (rec.variant == policy_name(policy)) {
      m.rho_min = rec.detail.at("rho_min").get<double>();
      saw_rho = true;
    }
  }
  require(saw_rho && saw_gamma, "search hypotheses: verify's C15 gave no record for " + policy_name(policy));
  m.alpha = 10.0 * trace.n_tokens * m.gamma;
  m.hypotheses_hold = m.alpha < 1.0;
  m.bound = (1.0 - std::min(m.alpha, 1.0)) * kHypothesisBoundLine;
  return m;
}

HypothesisSearchResult search_hypotheses(const HypothesisSearchRequest& req, const std::function<void()>& on_tick) {
  req.validate();
  if (!req.out.empty()) std::filesystem::create_directories(req.out);
  HypothesisSearchResult res;
  res.request = req;
  const int n = req.tokens;
  const double B = req.logit_range;
  using Logits = std::vector<double>;
  auto value = [&](const HypothesisMeasure& m) {
    return m.hypotheses_hold ? m.tightness() : kOutsideHypotheses + m.alpha;
  };
  for (size_t p = 0; p < req.policies.size(); ++p) {
    const PolicyId id = req.policies[p];
    std::normal_distribution<double> normal(0.0, 1.0);
    detail::LocalSearch<Logits> s;
    s.start = [&](std::mt19937_64& g) {
      Logits x(static_cast<size_t>(n) * n, 0.0);
      for (double& v : x) v = std::clamp(normal(g) * B / 2, -B, B);
      return x;
    };
    // One query's logits (row i, keys 0..i) move together.
    s.move = [&](const Logits& x, double sigma, std::mt19937_64& g) {
      std::uniform_int_distribution<int> row(0, n - 1);
      Logits y = x;
      const int i = row(g);
      for (int j = 0; j <= i; ++j) {
        double& v = y[static_cast<size_t>(i) * n + j];
        v = std::clamp(v + normal(g) * sigma * B / 2, -B, B);
      }
      return y;
    };
    s.evaluate = [&](const Logits& x) { return value(measure_hypotheses(logit_instance(x, n), id, req.run)); };
    s.admissible = [](double v) { return v < kOutsideHypotheses; };
    const auto found = detail::local_search(s, req.restarts, req.evaluations, req.run.seed + 7919u * p, on_tick);
    HypothesisSearch hs;
    hs.policy = policy_name(id);
    hs.found = found.found;
    hs.admissible = found.admissible;
    if (found.found) {
      const Trace worst = logit_instance(found.best, n);
      const HypothesisMeasure m = measure_hypotheses(worst, id, req.run);
      hs.worst = found.worst;
      hs.rho_min = m.rho_min;
      hs.gamma = m.gamma;
      hs.alpha = m.alpha;
      hs.bound = m.bound;
      hs.random_worst = found.random_worst;
      hs.found_at = found.found_at;
      hs.curve = found.curve;
      if (!req.out.empty()) {
        hs.instance = (std::filesystem::path(req.out) / ("hypotheses-" + hs.policy + ".safetensors")).string();
        write_trace(hs.instance, worst);
        const Trace again = read_trace(hs.instance);
        hs.verified = value(measure_hypotheses(again, id, req.run));
        hs.theorem_failures = theorem_failures(again, id, req.run, {"C1", "C10", "C11"});
      }
    }
    res.policies.push_back(std::move(hs));
  }
  return res;
}

nlohmann::json HypothesisSearchResult::to_json() const {
  nlohmann::json rows = nlohmann::json::array();
  for (const HypothesisSearch& p : policies) {
    rows.push_back({{"policy", p.policy},
                    {"found", p.found},
                    {"worst", p.worst},
                    {"rho_min", p.rho_min},
                    {"gamma_proof", p.gamma},
                    {"alpha", p.alpha},
                    {"bound", p.bound},
                    {"random_worst", std::isfinite(p.random_worst) ? nlohmann::json(p.random_worst) : nlohmann::json()},
                    {"found_at", p.found_at},
                    {"admissible", p.admissible},
                    {"curve", search_curve_json(p.curve)},
                    {"instance", p.instance},
                    {"verified", p.verified},
                    {"theorem_failures", p.theorem_failures}});
  }
  return {{"request", HypothesisSearchRequest::schema().to_json(request)}, {"policies", rows}};
}

Report HypothesisSearchResult::report() const {
  Report rep;
  rep.line("The lowest rho_min / ((1 - alpha)(1 - 1/e)) found over causal attention with logits in [-" +
           fmt(request.logit_range, 3) + ", " + fmt(request.logit_range, 3) + "] on which Theorem 4.4's hypotheses " +
           "hold (alpha = 10 n gamma^proof < 1 from step max(k, P - 1) on; n = " + std::to_string(request.tokens) +
           ", prompt P = " + std::to_string(request.run.prompt_len.value_or(0)) + ", budget " + request.run.budget +
           ", greedy on " + request.run.objective + ", " + std::to_string(request.evaluations) + " evaluations in " +
           std::to_string(request.restarts) + " restarts, seed " + std::to_string(request.run.seed) +
           "); below 1 the theorem's conclusion fails where its hypotheses hold:");
  Table& t =
      rep.table({"policy", "worst", "rho_min", "alpha", "bound", "held in", "random starts", "found at", "instance"});
  for (const HypothesisSearch& p : policies) {
    if (!p.found) {
      t.row({p.policy, "-", "-", "-", "-", "0 of " + std::to_string(request.evaluations), "-", "-", "-"});
      continue;
    }
    t.row({p.policy, decimal(p.worst), decimal(p.rho_min), decimal(p.alpha), decimal(p.bound),
           std::to_string(p.admissible) + " of " + std::to_string(request.evaluations),
           std::isfinite(p.random_worst) ? decimal(p.random_worst) : "-", integer(p.found_at),
           p.instance.empty() ? "-" : p.instance});
  }
  for (const HypothesisSearch& p : policies) {
    if (!p.found) rep.line(p.policy + ": no evaluated trace satisfied the hypotheses; raise evaluations");
    if (p.theorem_failures > 0) rep.line(p.policy + ": verify FAILS on the saved instance (a bug in kvoracle)");
    if (!p.instance.empty())
      rep.line(p.policy + ": read back from " + p.instance + ", " + reread_verdict(p.verified, p.worst) +
               "; verify's C1, C10 and C11 " + (p.theorem_failures == 0 ? "hold" : "FAIL") + " on it");
  }
  return rep;
}

std::string HypothesisSearchResult::plot_svg() const {
  LinePlot plot;
  plot.title = "lowest share of the bound found where the hypotheses hold";
  plot.x_label = "evaluations";
  plot.y_label = "rho_min / ((1 - alpha)(1 - 1/e))";
  for (const HypothesisSearch& p : policies)
    for (const SearchPoint& c : p.curve) plot.add_point(p.policy, static_cast<double>(c.evaluation), c.worst);
  plot.lines.push_back({"the bound", 1.0});
  return plot.svg();
}

}  // namespace kvo::studies

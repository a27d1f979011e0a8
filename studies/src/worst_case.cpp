#include "kvo/studies/worst_case.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

#include "kvo/core/atomic_file.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/request_json.hpp"
#include "kvo/core/trace_io.hpp"
#include "kvo/oracle/competitive.hpp"
#include "kvo/proofs_check/trace_checks.hpp"
#include "kvo/report/svg_plot.hpp"
#include "kvo/report/table.hpp"
#include "local_search.hpp"

namespace kvo::studies {

void validate_search_size(const std::vector<PolicyId>& policies, int tokens, int evaluations, int restarts,
                          const RunOptions& run) {
  require(!policies.empty(), "policies: none to search");
  require(tokens >= 4, "tokens: " + std::to_string(tokens) + " is below 4");
  require(restarts >= 1, "restarts: " + std::to_string(restarts) + " is below 1");
  require(evaluations >= restarts, "evaluations: " + std::to_string(evaluations) + " is below restarts (" +
                                       std::to_string(restarts) + "): every restart evaluates at least its start");
  for (PolicyId id : policies) {
    const RunConfig c = run.build(id);
    const int k = c.unit_budget(tokens, 0, 0).total;
    require(k < tokens, "budget: " + run.budget + " keeps all " + std::to_string(tokens) + " tokens of " +
                            policy_name(id) + ": nothing is evicted");
  }
}

void AttentionSearchRequest::validate() const {
  validate_search_size(policies, tokens, evaluations, restarts, run);
  require(head_dim >= 1, "head_dim: " + std::to_string(head_dim) + " is below 1");
  require(radius > 0 && std::isfinite(radius), "radius: " + number_text(radius) + " is not a positive number");
  require(against == "opt_dyn" || against == "per_step", "against: '" + against + "' is neither opt_dyn nor per_step");
}

const Schema<AttentionSearchRequest>& AttentionSearchRequest::schema() {
  using R = AttentionSearchRequest;
  static const Schema<R> schema(
      "attention search request",
      fields<R>({{member(&R::policies, {.name = "policies", .help = "policies to search a worst case for"}),
                  member(&R::tokens, {.name = "tokens", .help = "n: the instance's length"}),
                  member(&R::head_dim, {.name = "head_dim", .help = "d: the head size"}),
                  member(&R::radius, {.name = "radius",
                                      .help = "R: the largest norm of a query or key (logits within R^2/sqrt(d))"}),
                  member(&R::evaluations,
                         {.name = "evaluations", .help = "instances evaluated per policy, over every restart"}),
                  member(&R::restarts, {.name = "restarts", .help = "independent random starts"}),
                  member(&R::against, {.name = "against", .help = "the denominator: opt_dyn or per_step"}),
                  member(&R::out, {.name = "out", .help = "save each policy's worst instance in this directory"})},
                 nested("run", &R::run, run_options_schema())}));
  return schema;
}

namespace {

// Scales row r of m (d columns) back to norm <= R.
void clip(std::vector<float>& m, int r, int d, double R) {
  double s = 0.0;
  for (int x = 0; x < d; ++x)
    s += static_cast<double>(m[static_cast<size_t>(r * d + x)]) * m[static_cast<size_t>(r * d + x)];
  if (s <= R * R) return;
  const double f = R / std::sqrt(s);
  for (int x = 0; x < d; ++x)
    m[static_cast<size_t>(r * d + x)] = static_cast<float>(m[static_cast<size_t>(r * d + x)] * f);
}

double objective(const InstanceRatios& r, const std::string& against) {
  return against == "opt_dyn" ? r.opt_dyn : r.per_step;
}

}  // namespace

Trace attention_instance(const std::vector<float>& q, const std::vector<float>& k, int n, int d) {
  Trace t;
  t.resize_layers(1);
  t.n_heads = t.n_kv_heads = 1;
  t.n_tokens = n;
  t.head_dim = d;
  t.attn_scale = 1.0 / std::sqrt(static_cast<double>(d));
  t.metadata["source"] = "kvoracle search attention";
  t.q[0] = q;
  t.k[0] = k;
  t.v[0] = k;  // values are not searched; verify's output checks read them
  return t;
}

InstanceRatios instance_ratios(const Trace& trace, PolicyId policy, const RunOptions& run) {
  CompetitiveOptions co;
  ReplayOptions ro;
  ro.run = run.build(policy, &trace);
  co.policies.push_back(std::move(ro));
  co.threads = 1;
  const std::vector<HeadCompetitive> heads = competitive_ratios(trace, co);
  const HeadCompetitive& h = heads.front();
  const double v = h.policies.front().value;
  return {h.opt_dyn > 0 ? v / h.opt_dyn : 1.0, h.static_sum > 0 ? v / h.static_sum : 1.0};
}

long theorem_failures(const Trace& trace, PolicyId policy, const RunOptions& run, const std::set<std::string>& checks) {
  TraceChecksOptions o;
  o.run = run.build(policy, &trace);
  o.policies = {policy};
  o.checks = checks;
  o.sweep.clear();
  o.threads = 1;
  return run_trace_checks(trace, o).report.theorem_failures();
}

AttentionSearchResult search_attention(const AttentionSearchRequest& req, const std::function<void()>& on_tick) {
  req.validate();
  if (!req.out.empty()) std::filesystem::create_directories(req.out);
  AttentionSearchResult res;
  res.request = req;
  const int n = req.tokens, d = req.head_dim;
  const double R = req.radius, step = R / std::sqrt(static_cast<double>(d));
  struct QK {
    std::vector<float> q, k;
  };
  for (size_t p = 0; p < req.policies.size(); ++p) {
    const PolicyId id = req.policies[p];
    std::normal_distribution<double> normal(0.0, 1.0);  // one per policy: its cached value is part of the seed's stream
    detail::LocalSearch<QK> s;
    s.start = [&](std::mt19937_64& g) {
      QK x{std::vector<float>(static_cast<size_t>(n) * d), std::vector<float>(static_cast<size_t>(n) * d)};
      for (auto* m : {&x.q, &x.k}) {
        for (float& v : *m) v = static_cast<float>(normal(g) * step);
        for (int r = 0; r < n; ++r) clip(*m, r, d, R);
      }
      return x;
    };
    s.move = [&](const QK& x, double sigma, std::mt19937_64& g) {
      std::uniform_int_distribution<int> row(0, n - 1), which(0, 1);
      QK y = x;
      std::vector<float>& m = which(g) ? y.q : y.k;
      const int r = row(g);
      for (int c = 0; c < d; ++c) m[static_cast<size_t>(r * d + c)] += static_cast<float>(normal(g) * sigma * step);
      clip(m, r, d, R);
      return y;
    };
    s.evaluate = [&](const QK& x) {
      return objective(instance_ratios(attention_instance(x.q, x.k, n, d), id, req.run), req.against);
    };
    const auto found = detail::local_search(s, req.restarts, req.evaluations, req.run.seed + 7919u * p, on_tick);
    PolicySearch ps;
    ps.policy = policy_name(id);
    ps.worst = found.worst;
    ps.random_worst = found.random_worst;
    ps.found_at = found.found_at;
    ps.curve = found.curve;
    const Trace worst = attention_instance(found.best.q, found.best.k, n, d);
    const InstanceRatios at = instance_ratios(worst, id, req.run);
    ps.opt_dyn_ratio = at.opt_dyn;
    ps.per_step_ratio = at.per_step;
    if (!req.out.empty()) {
      ps.instance = (std::filesystem::path(req.out) / ("worst-" + ps.policy + ".safetensors")).string();
      write_trace(ps.instance, worst);
      const Trace again = read_trace(ps.instance);  // what a reader reruns
      ps.verified = objective(instance_ratios(again, id, req.run), req.against);
      ps.theorem_failures = theorem_failures(again, id, req.run, {"C1", "C19"});
    }
    res.policies.push_back(std::move(ps));
  }
  return res;
}

std::string reread_verdict(double verified, double found) {
  return fmt(verified) + (verified == found ? " (the same)" : " (DIFFERS from the search's " + fmt(found) + ")");
}

nlohmann::json search_curve_json(const std::vector<SearchPoint>& curve) {
  nlohmann::json out = nlohmann::json::array();
  for (const SearchPoint& c : curve) out.push_back({{"evaluation", c.evaluation}, {"worst", c.worst}});
  return out;
}

nlohmann::json AttentionSearchResult::to_json() const {
  nlohmann::json rows = nlohmann::json::array();
  for (const PolicySearch& p : policies) {
    rows.push_back({{"policy", p.policy},
                    {"worst", p.worst},
                    {"opt_dyn_ratio", p.opt_dyn_ratio},
                    {"per_step_ratio", p.per_step_ratio},
                    {"random_worst", p.random_worst},
                    {"found_at", p.found_at},
                    {"curve", search_curve_json(p.curve)},
                    {"instance", p.instance},
                    {"verified", p.verified},
                    {"theorem_failures", p.theorem_failures}});
  }
  return {{"request", AttentionSearchRequest::schema().to_json(request)}, {"policies", rows}};
}

Report AttentionSearchResult::report() const {
  Report rep;
  rep.line("The lowest share of " + std::string(request.against == "opt_dyn" ? "OPT_dyn" : "the per-step optima") +
           " a policy's retained attention reaches, searched over softmax(q.k/sqrt(d)) with |q|, |k| <= " +
           fmt(request.radius, 3) + " (n = " + std::to_string(request.tokens) +
           ", d = " + std::to_string(request.head_dim) + ", budget " + request.run.budget + ", " +
           std::to_string(request.evaluations) + " evaluations in " + std::to_string(request.restarts) +
           " restarts, seed " + std::to_string(request.run.seed) + "):");
  Table& t = rep.table({"policy", "worst", "/ OPT_dyn", "/ per-step", "random starts", "found at", "instance"});
  for (const PolicySearch& p : policies)
    t.row({p.policy, decimal(p.worst), decimal(p.opt_dyn_ratio), decimal(p.per_step_ratio), decimal(p.random_worst),
           integer(p.found_at), p.instance.empty() ? "-" : p.instance});
  for (const PolicySearch& p : policies)
    if (p.theorem_failures > 0) rep.line(p.policy + ": verify FAILS on the saved instance (a bug in kvoracle)");
  for (const PolicySearch& p : policies)
    if (!p.instance.empty())
      rep.line(p.policy + ": read back from " + p.instance + ", ratio " + reread_verdict(p.verified, p.worst) +
               "; verify's C1 and C19 " + (p.theorem_failures == 0 ? "hold" : "FAIL") + " on it");
  return rep;
}

std::string AttentionSearchResult::plot_svg() const {
  LinePlot plot;
  plot.title = "lowest ratio found against evaluations";
  plot.x_label = "evaluations";
  plot.y_label = request.against == "opt_dyn" ? "value / OPT_dyn" : "value / sum of per-step optima";
  for (const PolicySearch& p : policies)
    for (const SearchPoint& c : p.curve) plot.add_point(p.policy, static_cast<double>(c.evaluation), c.worst);
  plot.lines.push_back({"1 - 1/e", 1.0 - 1.0 / std::exp(1.0)});
  return plot.svg();
}

}  // namespace kvo::studies

#include "kvo/oracle/static_run.hpp"

#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/facility_location.hpp"
#include "kvo/core/modular_concave.hpp"
#include "kvo/core/objective_registry.hpp"
#include "kvo/core/parallel.hpp"
#include "kvo/core/request_json.hpp"

namespace kvo {

void StaticOracleRequest::validate() const {
  const ObjectiveEntry* f = find_objective(run.objective);
  require(f != nullptr && f->traits.static_oracle,
          "the static oracle's objective is " +
              objective_names_where([](const ObjectiveTraits& t) { return t.static_oracle; }) + ", not '" +
              run.objective + "'");
  require(every >= 1, "every must be >= 1");
  require(node_limit >= 1, "node_limit must be >= 1");
  require(run.gqa == "query", "the static oracle solves one query head at a time: gqa must be query");
}

namespace {

const JsonForm<StaticOracleRequest>& static_json() {
  static const JsonForm<StaticOracleRequest> form = [] {
    JsonForm<StaticOracleRequest> f("static oracle request");
    f.field(
        "run", [](const StaticOracleRequest& r) { return kvo::to_json(r.run); },
        [](StaticOracleRequest& r, const nlohmann::json& value) {
          nlohmann::json run = value;
          if (run.is_object() && !run.contains("objective")) run["objective"] = r.run.objective;  // the default
          r.run = run_options_from_json(run);
        });
    f.field("every", &StaticOracleRequest::every)
        .field("node_limit", &StaticOracleRequest::node_limit)
        .field("threads", &StaticOracleRequest::threads);
    return f;
  }();
  return form;
}

}  // namespace

nlohmann::json StaticOracleRequest::to_json() const { return static_json().write(*this); }
StaticOracleRequest StaticOracleRequest::from_json(const nlohmann::json& j) { return static_json().read(j); }

std::vector<nlohmann::json> StaticOracleResult::records() const {
  std::vector<nlohmann::json> out;
  for (const auto& h : heads)
    for (const auto& s : h.solves)
      out.push_back({{"layer", h.layer},
                     {"head", h.head},
                     {"step", s.step},
                     {"objective", objective},
                     {"value", s.solution.value},
                     {"upper", s.solution.upper},
                     {"exact", s.solution.exact},
                     {"method", s.solution.method},
                     {"set", s.solution.set}});
  return out;
}

StaticOracleResult run_static_oracle(const Trace& tr, const StaticOracleRequest& request) {
  request.validate();
  // The static optimum replays no policy: the configuration carries its budget, layers and heads.
  const RunConfig run = request.run.build(PolicyId::Full, &tr);
  const std::string& objective = request.run.objective;
  const Concave h = run.policy.objective.h;
  StaticOracleResult r;
  r.objective = objective;
  r.budget = run.budget.str();
  for (int l : run.chosen_layers(tr.n_layers))
    for (int hd : run.chosen_heads(tr.n_heads))
      r.heads.push_back({l, hd, run.budget.resolve(tr.n_tokens, l, hd).total, {}});
  parallel_for(static_cast<int>(r.heads.size()), request.threads, [&](int x) {
    StaticOracleHead& head = r.heads[static_cast<size_t>(x)];
    const int k = head.k;
    const HeadView view(tr, head.layer, head.head);
    const Eigen::MatrixXd dense = dense_attention(view);
    std::vector<double> acc(static_cast<size_t>(tr.n_tokens), 0.0);
    for (int i = 0; i < tr.n_tokens; ++i) {
      for (int j = 0; j <= i; ++j) acc[j] += dense(i, j);
      if (i % request.every != 0 && i != tr.n_tokens - 1) continue;
      if (objective == "fl") {
        const int first = std::max(0, i - run.policy.objective.window + 1);
        const FacilityLocation f(dense.block(first, 0, i - first + 1, i + 1));
        BranchAndBoundOptions bb;
        bb.node_limit = request.node_limit;
        head.solves.push_back({i, solve_static(f, k, bb)});
      } else {
        std::vector<double> w(static_cast<size_t>(i) + 1);
        for (int j = 0; j <= i; ++j) w[j] = objective == "mass" ? dense(i, j) : acc[j];
        head.solves.push_back({i, solve_topk(ModularConcave(std::move(w), h, objective), k)});
      }
    }
    if (request.on_head) request.on_head();
  });
  return r;
}

}  // namespace kvo

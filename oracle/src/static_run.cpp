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

const Schema<StaticOracleRequest>& StaticOracleRequest::schema() {
  using R = StaticOracleRequest;
  static const Schema<R> schema(
      "static oracle request",
      fields<R>({nested("run", &R::run, run_options_schema()),
                 {member(&R::every, {.name = "every", .help = "solve every N-th step (and the last)"}),
                  member(&R::node_limit, {.name = "node_limit",
                                          .help = "fl: branch-and-bound nodes per solve; past it the solve is "
                                                  "inexact, with bounds"}),
                  member(&R::threads, {.name = "threads", .help = "threads (0: all cores)", .cli = false})}}));
  return schema;
}

nlohmann::json StaticOracleRequest::to_json() const { return schema().to_json(*this); }
StaticOracleRequest StaticOracleRequest::from_json(const nlohmann::json& j) { return schema().from_json(j); }

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

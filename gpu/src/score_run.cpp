#include "kvo/gpu/score_run.hpp"

#include "kvo/core/error.hpp"
#include "kvo/core/request_json.hpp"

namespace kvo {

void ScoreRequest::validate() const {
  ScorerOptions o;
  o.run = run.build(policy);
  require(o.run.gqa == GqaMode::PerQueryHead, "the greedy scorer replays one cache per query head: gqa must be query");
  o.variant();  // a policy without a scorer kernel is named here
  parse_scorer_device(device);
  for (const auto& b : budgets) Amount::parse(b);
}

const Schema<ScoreRequest>& ScoreRequest::schema() {
  using R = ScoreRequest;
  static const Schema<R> schema(
      "score request",
      fields<R>(
          {{member(&R::policy, {.name = "policy",
                                .help = "eviction policy with a scorer kernel (h2o, h2o-realdrop, h2o-paper)",
                                .alias = "-p"}),
            member(&R::device, {.name = "device", .help = "cpu (the twin), cuda, or auto (the GPU when there is one)"}),
            member(&R::budgets, {.name = "budgets",
                                 .help = "several budget totals in one pass, e.g. 5%,10%,20% (replaces "
                                         "--budget)",
                                 .excludes = "budget"}),
            member(&R::threads, {.name = "threads", .help = "the twin's threads (<= 0: all cores)", .cli = false})},
           nested("run", &R::run, run_options_schema())}));
  return schema;
}

nlohmann::json ScoreRequest::to_json() const { return schema().to_json(*this); }
ScoreRequest ScoreRequest::from_json(const nlohmann::json& j) { return schema().from_json(j); }

ScorerOptions ScoreRequest::options(const Trace& trace) const {
  validate();
  ScorerOptions o;
  o.run = run.build(policy, &trace);
  o.device = parse_scorer_device(device);
  for (const auto& b : budgets) o.totals.push_back(Amount::parse(b));
  o.threads = threads;
  return o;
}

ScorerResult run_score(const Trace& trace, const ScoreRequest& request) {
  return run_scorer(trace, request.options(trace));
}

std::vector<std::string> ScoreRequest::budget_labels() const {
  return budgets.empty() ? std::vector<std::string>{run.budget} : budgets;
}

void write_score_records(std::ostream& out, const Trace& tr, const ScorerResult& r,
                         const std::vector<Budget>& budgets) {
  for (const auto& u : r.units)
    for (int i = 0; i < tr.n_tokens; ++i) {
      std::vector<int> evicted;
      for (int j = 0; j <= i; ++j)
        if (u.evict_step[static_cast<size_t>(j)] == i) evicted.push_back(j);
      out << nlohmann::json({{"layer", u.layer},
                             {"head", u.head},
                             {"budget", budgets[static_cast<size_t>(u.budget_index)].str()},
                             {"step", i},
                             {"kept", kept_after(u, i)},
                             {"evicted", evicted}})
                 .dump()
          << '\n';
    }
}

std::vector<ScoreBudgetSummary> score_summary(const ScorerResult& r, const std::vector<Budget>& budgets) {
  std::vector<ScoreBudgetSummary> out;
  for (size_t b = 0; b < budgets.size(); ++b) {
    ScoreBudgetSummary s;
    s.budget = budgets[b].str();
    double kept_score = 0.0;
    long kept = 0;
    for (const auto& u : r.units) {
      if (u.budget_index != static_cast<int>(b)) continue;
      if (s.heads++ == 0) s.k = u.budget.total;
      for (size_t j = 0; j < u.evict_step.size(); ++j) {
        if (u.evict_step[j] >= 0) {
          ++s.evictions;
        } else {
          kept_score += u.score[j];
          ++kept;
        }
      }
    }
    s.mean_kept_score = kept ? kept_score / static_cast<double>(kept) : 0.0;
    out.push_back(s);
  }
  return out;
}

Report score_report(const ScorerResult& r, const std::vector<Budget>& budgets, PolicyId policy,
                    const std::string& trace, int n_tokens) {
  Report out;
  out.line("policy " + policy_name(policy) + " on " + trace + " (n = " + std::to_string(n_tokens) +
           ") with the greedy scorer");
  out.line("device: " + r.device);
  Table& t = out.table({"budget", "k (first head)", "heads", "evictions", "mean final score of kept tokens"});
  for (const ScoreBudgetSummary& s : score_summary(r, budgets))
    t.row({s.budget, integer(s.k), integer(s.heads), integer(s.evictions), decimal(s.mean_kept_score)});
  return out;
}

}  // namespace kvo

#include "kvo/proofs_check/verify_run.hpp"

#include <memory>

#include "kvo/core/atomic_file.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/policy_registry.hpp"
#include "kvo/core/request_json.hpp"
#include "kvo/core/synth.hpp"
#include "kvo/core/text_list.hpp"
#include "kvo/core/trace_io.hpp"
#include "kvo/proofs_check/trace_set.hpp"

namespace kvo {

namespace {
void validate_checks(const VerifyRequest& r) {
  require(r.run.gqa == "query", "verify checks one cache per query head: gqa must be query");
  r.checks.validate();
}
}  // namespace

void VerifyRequest::validate() const {
  require(!traces.empty(), "verify needs at least one trace");
  require(traces.size() == 1 || plot_path.empty(),
          "plot takes one trace; with several, the report draws every trace's plots");
  validate_checks(*this);
}

TraceChecksOptions VerifyRequest::options(const Trace& trace) const {
  validate_checks(*this);
  TraceChecksOptions o = checks;
  o.run = run.build(o.policies.front(), &trace);  // the plan validates every policy's parameters
  return o;
}

const Schema<VerifyRequest>& VerifyRequest::schema() {
  using R = VerifyRequest;
  using C = TraceChecksOptions;
  const std::string size = kCheckSizeUse;
  static const Schema<R> schema(
      "verify request",
      fields<R>(
          {{member(&R::traces,
                   {.name = "traces", .help = "trace files (.safetensors) or directories of them", .cli = false}),
            member(&R::checks, &C::policies, {.name = "policies", .help = "policies to replay and check"}),
            custom<R>(
                {.name = "checks", .help = "check ids (" + trace_check_ids() + "); default: every claim of --claims"},
                "list of check ids",
                [](R& r, std::string_view t) {
                  r.checks.checks.clear();
                  for (const auto& c : split_list(t, "checks")) r.checks.checks.insert(c);
                },
                [](const R& r) {
                  return join_list({r.checks.checks.begin(), r.checks.checks.end()});
                },
                [](const R& r) { return nlohmann::json(r.checks.checks); },
                [](R& r, const nlohmann::json& v) { r.checks.checks = v.get<std::set<std::string>>(); }),
            custom<R>(
                {.name = "claims",
                 .help = "papers whose claims run: " + paper_keys() +
                         ", or all; default: the papers of --checks, else h2o (docs/checks.md)"},
                "list of papers, or all", [](R& r, std::string_view t) { r.checks.claims = parse_papers(t); },
                [](const R& r) {
                  return join_list({r.checks.claims.begin(), r.checks.claims.end()});
                },
                [](const R& r) { return nlohmann::json(r.checks.claims); },
                [](R& r, const nlohmann::json& v) {
                  r.checks.claims.clear();
                  for (const auto& p : v.get<std::vector<std::string>>()) r.checks.claims.insert(paper_info(p).key);
                }),
            custom<R>(
                {.name = "sweep", .help = "budgets (fractions of n) of the retained-mass plot; 'none' to skip"},
                "list of shares, or none", [](R& r, std::string_view t) { r.checks.sweep = parse_sweep(t); },
                [](const R& r) { return sweep_text(r.checks.sweep); },
                [](const R& r) { return nlohmann::json(r.checks.sweep); },
                [](R& r, const nlohmann::json& v) { r.checks.sweep = v.get<std::vector<double>>(); }),
            member(&R::checks, &C::samples,
                   {.name = "samples", .help = "sampled sets per submodularity scan (C5, C6, C12)", .use = size}),
            member(&R::checks, &C::sampled_steps,
                   {.name = "sampled_steps", .help = "steps per head for the brute-force checks", .use = size}),
            member(&R::checks, &C::ground,
                   {.name = "ground", .help = "ground-set size of the brute-force checks (<= 16)", .use = size}),
            member(&R::checks, &C::small_k,
                   {.name = "small_k", .help = "budget of the brute-force checks", .use = size}),
            member(&R::checks, &C::sweep_heads,
                   {.name = "sweep_heads", .help = "heads per layer in the budget sweep", .use = size}),
            member(&R::checks, &C::offline_tokens,
                   {.name = "offline_tokens",
                    .help = "C19, D10 and the sweep's OPT_dyn solve the offline optimum on the first N steps (0: "
                            "every step)",
                    .use = size}),
            member(&R::checks, &C::loss_heads,
                   {.name = "loss_heads",
                    .help = "key matrices (first, middle, last layer) of the loss/Hessian checks C23-C26; 0 skips "
                            "them",
                    .use = size}),
            member(&R::checks, &C::loss_random,
                   {.name = "loss_random", .help = "random instances of the loss/Hessian checks", .use = size}),
            member(&R::checks, &C::power_law_bootstrap,
                   {.name = "power_law_bootstrap",
                    .help = "E2: bootstrap samples of each head's power-law goodness of fit (0: no p-value)",
                    .use = size}),
            member(&R::checks, &C::cooccurrence_window,
                   {.name = "cooccurrence_window",
                    .help = "E3: two words co-occur when at most this many tokens apart",
                    .use = size}),
            member(&R::report_dir,
                   {
                       .name = "report",
                       .help = "write report.json, report.md and the SVG plots into this directory (several traces: "
                               "a sub-directory each and a summary across them)",
                   }),
            member(&R::json_path, {.name = "json", .help = "also write report.json to this path"}),
            member(&R::plot_path, {.name = "plot", .help = "also write the ratio plot (SVG) to this path (one trace)"}),
            member(&R::keep_reports,
                   {.name = "keep_reports", .help = "keep each trace's report.json in the result", .cli = false})},
           nested("run", &R::run, run_options_schema())}));
  return schema;
}

nlohmann::json VerifyRequest::to_json() const { return schema().to_json(*this); }
VerifyRequest VerifyRequest::from_json(const nlohmann::json& j) { return schema().from_json(j); }

nlohmann::json VerifyResult::to_json() const {
  if (!several) return reports.empty() ? nlohmann::json::object() : reports.front();
  nlohmann::json j = multi_report_json(traces);
  if (!reports.empty()) j["reports"] = reports;
  return j;
}

std::optional<VerifyResult> run_verify(const VerifyRequest& request, const WorkTeam& team,
                                       const std::function<void(const VerifiedTrace&)>& on_trace) {
  request.validate();
  const std::vector<std::string> paths = expand_trace_paths(request.traces);
  const bool several = paths.size() > 1;
  require(!several || request.plot_path.empty(),
          "plot takes one trace; with several, the report draws every trace's plots");
  const std::vector<std::string> names = trace_report_names(paths);
  const bool keep = request.keep_reports || !request.json_path.empty();
  const std::string policies = join_policy_names(request.checks.policies);

  // The leader opens the staging folder of a several-trace report; every member learns a failure.
  std::unique_ptr<StagedReport> staged;
  team.together([&] {
    if (team.leader() && several && !request.report_dir.empty())
      staged = std::make_unique<StagedReport>(request.report_dir);
  });

  VerifyResult out;
  out.several = several;
  bool leader = false;
  for (size_t t = 0; t < paths.size(); ++t) {
    Trace tr;
    TraceChecksOptions o;
    std::unique_ptr<TraceChecksPlan> plan;
    team.together(  // a bad trace: one line, every member stops
        [&] {
          tr = read_trace(paths[t]);
          o = request.options(tr);
          o.threads = team.threads();
          plan = std::make_unique<TraceChecksPlan>(tr, o);
        },
        several ? paths[t] : "");
    // Built piece by piece: GCC 12 warns falsely (-Wrestrict) on "'" + path + "' " here.
    std::string unit_prefix = "'";
    unit_prefix.append(paths[t]).append("' ");
    std::string section = "t";
    section.append(std::to_string(t));
    std::string label = "verify";
    if (several) label.append(" ").append(names[t]);
    const std::optional<TraceChecksResult> result =
        team.run(PrefixedPlan<TraceChecksResult>(*plan, unit_prefix), section, label);
    if (!result) continue;  // another member: the leader holds the results
    leader = true;
    const TraceChecksResult& res = *result;
    nlohmann::json meta = {
        {"trace", paths[t]},    {"n", tr.n_tokens},     {"layers", tr.n_layers},          {"heads", tr.n_heads},
        {"budget", res.budget}, {"policies", policies}, {"prompt_len", o.run.prompt_len}, {"seed", o.run.seed}};
    for (const char* key : {"model", "text_source", "model_sha256"})
      if (tr.metadata.count(key)) meta[key] = tr.metadata.at(key);
    out.traces.push_back(verify_trace_entry(names[t], std::move(meta), tr, o, res));
    meta = out.traces.back().meta;
    const long fails = out.traces.back().theorem_failures;
    out.theorem_failures += fails;
    if (on_trace) on_trace({paths[t], names[t], meta, &tr, &res, fails});
    if (keep) out.reports.push_back(res.report.to_json(meta));
    if (several) {
      if (staged) write_report(staged->stage(names[t]), res, meta);
      continue;
    }
    if (!request.report_dir.empty()) {
      const std::vector<std::string> files = write_report(request.report_dir, res, meta);
      out.report_files = static_cast<int>(files.size());
      out.written.insert(out.written.end(), files.begin(), files.end());
    }
    if (!request.json_path.empty()) {
      write_file_atomic(request.json_path, out.reports.back().dump(1) + "\n");
      out.written.push_back(request.json_path);
    }
    if (!request.plot_path.empty()) {
      write_file_atomic(request.plot_path, report_plots(res).front().second);
      out.written.push_back(request.plot_path);
    }
  }
  if (!leader) return std::nullopt;
  if (several) {
    if (staged) {
      staged->commit(out.traces);
      out.report_files = static_cast<int>(out.traces.size());
      out.written.push_back(request.report_dir);
    }
    if (!request.json_path.empty()) {
      write_file_atomic(request.json_path, out.to_json().dump(1) + "\n");
      out.written.push_back(request.json_path);
    }
  }
  return out;
}

Report VerifyResult::report() const {
  Report out;
  if (!several) {
    Table& t = out.table({"claim", "kind", "instance", "records", "paper/theorem holds", "metric", "worst", "where"});
    for (const auto& s : traces.front().summaries)
      t.row({s.id, to_string(s.kind), s.variant, integer(s.records),
             std::to_string(s.holding) + "/" + std::to_string(s.records), claim_info(s.id).metric, decimal(s.worst),
             s.where});
    if (const auto lines = other_papers_lines(traces.front().summaries); !lines.empty()) {
      out.line("");
      out.line("Other papers' claims, beside the authors' words:");
      for (const auto& l : lines) out.line(l);
    }
    const nlohmann::json& meta = traces.front().meta;
    if (const auto it = meta.find("not_applicable"); it != meta.end())
      for (const auto& [id, why] : it->items()) out.line(id + ": not applicable (" + why.get<std::string>() + ")");
  } else {
    out.line("Across " + std::to_string(traces.size()) + " traces:");
    out.line("");
    Table& t =
        out.table({"claim", "kind", "instance", "traces holding", "records holding", "metric", "worst", "where"});
    for (const auto& x : cross_trace_summary(traces))
      t.row({x.id, to_string(x.kind), x.variant, std::to_string(x.traces_holding) + "/" + std::to_string(x.traces),
             std::to_string(x.holding) + "/" + std::to_string(x.records), claim_info(x.id).metric, decimal(x.worst),
             x.where});
  }
  out.line("");
  out.line("Theorem checks: " +
           (theorem_failures == 0 ? std::string(several ? "all hold on every trace" : "all hold")
                                  : std::to_string(theorem_failures) + " FAIL (a bug in kvoracle)") +
           "; findings and defects are measurements of the paper's claims, not pass/fail.");
  return out;
}

TraceReportEntry verify_trace_entry(const std::string& name, nlohmann::json meta, const Trace& trace,
                                    const TraceChecksOptions& options, const TraceChecksResult& result) {
  // A check asked for that this trace cannot answer is said so, not left out in silence.
  if (const std::string why = trace_text_missing(trace); !why.empty() && check_enabled(options, "E3"))
    meta["not_applicable"] = {{"E3", why}};
  return {name, std::move(meta), result.report.summaries(), static_cast<long>(result.report.records().size()),
          result.report.theorem_failures()};
}

}  // namespace kvo

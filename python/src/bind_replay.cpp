// kvoracle._core: the policy registry, replay and the greedy scorer.
#include <cctype>
#include <string>
#include <string_view>

#include "bindings_support.hpp"
#include "kvo/core/policy_registry.hpp"
#include "kvo/core/replay_run.hpp"
#include "kvo/gpu/score_run.hpp"
#include "schema_kwargs.hpp"

namespace kvo::python {

namespace {

// A registry name as the attribute of kvoracle.policy that spells it: upper case, '-' -> '_'.
std::string constant_name(std::string_view name) {
  std::string out(name);
  for (char& c : out) c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

void bind_replay(py::module_& m) {
  // kvoracle.policy.H2O holds the name of PolicyId::H2O: every registry name as a constant, so Python code names a
  // policy without spelling it (a typo is an AttributeError, not a string the C++ side refuses).
  py::module_ names = m.def_submodule("policy", "every policy's registry name as a constant (H2O, H2O_PAPER, ...)");
  for (const auto& p : policy_table()) names.attr(constant_name(p.name).c_str()) = std::string(p.name);

  m.def("policies", [] {
    py::list out;
    for (const auto& p : policy_table())
      out.append(py::dict(py::arg("name") = std::string(p.name), py::arg("summary") = std::string(p.summary),
                          py::arg("nested") = p.traits.nested, py::arg("decoder") = p.traits.decoder,
                          py::arg("scorer") = p.traits.scorer != ScorerVariant::None,
                          py::arg("seeded") = p.traits.seeded, py::arg("prefill_score") = p.traits.prefill_score));
    return out;
  });

  m.def(
      "replay",
      [](const Trace& t, const std::string& policy, const py::kwargs& kwargs) {
        ReplayRequest req;
        req.policy = parse_policy(policy);
        apply_kwargs(ReplayRequest::schema(), req, kwargs, "replay", not_named("policy"));
        const ReplayOptions o = req.options(t);
        std::optional<ReplayResult> result;
        {
          py::gil_scoped_release release;
          result = run_replay(t, req, WorkTeam(req.threads));
        }
        const ReplayResult& r = *result;
        py::list heads;
        for (const auto& h : r.heads) {
          py::list kept, evicted;
          py::array_t<double> mass(static_cast<py::ssize_t>(h.steps.size()));
          for (size_t i = 0; i < h.steps.size(); ++i) {
            kept.append(to_array(h.steps[i].kept));
            evicted.append(to_array(h.steps[i].evicted));
            mass.mutable_at(static_cast<py::ssize_t>(i)) = h.steps[i].retained_mass;
          }
          heads.append(py::dict(py::arg("layer") = h.layer, py::arg("head") = h.head, py::arg("k") = h.budget.total,
                                py::arg("kept") = kept, py::arg("evicted") = evicted, py::arg("retained_mass") = mass,
                                py::arg("mean_retained_mass") = h.mean_retained_mass));
        }
        return with_report(heads, replay_report(r, o, "the trace", t.n_tokens));
      },
      py::arg("trace"), py::arg("policy") = policy_name(PolicyId::H2O),
      ("replay a policy over every head: per head the kept and evicted positions per step.\n" +
       kwargs_doc(ReplayRequest::schema(), ReplayRequest{}, "Options (keyword arguments, the CLI's flags)",
                  not_named("policy")))
          .c_str());

  m.def(
      "score",
      [](const Trace& t, const std::string& policy, const py::kwargs& kwargs) {
        ScoreRequest req;
        req.policy = parse_policy(policy);
        apply_kwargs(ScoreRequest::schema(), req, kwargs, "score", not_named("policy"));
        const ScorerOptions o = req.options(t);
        const std::vector<std::string> labels = req.budget_labels();
        ScorerResult r;
        {
          py::gil_scoped_release release;
          r = run_score(t, req);
        }
        py::list units;
        for (const auto& u : r.units) {
          py::array_t<double> sc(static_cast<py::ssize_t>(u.score.size()));
          std::copy(u.score.begin(), u.score.end(), sc.mutable_data());
          units.append(py::dict(py::arg("layer") = u.layer, py::arg("head") = u.head,
                                py::arg("budget") = labels[static_cast<size_t>(u.budget_index)],
                                py::arg("k") = u.budget.total, py::arg("evict_step") = to_array(u.evict_step),
                                py::arg("score") = sc));
        }
        return with_report(py::dict(py::arg("device") = r.device, py::arg("units") = units),
                           score_report(r, o.budgets(), req.policy, "the trace", t.n_tokens));
      },
      py::arg("trace"), py::arg("policy") = policy_name(PolicyId::H2O),
      ("the greedy scorer (h2o, h2o-paper) over every head and several budgets in one pass (kvoracle score; "
       "budgets=None: the run option budget alone): per unit the step each token left the cache (-1: kept) and its "
       "final score.\n" +
       kwargs_doc(ScoreRequest::schema(), ScoreRequest{}, "Options (keyword arguments, the CLI's flags)",
                  not_named("policy")))
          .c_str());
}

}  // namespace kvo::python

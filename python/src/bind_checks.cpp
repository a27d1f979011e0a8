// kvoracle._core: the claim checks of kvoracle verify, on a Trace object (verify) and on trace
// files with their report (verify_traces, the library call behind the CLI's command).
#include "bindings_support.hpp"
#include "kvo/proofs_check/power_law.hpp"
#include "kvo/proofs_check/trace_checks.hpp"
#include "kvo/proofs_check/verify_run.hpp"
#include "schema_kwargs.hpp"

namespace kvo::python {

namespace {

py::dict power_law_dict(const PowerLawFit& f) {
  py::dict d;
  d["n"] = f.n;
  d["n_tail"] = f.n_tail;
  d["xmin"] = f.xmin;
  d["alpha"] = f.alpha;
  d["ks"] = f.ks;
  d["p_value"] = f.p_value < 0 ? py::object(py::none()) : py::object(py::float_(f.p_value));
  d["bootstrap"] = f.bootstrap;
  d["lognormal"] = py::dict(py::arg("R") = f.lognormal.ratio, py::arg("p") = f.lognormal.p_value,
                            py::arg("mu") = f.lognormal.a, py::arg("sigma") = f.lognormal.b);
  d["exponential"] = py::dict(py::arg("R") = f.exponential.ratio, py::arg("p") = f.exponential.p_value,
                              py::arg("lambda") = f.exponential.a);
  d["verdict"] = f.verdict();
  return d;
}

}  // namespace

void bind_checks(py::module_& m) {
  m.def(
      "fit_power_law",
      [](const std::vector<double>& values, std::optional<double> xmin, int bootstrap, int max_candidates, int min_tail,
         std::uint64_t seed) {
        if (xmin) return power_law_dict(fit_power_law_at(values, *xmin));
        PowerLawOptions o;
        o.bootstrap = bootstrap;
        o.max_candidates = max_candidates;
        o.min_tail = min_tail;
        o.seed = seed;
        PowerLawFit f;
        {
          py::gil_scoped_release release;
          f = fit_power_law(values, o);
        }
        return power_law_dict(f);
      },
      py::arg("values"), py::arg("xmin") = py::none(), py::arg("bootstrap") = PowerLawOptions{}.bootstrap,
      py::arg("max_candidates") = PowerLawOptions{}.max_candidates, py::arg("min_tail") = PowerLawOptions{}.min_tail,
      py::arg("seed") = 0,
      "the power-law fit of check E2 (Clauset, Shalizi and Newman): x_min by the smallest KS distance, the MLE "
      "exponent, a bootstrap p-value, Vuong's tests against a log-normal and an exponential; with xmin given, the "
      "tail above it alone (no search, no bootstrap). Returns a dict.");
  // verify() takes a Trace object and returns its report: no trace paths, no output files.
  const auto on_object = not_named("traces", "report", "json", "plot", "keep_reports");
  m.def(
      "verify",
      [on_object](const Trace& t, const py::kwargs& kwargs) {
        VerifyRequest req;
        apply_kwargs(VerifyRequest::schema(), req, kwargs, "verify", on_object);
        const TraceChecksOptions o = req.options(t);
        TraceChecksResult r;
        {
          py::gil_scoped_release release;
          r = run_trace_checks(t, o);
        }
        // The report kvoracle verify prints for one trace.
        VerifyResult shown;
        shown.traces.push_back(verify_trace_entry("trace", {{"budget", r.budget}}, t, o, r));
        shown.theorem_failures = shown.traces.back().theorem_failures;
        return with_report(json_to_python(r.report.to_json({{"budget", r.budget}})), shown.report());
      },
      py::arg("trace"),
      ("run the claim checks C1-C27, D1-D11 and E1-E3; returns report.json as a dict (docs/report-format.md).\n" +
       kwargs_doc(VerifyRequest::schema(), VerifyRequest{}, "Options (keyword arguments, the CLI's verify flags)",
                  on_object))
          .c_str());

  const auto on_files = not_named("traces", "keep_reports");
  m.def(
      "verify_traces",
      [on_files](std::vector<std::string> traces, const py::kwargs& kwargs) {
        VerifyRequest req;
        py::dict rest;
        apply_kwargs(VerifyRequest::schema(), req, kwargs, "verify_traces", on_files, &rest);
        const int threads = team_threads(rest, "verify_traces", VerifyRequest::schema().names());
        req.traces = std::move(traces);
        req.keep_reports = true;
        std::optional<VerifyResult> r;
        {
          py::gil_scoped_release release;
          r = run_verify(req, WorkTeam(threads));
        }
        return with_report(json_to_python(r->to_json()), r->report());
      },
      py::arg("traces"),
      ("`kvoracle verify` on trace files or directories: the claim checks, the report directory (report=), "
       "report.json (json=) and the ratio plot (plot=, one trace) as the CLI writes them. Returns one trace's "
       "report.json as a dict, or for several the report across them with every trace's under 'reports'. "
       "threads=0: all cores.\n" +
       kwargs_doc(VerifyRequest::schema(), VerifyRequest{}, "Options (keyword arguments, the CLI's verify flags)",
                  on_files))
          .c_str());
}

}  // namespace kvo::python

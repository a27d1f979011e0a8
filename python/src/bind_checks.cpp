// kvoracle._core: the claim checks of kvoracle verify, on a Trace object (verify) and on trace
// files with their report (verify_traces, the library call behind the CLI's command).
#include "bindings_support.hpp"
#include "kvo/proofs_check/power_law.hpp"
#include "kvo/proofs_check/trace_checks.hpp"
#include "kvo/proofs_check/verify_run.hpp"

namespace kvo::python {

namespace {

// The check options of both calls: policies, check ids, the sweep, and the sizes of
// kvo::check_size_table() taken out of the keyword arguments (the rest are run options).
TraceChecksOptions checks_options(const std::vector<std::string>& policies, const std::vector<std::string>& checks,
                                  const std::optional<std::vector<double>>& sweep, py::kwargs& kwargs) {
  TraceChecksOptions o;
  if (!policies.empty()) o.policies = parse_policy_names(policies);
  for (const auto& c : checks) o.checks.insert(c);
  if (sweep) o.sweep = *sweep;  // None: the library's default sweep, as the CLI's
  for (const CheckSizeEntry& e : check_size_table()) {
    const py::str name(std::string(e.name));
    if (!kwargs.contains(name)) continue;
    const py::object value = kwargs[name];
    require(py::isinstance<py::int_>(value) && !py::isinstance<py::bool_>(value),
            std::string(e.name) + " takes an integer");
    o.*e.field = value.cast<int>();
    PyDict_DelItem(kwargs.ptr(), name.ptr());
  }
  return o;
}

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

std::string sizes_doc() {
  const TraceChecksOptions defaults;
  std::string s = "Check sizes (keyword arguments, the CLI's verify flags):";
  for (const CheckSizeEntry& e : check_size_table())
    s += "\n  " + std::string(e.name) + "=" + std::to_string(defaults.*e.field) + ": " + std::string(e.help);
  return s + "\n";
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
  m.def(
      "verify",
      [](const Trace& t, std::vector<std::string> policies, std::vector<std::string> checks,
         std::optional<std::vector<double>> sweep, py::kwargs kwargs) {
        TraceChecksOptions o = checks_options(policies, checks, sweep, kwargs);
        o.run = run_options(kwargs, "verify").build(o.policies.front(), &t);
        TraceChecksResult r;
        {
          py::gil_scoped_release release;
          r = run_trace_checks(t, o);
        }
        return json_to_python(r.report.to_json({{"budget", r.budget}}));
      },
      py::arg("trace"), py::arg("policies") = std::vector<std::string>{},
      py::arg("checks") = std::vector<std::string>{}, py::arg("sweep") = py::none(),
      ("run the claim checks C1-C27, D1-D11 and E1-E3; returns report.json as a dict (docs/report-format.md).\n" +
       sizes_doc() + run_options_doc())
          .c_str());

  m.def(
      "verify_traces",
      [](std::vector<std::string> traces, std::string report, std::string json, std::string plot,
         std::vector<std::string> policies, std::vector<std::string> checks, std::optional<std::vector<double>> sweep,
         int threads, py::kwargs kwargs) {
        VerifyRequest req;
        req.traces = std::move(traces);
        req.checks = checks_options(policies, checks, sweep, kwargs);
        req.run = run_options(kwargs, "verify_traces");
        req.report_dir = std::move(report);
        req.json_path = std::move(json);
        req.plot_path = std::move(plot);
        req.keep_reports = true;
        std::optional<VerifyResult> r;
        {
          py::gil_scoped_release release;
          r = run_verify(req, WorkTeam(threads));
        }
        return json_to_python(r->to_json());
      },
      py::arg("traces"), py::kw_only(), py::arg("report") = "", py::arg("json") = "", py::arg("plot") = "",
      py::arg("policies") = std::vector<std::string>{}, py::arg("checks") = std::vector<std::string>{},
      py::arg("sweep") = py::none(), py::arg("threads") = 0,
      ("`kvoracle verify` on trace files or directories: the claim checks, the report directory (report=), "
       "report.json (json=) and the ratio plot (plot=, one trace) as the CLI writes them. Returns one trace's "
       "report.json as a dict, or for several the report across them with every trace's under 'reports'.\n" +
       sizes_doc() + run_options_doc())
          .c_str());
}

}  // namespace kvo::python

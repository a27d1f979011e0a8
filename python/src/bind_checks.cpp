// kvoracle._core: the claim checks of kvoracle verify.
#include "bindings_support.hpp"
#include "kvo/proofs_check/trace_checks.hpp"

namespace kvo::python {

void bind_checks(py::module_& m) {
  m.def(
      "verify",
      [](const Trace& t, std::vector<std::string> policies, std::vector<std::string> checks,
         std::optional<std::vector<double>> sweep, const py::kwargs& kwargs) {
        TraceChecksOptions o;
        if (!policies.empty()) {
          o.policies.clear();
          for (const auto& p : policies) o.policies.push_back(parse_policy(p));
        }
        o.run = run_options(kwargs, "verify").build(o.policies.front(), &t);
        for (auto& c : checks) o.checks.insert(c);
        if (sweep) o.sweep = std::move(*sweep);  // None: the library's default sweep, as the CLI's
        TraceChecksResult r;
        {
          py::gil_scoped_release release;
          r = run_trace_checks(t, o);
        }
        return json_to_python(r.report.to_json({{"budget", r.budget}}));
      },
      py::arg("trace"), py::arg("policies") = std::vector<std::string>{},
      py::arg("checks") = std::vector<std::string>{}, py::arg("sweep") = py::none(),
      ("run the claim checks C1-C27 / D1-D11; returns report.json as a dict (docs/report-format.md).\n" +
       run_options_doc())
          .c_str());
}

}  // namespace kvo::python

// kvoracle._core: the claim checks of kvoracle verify.
#include "bindings_support.hpp"
#include "kvo/checks/trace_checks.hpp"

namespace kvo::python {

void bind_checks(py::module_& m) {
  m.def(
      "verify",
      [](const Trace& t, const std::string& budget, std::vector<std::string> policies, std::vector<std::string> checks,
         int prompt_len, std::uint64_t seed, std::vector<double> sweep) {
        TraceChecksOptions o;
        if (!policies.empty()) {
          o.policies.clear();
          for (const auto& p : policies) o.policies.push_back(parse_policy(p));
        }
        o.run = run_config(policy_name(o.policies.front()), budget, "", {}, prompt_len, seed);
        for (auto& c : checks) o.checks.insert(c);
        o.sweep = std::move(sweep);
        TraceChecksResult r;
        {
          py::gil_scoped_release release;
          r = run_trace_checks(t, o);
        }
        return json_to_python(r.report.to_json({{"budget", r.budget}}));
      },
      py::arg("trace"), py::arg("budget") = "20%", py::arg("policies") = std::vector<std::string>{},
      py::arg("checks") = std::vector<std::string>{}, py::arg("prompt_len") = 0, py::arg("seed") = 0,
      py::arg("sweep") = std::vector<double>{},
      "run the claim checks C1-C27 / D1-D11; returns report.json as a dict (docs/report-format.md)");
}

}  // namespace kvo::python

// kvoracle._core: the conformance kit (golden decisions, and the checker of another implementation's).
#include "bindings_support.hpp"
#include "kvo/conformance/check.hpp"
#include "kvo/conformance/golden.hpp"
#include "kvo/conformance/tie_trace.hpp"
#include "schema_kwargs.hpp"

namespace kvo::python {
namespace {

// A golden file as a dict, or its path.
conformance::GoldenFile golden_of(const py::handle& golden) {
  if (py::isinstance<py::dict>(golden)) return conformance::GoldenFile::from_json(python_to_json(golden));
  return conformance::read_golden(py::str(golden).cast<std::string>());
}

// Decisions as a JSON Lines file's path, or a list of dicts (numpy values turned into lists first).
std::vector<conformance::Decision> decisions_of(const py::handle& decisions) {
  if (py::isinstance<py::str>(decisions)) return conformance::read_decisions(decisions.cast<std::string>());
  const py::object dumps = py::module_::import("json").attr("dumps");
  const py::object plain = py::module_::import("kvoracle._plain").attr("plain");
  std::string lines;
  for (const py::handle& d : decisions) lines += dumps(plain(d)).cast<std::string>() + "\n";
  return conformance::parse_decisions(lines);
}

}  // namespace

void bind_conformance(py::module_& m) {
  m.def(
      "conformance_kit_trace",
      [](const std::string& kind, int prompt) {
        require(kind == "tie" || kind == "press", "kind: expected 'tie' or 'press', got '" + kind + "'");
        require(kind == "tie" || prompt == 0, "prompt: the press trace is all prompt");
        return kind == "tie" ? conformance::tie_trace({.prompt_len = prompt}) : conformance::press_tie_trace({});
      },
      py::arg("kind") = "tie", py::arg("prompt") = 0,
      "the conformance kit's trace: 'tie' (dense attention with tied pairs, for the policies; prompt: tokens held "
      "whole, then cut once) or 'press' (q, k, v with repeated keys, all prompt, for the presses); the traces the "
      "shipped golden files were made on (docs/conformance.md)");
  m.def(
      "conformance_golden",
      [](const py::object& trace, const py::kwargs& kwargs) {
        conformance::GoldenRequest req;
        apply_kwargs(conformance::GoldenRequest::schema(), req, kwargs, "conformance_golden");
        const bool tie = trace.is_none();
        const Trace t = tie ? conformance::tie_trace({}) : trace.cast<Trace>();
        std::optional<conformance::GoldenFile> g;
        {
          py::gil_scoped_release release;
          g = conformance::make_golden(t, req, tie ? "tie-trace (kvoracle conformance, seed 0)" : "the trace");
        }
        return json_to_python(g->to_json());
      },
      py::arg("trace") = py::none(),
      ("golden eviction decisions of kvoracle's policies on a trace (None: the kit's tie trace), as the golden "
       "file's dict (kvoracle conformance golden; docs/conformance.md).\n" +
       kwargs_doc(conformance::GoldenRequest::schema(), conformance::GoldenRequest{},
                  "Golden options (keyword arguments, the CLI's `conformance golden` flags)"))
          .c_str());
  m.def(
      "conformance_check",
      [](const py::object& golden, const py::object& decisions, double tie_tolerance) {
        const conformance::GoldenFile g = golden_of(golden);
        const std::vector<conformance::Decision> d = decisions_of(decisions);
        const conformance::ConformanceResult r = conformance::check_conformance(g, d, {.tie_tolerance = tie_tolerance});
        return with_report(json_to_python(r.to_json()), r.report());
      },
      py::arg("golden"), py::arg("decisions"), py::arg("tie_tolerance") = conformance::CheckOptions{}.tie_tolerance,
      "another implementation's decisions (a JSON Lines file's path, or a list of dicts with policy, budget, layer, "
      "head, step and evicted or kept; numpy values allowed) against a golden file (its dict or path): per case, "
      "the first step, layer and KV head where they depart, and its kind (kvoracle conformance check)");
}

}  // namespace kvo::python

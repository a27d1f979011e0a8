// kvoracle._core: trace I/O, policies, replay, the oracles, the checks and the decoder-facing
// eviction manager on numpy arrays (pybind11). Errors arrive as ValueError with kvoracle's
// one-line message.
#include "bindings_support.hpp"
#include "kvo/version.hpp"

using namespace kvo::python;

PYBIND11_MODULE(_core, m) {
  m.doc() = "kvoracle: greedy KV-cache eviction against exact oracles on attention traces";
  m.attr("__version__") = kvo::version;
  m.attr("__build_isa__") = kvo::build_isa;  // "portable" or "native"
  py::register_exception<kvo::Error>(m, "KvoError", PyExc_ValueError);

  bind_report(m);
  bind_trace(m);
  bind_replay(m);
  bind_oracles(m);
  bind_checks(m);
  bind_manager(m);
  bind_presses(m);
  bind_model(m);
  bind_conformance(m);
}

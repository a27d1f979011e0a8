// Internal: what the binding files of kvoracle._core share: numpy <-> C++ conversions, the
// facility-location argument read in place, the one way to a run configuration, and JSON to Python.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "kvo/core/error.hpp"
#include "kvo/core/facility_location.hpp"
#include "kvo/core/press_parameters.hpp"
#include "kvo/core/run_options.hpp"
#include "kvo/core/text_list.hpp"
#include "kvo/report/report.hpp"

namespace kvo::python {

namespace py = pybind11;

using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;
using DoubleArray = py::array_t<double, py::array::c_style | py::array::forcecast>;
using IntArray = py::array_t<int, py::array::c_style | py::array::forcecast>;
using FortranArray = py::array_t<double, py::array::f_style | py::array::forcecast>;

inline py::array_t<float> layer_tensor(const std::vector<std::vector<float>>& per_layer, int layer, int a, int b,
                                       int c) {
  require(layer >= 0 && layer < static_cast<int>(per_layer.size()),
          "layer " + std::to_string(layer) + " is not in the trace");
  const auto& v = per_layer[static_cast<size_t>(layer)];
  require(!v.empty(), "this tensor is absent in layer " + std::to_string(layer));
  py::array_t<float> out({a, b, c});
  std::copy(v.begin(), v.end(), out.mutable_data());
  return out;
}

inline std::vector<float> from_array(const FloatArray& a, const std::string& what, int layer,
                                     std::vector<py::ssize_t> shape) {
  require(a.ndim() == 3, what + " of layer " + std::to_string(layer) + " must be a 3-d array");
  for (int x = 0; x < 3; ++x)
    require(a.shape(x) == shape[static_cast<size_t>(x)],
            what + " of layer " + std::to_string(layer) + " has the wrong shape");
  return std::vector<float>(a.data(), a.data() + a.size());
}

// Column-major input (numpy makes the F-ordered copy when needed): one plain copy into Eigen.
inline Eigen::MatrixXd to_matrix(const FortranArray& a) {
  require(a.ndim() == 2, "expected a 2-d array");
  return Eigen::Map<const Eigen::MatrixXd>(a.data(), a.shape(0), a.shape(1));
}

// Facility location over the caller's float64 array: read in place when it is Fortran-ordered, or
// C-ordered and exactly symmetric; a C-ordered asymmetric one is transposed once in C++ (cache
// blocked: about 0.7 s for 800 MB here, numpy's strided copy 0.7-1.4 s); anything else
// is converted to a Fortran-ordered float64 array by numpy first. Holds that array while in use.
class SimilarityView {
 public:
  explicit SimilarityView(const py::array& a) {
    require(a.ndim() == 2, "similarity must be a 2-d array");
    const int rows = static_cast<int>(a.shape(0)), cols = static_cast<int>(a.shape(1));
    const bool c_only = (a.flags() & py::array::c_style) && !(a.flags() & py::array::f_style);
    if (py::isinstance<py::array_t<double>>(a) && c_only) {
      array_ = a;
      f_.emplace(FacilityLocation::RowMajor{}, static_cast<const double*>(array_.data()), rows, cols);
    } else {
      array_ = FortranArray::ensure(a);
      require(static_cast<bool>(array_), "similarity must be convertible to a float64 array");
      f_.emplace(static_cast<const double*>(array_.data()), rows, cols);
    }
  }
  const FacilityLocation& get() const { return *f_; }

 private:
  py::array array_;
  std::optional<FacilityLocation> f_;
};

inline py::array_t<int> to_array(const std::vector<int>& v) {
  py::array_t<int> out(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), out.mutable_data());
  return out;
}

// The run options of a call, from its keyword arguments: the names of kvo::run_options_schema(), the
// same schema and the same parser as the CLI's flags (a list may be a Python list or "a,b"). A
// keyword the schema does not name is refused with the known ones.
RunOptions run_options(const py::dict& kwargs, const char* call);
// The validated run configuration of one policy; prompt_len defaults to the trace's, as in the CLI.
inline RunConfig run_config(const std::string& policy, const py::kwargs& kwargs, const char* call,
                            const Trace* trace = nullptr) {
  return run_options(kwargs, call).build(parse_policy(policy), trace);
}
// "Run options (keyword arguments): sinks=4, history=32, ...": the docstring part every call shares.
std::string run_options_doc();
// kvpress's press parameters from keyword arguments (window_size=..., n_sink=..., seed=...): the
// names of kvo::press_parameters_schema(), the same schema as the CLI's press flags.
PressOptions press_parameters(const py::dict& kwargs, const char* call);
// "Press parameters (keyword arguments): window_size=64, ...".
std::string press_parameters_doc();

inline py::object json_to_python(const nlohmann::json& j) {
  return py::module_::import("json").attr("loads")(j.dump());
}
inline nlohmann::json python_to_json(const py::handle& o) {
  return nlohmann::json::parse(py::module_::import("json").attr("dumps")(o).cast<std::string>());
}

// One function per binding file, each adding its part of the module.
// `value` (a dict or a list) as kvoracle.Result or kvoracle.Results: the same content, with the
// report the CLI prints as its `report` attribute.
py::object with_report(py::object value, Report report);
void bind_report(py::module_& m);  // Report
void bind_trace(py::module_& m);   // Trace, read_trace, write_trace
void bind_replay(py::module_& m);  // policies, replay, score
void bind_oracles(
    py::module_& m);               // topk_optimum, facility_location_optimum, greedy_facility_location, offline_optimum
void bind_checks(py::module_& m);  // verify, verify_traces
void bind_model(py::module_& m);   // Model: tokenizer, generate
void bind_conformance(py::module_& m);  // the conformance kit: golden decisions, the checker
void bind_manager(py::module_& m);
void bind_presses(py::module_& m);  // kvpress presses, the prefill optimum

}  // namespace kvo::python

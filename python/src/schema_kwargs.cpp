// kvoracle._core: keyword arguments -> the library's requests and option sets, through their schemas.
#include "schema_kwargs.hpp"

#include "bindings_support.hpp"

namespace kvo::python {

std::optional<std::string> keyword_field_text(const py::handle& value, const std::string& name, bool list,
                                              bool is_switch, const char* call) {
  if (value.is_none()) return std::nullopt;
  const std::string where = std::string(call) + ": " + name;
  if (py::isinstance<py::bool_>(value)) {
    require(is_switch, where + " takes a " + (list ? "list" : "value") + ", not a bool");
    return value.cast<bool>() ? "true" : "false";
  }
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    require(list, where + " takes one value, not a list");
    std::string text;
    for (const auto& item : value) {
      const std::string one = py::str(item);
      require(!one.empty(), where + ": an empty item");
      text += (text.empty() ? "" : ",") + one;
    }
    return text;
  }
  if (py::isinstance<py::str>(value) || py::isinstance<py::int_>(value) || py::isinstance<py::float_>(value))
    return std::string(py::str(value));
  throw Error(where + " takes a string or a number, not " + std::string(py::str(py::type::of(value).attr("__name__"))));
}

int team_threads(const py::dict& rest, const char* call, const std::string& known) {
  int threads = 0;
  for (const auto& [key, value] : rest) {
    const std::string name = py::str(key);
    require(name == "threads", std::string(call) + ": unknown option '" + name + "' (options: " + known + ", threads)");
    threads = value.cast<int>();
  }
  return threads;
}

RunOptions run_options(const py::dict& kwargs, const char* call) {
  RunOptions o;
  apply_kwargs(run_options_schema(), o, kwargs, call);
  return o;
}

std::string run_options_doc() {
  return kwargs_doc(run_options_schema(), RunOptions{},
                    "Run options (keyword arguments, the CLI's flags; docs/cli.md)");
}

PressOptions press_parameters(const py::dict& kwargs, const char* call) {
  PressOptions o;
  apply_kwargs(press_parameters_schema(), o, kwargs, call);
  return o;
}

std::string press_parameters_doc() {
  return kwargs_doc(press_parameters_schema(), PressOptions{},
                    "Press parameters (keyword arguments, kvpress's names; the CLI's press flags)");
}

}  // namespace kvo::python

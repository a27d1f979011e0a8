// kvoracle._core: keyword arguments -> kvo::RunOptions through the library's one option table.
#include "bindings_support.hpp"

namespace kvo::python {

namespace {

std::string known_options() {
  std::string s;
  for (const auto& e : run_option_table()) s.append(s.empty() ? "" : ", ").append(e.name);
  return s;
}

std::string option_text(const py::handle& value, const RunOptionEntry& e, const char* call) {
  const std::string name(e.name);
  if (py::isinstance<py::bool_>(value))
    throw Error(std::string(call) + ": " + name + " takes a " + (e.repeatable ? "list" : "value") + ", not a bool");
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    require(e.repeatable, std::string(call) + ": " + name + " takes one value, not a list");
    std::string text;
    for (const auto& item : value) {
      const std::string one = py::str(item);
      require(!one.empty(), std::string(call) + ": " + name + ": an empty item");
      text += (text.empty() ? "" : ",") + one;
    }
    return text;
  }
  if (py::isinstance<py::str>(value) || py::isinstance<py::int_>(value) || py::isinstance<py::float_>(value))
    return py::str(value);
  throw Error(std::string(call) + ": " + name + " takes a string or a number, not " +
              std::string(py::str(py::type::of(value).attr("__name__"))));
}

}  // namespace

RunOptions run_options(const py::kwargs& kwargs, const char* call) {
  RunOptions o;
  for (const auto& [key, value] : kwargs) {
    const std::string name = py::str(key);
    const RunOptionEntry* e = find_run_option(name);
    require(e != nullptr, std::string(call) + ": unknown option '" + name + "' (run options: " + known_options() + ")");
    if (value.is_none()) continue;
    set_run_option(o, *e, option_text(value, *e, call));
  }
  return o;
}

std::string run_options_doc() {
  const RunOptions defaults;
  std::string s = "Run options (keyword arguments, the CLI's flags; docs/cli.md):";
  for (const auto& e : run_option_table()) {
    const std::string v = run_option_text(defaults, e);
    s += "\n  " + std::string(e.name) + "=" + (v.empty() ? "None" : v) + ": " + std::string(e.help);
  }
  return s;
}

PressOptions press_parameters(const py::dict& kwargs, const char* call) {
  PressOptions o;
  for (const auto& [key, value] : kwargs) {
    const std::string name = py::str(key);
    const PressParameterEntry* e = find_press_parameter(name);
    require(e != nullptr, std::string(call) + ": unknown press parameter '" + name +
                              "' (press parameters: " + press_parameter_names() + ")");
    require(py::isinstance<py::int_>(value) && !py::isinstance<py::bool_>(value),
            std::string(call) + ": " + name + " takes an integer");
    set_press_parameter(o, *e, value.cast<long long>());
  }
  return o;
}

std::string press_parameters_doc() {
  const nlohmann::json defaults = press_parameters_to_json(PressOptions{});
  std::string s = "Press parameters (keyword arguments, kvpress's names; the CLI's press flags):";
  for (const auto& e : press_parameter_table())
    s += "\n  " + std::string(e.name) + "=" + defaults[std::string(e.name)].dump() + ": " + std::string(e.help);
  return s;
}

}  // namespace kvo::python

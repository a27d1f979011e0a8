// Internal: a schema's fields (kvo/core/field_schema.hpp) as a Python call's keyword arguments and
// its docstring. A keyword sets its field through the same text the CLI's flag takes, so the two
// cannot disagree: a list or tuple is joined by commas (list fields only), a bool is true/false
// (true|false fields only), None keeps the default, anything else is what str() writes.
#pragma once
#include <pybind11/pybind11.h>

#include <functional>
#include <optional>
#include <string>
#include <type_traits>

#include "kvo/core/error.hpp"
#include "kvo/core/field_schema.hpp"

namespace kvo::python {

namespace py = pybind11;

// The text of one keyword for a field, or nothing for None. kvo::Error naming the keyword for a value
// of the wrong shape.
std::optional<std::string> keyword_field_text(const py::handle& value, const std::string& name, bool list,
                                              bool is_switch, const char* call);

// Sets `t`'s fields from `kwargs`; a keyword no field (that `take` accepts) names goes to `rest` when
// given, else is refused with the known names (and an older name with its new one).
template <class T>
void apply_kwargs(const Schema<T>& schema, T& t, const py::dict& kwargs, const char* call,
                  const std::type_identity_t<std::function<bool(const Field<T>&)>>& take = {},
                  py::dict* rest = nullptr) {
  schema.refuse_exclusive([&](std::string_view name) {
    const Field<T>* f = schema.find(name);
    const py::str key(std::string{name});
    return f != nullptr && (!take || take(*f)) && kwargs.contains(key) && !kwargs[key].is_none();
  });
  for (const auto& [key, value] : kwargs) {
    const std::string name = py::str(key);
    const Field<T>* f = schema.find(name);
    if (f == nullptr || (take && !take(*f))) {
      if (rest != nullptr) {
        (*rest)[key] = value;
        continue;
      }
      schema.refuse_renamed(name);
      std::string known;
      for (const Field<T>& x : schema.fields())
        if (x.has_text() && (!take || take(x))) known.append(known.empty() ? "" : ", ").append(x.name());
      throw Error(std::string(call) + ": unknown option '" + name + "' (options: " + known + ")");
    }
    if (const auto text = keyword_field_text(value, name, f->list, f->kind == "true|false", call)) f->set(t, *text);
  }
}

// The keyword `threads` (a team's size, not a request's field) from the keywords `rest` that no
// field named; any other keyword there is refused with `known`, the call's options.
int team_threads(const py::dict& rest, const char* call, const std::string& known);

// A `take` that leaves out the fields a call takes as its own parameters (prompt_len, trace).
template <class... Names>
auto not_named(Names... names) {
  return [=](const auto& f) { return ((f.name() != names) && ...); };
}

// "<title>:\n  name=default: help" for every field `take` accepts.
template <class T>
std::string kwargs_doc(const Schema<T>& schema, const T& defaults, const std::string& title,
                       const std::type_identity_t<std::function<bool(const Field<T>&)>>& take = {}) {
  std::string s = title + ":";
  for (const Field<T>& f : schema.fields()) {
    if (!f.has_text() || (take && !take(f))) continue;
    const std::string v = f.get(defaults);
    s += "\n  " + f.name() + "=" + (v.empty() ? "None" : v) + ": " + f.info.help;
  }
  return s;
}

}  // namespace kvo::python

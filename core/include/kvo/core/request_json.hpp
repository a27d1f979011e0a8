// The fields the requests' JSON forms share, for JsonForm (json_fields.hpp): a policy by name, a
// policy list by names, a run's options and kvpress's press parameters, each by name.
#pragma once
#include <string>
#include <vector>

#include "kvo/core/json_fields.hpp"
#include "kvo/core/policy_registry.hpp"
#include "kvo/core/press_parameters.hpp"
#include "kvo/core/run_options.hpp"

namespace kvo {

template <class T>
JsonForm<T>& policy_field(JsonForm<T>& form, std::string name, PolicyId T::*m) {
  return form.field(
      std::move(name), [m](const T& t) { return nlohmann::json(policy_name(t.*m)); },
      [m](T& t, const nlohmann::json& v) { t.*m = parse_policy(v.get<std::string>()); });
}

template <class T>
JsonForm<T>& policies_field(JsonForm<T>& form, std::string name, std::vector<PolicyId> T::*m) {
  return form.field(
      std::move(name), [m](const T& t) { return nlohmann::json(policy_name_list(t.*m)); },
      [m](T& t, const nlohmann::json& v) { t.*m = parse_policy_names(v.get<std::vector<std::string>>()); });
}

template <class T>
JsonForm<T>& run_field(JsonForm<T>& form, std::string name, RunOptions T::*m) {
  return form.field(
      std::move(name), [m](const T& t) { return to_json(t.*m); },
      [m](T& t, const nlohmann::json& v) { t.*m = run_options_from_json(v); });
}

template <class T>
JsonForm<T>& press_field(JsonForm<T>& form, std::string name, std::string what, PressOptions T::*m) {
  return form.field(
      std::move(name), [m](const T& t) { return press_parameters_to_json(t.*m); },
      [m, what](T& t, const nlohmann::json& v) { t.*m = press_parameters_from_json(v, what); });
}

}  // namespace kvo

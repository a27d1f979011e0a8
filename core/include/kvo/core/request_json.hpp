// The codecs (field_schema.hpp) of the field types requests share beyond numbers and text: a policy
// by its registry name, a policy list by names ("h2o,tova" as text, an array of names in JSON).
#pragma once
#include <string>
#include <vector>

#include "kvo/core/field_schema.hpp"
#include "kvo/core/policy_registry.hpp"

namespace kvo {

template <>
struct FieldCodec<PolicyId> {
  static constexpr std::string_view kind = "policy";
  static constexpr bool list = false;
  static void from_text(PolicyId& v, std::string_view text, const std::string&) { v = parse_policy(text); }
  static std::string to_text(PolicyId v) { return policy_name(v); }
  static nlohmann::json to_json(PolicyId v) { return policy_name(v); }
  static void from_json(PolicyId& v, const nlohmann::json& j, const std::string&) {
    if (!j.is_string()) throw JsonWrongType{};
    v = parse_policy(j.get<std::string>());
  }
};

template <>
struct FieldCodec<std::vector<PolicyId>> {
  static constexpr std::string_view kind = "list of policies";
  static constexpr bool list = true;
  static void from_text(std::vector<PolicyId>& v, std::string_view text, const std::string&) {
    v = parse_policy_list(text);
  }
  static std::string to_text(const std::vector<PolicyId>& v) { return join_policy_names(v); }
  static nlohmann::json to_json(const std::vector<PolicyId>& v) { return policy_name_list(v); }
  static void from_json(std::vector<PolicyId>& v, const nlohmann::json& j, const std::string&) {
    if (!j.is_array()) throw JsonWrongType{};
    for (const auto& x : j)
      if (!x.is_string()) throw JsonWrongType{};
    v = parse_policy_names(j.get<std::vector<std::string>>());
  }
};

}  // namespace kvo

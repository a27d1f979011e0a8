#include "kvo/core/json_fields.hpp"

#include "kvo/core/error.hpp"

namespace kvo {

void read_json_fields(const nlohmann::json& j, const std::string& what,
                      const std::function<bool(const std::string& key, const nlohmann::json& value)>& read) {
  require(j.is_object(), what + ": expected a JSON object");
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    try {
      known = read(key, value);
    } catch (const nlohmann::json::exception&) {
      throw Error(what + ": '" + key + "' has the wrong type: " + value.dump());
    } catch (const JsonWrongType&) {
      throw Error(what + ": '" + key + "' has the wrong type: " + value.dump());
    }
    require(known, what + ": unknown field '" + key + "'");
  }
}

void throw_unknown_option(const std::string& what, std::string_view name, const std::string& known) {
  throw Error(what + ": unknown option '" + std::string(name) + "' (options: " + known + ")");
}

void throw_exclusive_options(const std::string& what, std::string_view a, std::string_view b) {
  std::string m = what;
  m.append(": give ").append(a).append(" or ").append(b).append(", not both");
  throw Error(m);
}

void throw_renamed_option(const std::string& what, std::string_view old, const std::string& now) {
  throw Error(what + ": '" + std::string(old) + "' is now called '" + now + "'");
}

}  // namespace kvo

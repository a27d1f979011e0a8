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
    }
    require(known, what + ": unknown field '" + key + "'");
  }
}

}  // namespace kvo

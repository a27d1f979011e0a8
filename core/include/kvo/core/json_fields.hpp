// Reading a request's JSON form field by field, with one rule for errors: the request and the
// field are named when a field is unknown or of the wrong type.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace kvo {

// Calls read(key, value) for every field of the object `j`; `read` returns false for a key it does
// not know. kvo::Error "<what>: expected a JSON object", "<what>: unknown field 'k'" or
// "<what>: 'k' has the wrong type: <value>".
void read_json_fields(const nlohmann::json& j, const std::string& what,
                      const std::function<bool(const std::string& key, const nlohmann::json& value)>& read);

}  // namespace kvo

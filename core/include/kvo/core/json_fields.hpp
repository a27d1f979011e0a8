// Reading a request's JSON form field by field, with one rule for errors: the request and the
// field are named when a field is unknown or of the wrong type (Schema<T>, field_schema.hpp, reads
// every request this way).
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace kvo {

// Thrown by a field's reader for a value of the wrong JSON type; read_json_fields names the field.
struct JsonWrongType {};

// Calls read(key, value) for every field of the object `j`; `read` returns false for a key it does
// not know. kvo::Error "<what>: expected a JSON object", "<what>: unknown field 'k'" or
// "<what>: 'k' has the wrong type: <value>".

void read_json_fields(const nlohmann::json& j, const std::string& what,
                      const std::function<bool(const std::string& key, const nlohmann::json& value)>& read);

// kvo::Error "<what>: unknown option '<name>' (options: <known>)".
[[noreturn]] void throw_unknown_option(const std::string& what, std::string_view name, const std::string& known);
// kvo::Error "<what>: give a or b, not both".
[[noreturn]] void throw_exclusive_options(const std::string& what, std::string_view a, std::string_view b);
// kvo::Error "<what>: '<old>' is now called '<now>'".
[[noreturn]] void throw_renamed_option(const std::string& what, std::string_view old, const std::string& now);

}  // namespace kvo

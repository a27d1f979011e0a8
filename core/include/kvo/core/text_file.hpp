// Whole files read for the commands and bindings that take a path: one message for a file that
// cannot be read, and one for a file (or inline text) that is not JSON.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace kvo {

// The file's bytes; kvo::Error "WHAT: cannot read PATH".
std::string read_text_file(const std::string& path, std::string_view what);

// The file's JSON; kvo::Error "WHAT: cannot read PATH" or "WHAT: PATH is not JSON: ...".
nlohmann::json read_json_file(const std::string& path, std::string_view what);

// A JSON document given inline (text whose first non-blank character is '{') or as a file's path;
// the errors as read_json_file's ("the text" in place of a path for inline text).
nlohmann::json json_text_or_file(const std::string& arg, std::string_view what);

}  // namespace kvo

#include "kvo/core/text_file.hpp"

#include <fstream>
#include <sstream>

#include "kvo/core/error.hpp"

namespace kvo {
namespace {

nlohmann::json parse_json(const std::string& text, std::string_view what, const std::string& source) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(std::string(what) + ": " + source + " is not JSON: " + e.what());
  }
}

}  // namespace

std::string read_text_file(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  require(in.good(), std::string(what) + ": cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

nlohmann::json read_json_file(const std::string& path, std::string_view what) {
  return parse_json(read_text_file(path, what), what, path);
}

nlohmann::json json_text_or_file(const std::string& arg, std::string_view what) {
  const auto first = arg.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && arg[first] == '{') return parse_json(arg, what, "the text");
  return read_json_file(arg, what);
}

}  // namespace kvo

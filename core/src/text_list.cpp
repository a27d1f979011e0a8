#include "kvo/core/text_list.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "kvo/core/error.hpp"

namespace kvo {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

}  // namespace

std::vector<std::string> split_list(std::string_view text, std::string_view what) {
  std::vector<std::string> out;
  if (trim(text).empty()) return out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = trim(text.substr(start, comma - start));
    require(!item.empty(), std::string(what) + ": empty item in '" + std::string(text) + "'");
    out.emplace_back(item);
    start = comma + 1;
  }
  return out;
}

int parse_int(std::string_view text, std::string_view what) {
  const std::string_view t = trim(text);
  int v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  require(!t.empty() && ec == std::errc() && end == t.data() + t.size(),
          std::string(what) + ": '" + std::string(text) + "' is not an integer");
  return v;
}

double parse_number(std::string_view text, std::string_view what) {
  const std::string t(trim(text));
  char* end = nullptr;
  const double v = t.empty() ? 0.0 : std::strtod(t.c_str(), &end);
  require(!t.empty() && end == t.c_str() + t.size() && std::isfinite(v),
          std::string(what) + ": '" + std::string(text) + "' is not a number");
  return v;
}

std::vector<int> parse_int_list(std::string_view text, std::string_view what) {
  std::vector<int> out;
  for (const auto& item : split_list(text, what)) out.push_back(parse_int(item, what));
  return out;
}

std::vector<double> parse_number_list(std::string_view text, std::string_view what) {
  std::vector<double> out;
  for (const auto& item : split_list(text, what)) out.push_back(parse_number(item, what));
  return out;
}

std::string join_list(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& item : items) s.append(s.empty() ? "" : ",").append(item);
  return s;
}

std::string join_numbers(const std::vector<double>& values) {
  std::ostringstream s;
  for (size_t i = 0; i < values.size(); ++i) s << (i ? "," : "") << values[i];
  return s.str();
}

}  // namespace kvo

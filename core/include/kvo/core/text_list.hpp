// The one parser of comma-separated lists in options and metadata ("h2o,tova", "0.2,0.4", "1,3"):
// items are trimmed of spaces, and an empty item (",,", a trailing comma) is an error naming the list.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace kvo {

// `what` names the list in errors ("policies", "layers").
std::vector<std::string> split_list(std::string_view text, std::string_view what);
std::vector<int> parse_int_list(std::string_view text, std::string_view what);
std::vector<double> parse_number_list(std::string_view text, std::string_view what);

// The inverse: items joined by commas; numbers written as an ostream writes them ("0.05,0.1").
std::string join_list(const std::vector<std::string>& items);
std::string join_numbers(const std::vector<double>& values);

// One whole integer or number ("12", "0.5"); kvo::Error naming `what` for anything else.
int parse_int(std::string_view text, std::string_view what);
double parse_number(std::string_view text, std::string_view what);

}  // namespace kvo

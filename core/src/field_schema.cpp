#include "kvo/core/field_schema.hpp"

#include <limits>

#include "kvo/core/error.hpp"
#include "kvo/core/text_list.hpp"

namespace kvo {

namespace {

// JSON numbers of an integer field must be whole and fit the field's type.
template <class V>
V whole(const nlohmann::json& j, const std::string& name) {
  if (!j.is_number_integer()) throw JsonWrongType{};
  if (j.is_number_unsigned()) {
    require(j.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<V>::max()),
            name + " is out of range");
  } else {
    const long long x = j.get<long long>();
    require(x >= std::numeric_limits<V>::min() && x <= std::numeric_limits<V>::max(), name + " is out of range");
  }
  return j.get<V>();
}

// A number, or a percentage of one ("20%" is 0.2): shares read either way.
double number_or_percent(std::string_view text, const std::string& name) {
  std::string_view t = text;
  while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
  if (!t.empty() && t.back() == '%') return parse_number(t.substr(0, t.size() - 1), name) / 100.0;
  return parse_number(text, name);
}

}  // namespace

std::string kebab_flag(std::string_view name) {
  std::string flag = "--" + std::string(name);
  for (char& c : flag)
    if (c == '_') c = '-';
  return flag;
}

std::string number_text(double v) { return join_numbers({v}); }

bool parse_switch(std::string_view text, std::string_view what) {
  if (text == "true" || text == "1") return true;
  if (text == "false" || text == "0") return false;
  throw Error(std::string(what) + " takes true or false, got '" + std::string(text) + "'");
}

void FieldCodec<int>::from_text(int& v, std::string_view text, const std::string& name) { v = parse_int(text, name); }
void FieldCodec<int>::from_json(int& v, const nlohmann::json& j, const std::string& name) { v = whole<int>(j, name); }

void FieldCodec<long long>::from_text(long long& v, std::string_view text, const std::string& name) {
  const double d = parse_number(text, name);
  require(d == static_cast<double>(static_cast<long long>(d)),
          name + ": '" + std::string(text) + "' is not an integer");
  v = static_cast<long long>(d);
}
void FieldCodec<long long>::from_json(long long& v, const nlohmann::json& j, const std::string& name) {
  v = whole<long long>(j, name);
}

void FieldCodec<std::uint64_t>::from_text(std::uint64_t& v, std::string_view text, const std::string& name) {
  const double d = parse_number(text, name);
  require(d >= 0 && d == static_cast<double>(static_cast<std::uint64_t>(d)),
          name + ": '" + std::string(text) + "' is not a non-negative integer");
  v = static_cast<std::uint64_t>(d);
}
void FieldCodec<std::uint64_t>::from_json(std::uint64_t& v, const nlohmann::json& j, const std::string& name) {
  if (!j.is_number_integer()) throw JsonWrongType{};
  require(j.is_number_unsigned() || j.get<long long>() >= 0, name + " must be >= 0");
  v = j.get<std::uint64_t>();
}

void FieldCodec<double>::from_text(double& v, std::string_view text, const std::string& name) {
  v = number_or_percent(text, name);
}
void FieldCodec<double>::from_json(double& v, const nlohmann::json& j, const std::string&) {
  if (!j.is_number()) throw JsonWrongType{};
  v = j.get<double>();
}

void FieldCodec<bool>::from_json(bool& v, const nlohmann::json& j, const std::string&) {
  if (!j.is_boolean()) throw JsonWrongType{};
  v = j.get<bool>();
}

void FieldCodec<std::string>::from_json(std::string& v, const nlohmann::json& j, const std::string&) {
  if (!j.is_string()) throw JsonWrongType{};
  v = j.get<std::string>();
}

void FieldCodec<std::optional<int>>::from_text(std::optional<int>& v, std::string_view text, const std::string& name) {
  v = parse_int(text, name);
}
void FieldCodec<std::optional<int>>::from_json(std::optional<int>& v, const nlohmann::json& j,
                                               const std::string& name) {
  v = j.is_null() ? std::optional<int>() : std::optional<int>(whole<int>(j, name));
}

void FieldCodec<std::vector<int>>::from_text(std::vector<int>& v, std::string_view text, const std::string& name) {
  v = parse_int_list(text, name);
}
std::string FieldCodec<std::vector<int>>::to_text(const std::vector<int>& v) {
  std::vector<std::string> items;
  for (int x : v) items.push_back(std::to_string(x));
  return join_list(items);
}
void FieldCodec<std::vector<int>>::from_json(std::vector<int>& v, const nlohmann::json& j, const std::string& name) {
  if (!j.is_array()) throw JsonWrongType{};
  std::vector<int> out;
  for (const auto& x : j) out.push_back(whole<int>(x, name));
  v = std::move(out);
}

void FieldCodec<std::vector<double>>::from_text(std::vector<double>& v, std::string_view text,
                                                const std::string& name) {
  std::vector<double> out;
  for (const std::string& item : split_list(text, name)) out.push_back(number_or_percent(item, name));
  v = std::move(out);
}
std::string FieldCodec<std::vector<double>>::to_text(const std::vector<double>& v) { return join_numbers(v); }
void FieldCodec<std::vector<double>>::from_json(std::vector<double>& v, const nlohmann::json& j, const std::string&) {
  if (!j.is_array()) throw JsonWrongType{};
  std::vector<double> out;
  for (const auto& x : j) {
    if (!x.is_number()) throw JsonWrongType{};
    out.push_back(x.get<double>());
  }
  v = std::move(out);
}

void FieldCodec<std::vector<std::string>>::from_text(std::vector<std::string>& v, std::string_view text,
                                                     const std::string& name) {
  v = split_list(text, name);
}
std::string FieldCodec<std::vector<std::string>>::to_text(const std::vector<std::string>& v) { return join_list(v); }
void FieldCodec<std::vector<std::string>>::from_json(std::vector<std::string>& v, const nlohmann::json& j,
                                                     const std::string&) {
  if (!j.is_array()) throw JsonWrongType{};
  std::vector<std::string> out;
  for (const auto& x : j) {
    if (!x.is_string()) throw JsonWrongType{};
    out.push_back(x.get<std::string>());
  }
  v = std::move(out);
}

}  // namespace kvo

// The one declaration of kvpress's press parameters (window_size, n_sink, seed, ...): each has its
// kvpress keyword, the CLI's flag and a help line. The CLI's flags, the Python keywords and the
// JSON form of a press request all come from press_parameter_table(), so they cannot disagree.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "kvo/core/press.hpp"

namespace kvo {

using PressParameterField = std::variant<int PressOptions::*, std::uint64_t PressOptions::*>;

struct PressParameterEntry {
  std::string_view name;  // kvpress's keyword, the Python keyword and the JSON key: "window_size"
  std::string_view flag;  // the CLI's long option: "--window-size" ("--press-seed" for seed)
  PressParameterField field;
  std::string_view help;
};

std::span<const PressParameterEntry> press_parameter_table();
const PressParameterEntry* find_press_parameter(std::string_view name);  // nullptr when unknown
std::string press_parameter_names();                                     // "window_size, kernel_size, ..." for messages

// Sets one parameter from an integer; kvo::Error naming it for a negative seed.
void set_press_parameter(PressOptions& o, const PressParameterEntry& e, long long value);

// The JSON form of the parameters (not the press or its ratio): every parameter by name; from_json
// takes a subset and refuses unknown names ("<what>: unknown field 'x'").
nlohmann::json press_parameters_to_json(const PressOptions& o);
PressOptions press_parameters_from_json(const nlohmann::json& j, const std::string& what = "press parameters");

}  // namespace kvo

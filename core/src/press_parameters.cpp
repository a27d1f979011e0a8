#include "kvo/core/press_parameters.hpp"

#include <climits>
#include <type_traits>

#include "kvo/core/error.hpp"
#include "kvo/core/json_fields.hpp"

namespace kvo {

namespace {

constexpr PressParameterEntry kTable[] = {
    {"window_size", "--window-size", &PressOptions::window_size, "snapkv, pyramidkv: last queries scored and kept"},
    {"kernel_size", "--kernel-size", &PressOptions::kernel_size, "snapkv, pyramidkv: pooling kernel (odd)"},
    {"beta", "--beta", &PressOptions::beta, "pyramidkv: pyramid steepness"},
    {"n_sink", "--n-sink", &PressOptions::n_sink, "streaming_llm, lagkv, cur: first tokens kept"},
    {"lag_size", "--lag-size", &PressOptions::lag_size, "lagkv: partition length"},
    {"local_window_size", "--local-window-size", &PressOptions::local_window_size, "cur: local normalisation window"},
    {"chunk_size", "--chunk-size", &PressOptions::chunk_size, "non_causal_attn: tile of the non-causal attention"},
    {"seed", "--press-seed", &PressOptions::seed, "random: torch.manual_seed of RandomPress(seed=...)"},
};

}  // namespace

std::span<const PressParameterEntry> press_parameter_table() { return kTable; }

const PressParameterEntry* find_press_parameter(std::string_view name) {
  for (const auto& e : kTable)
    if (e.name == name) return &e;
  return nullptr;
}

std::string press_parameter_names() {
  std::string s;
  for (const auto& e : kTable) s.append(s.empty() ? "" : ", ").append(e.name);
  return s;
}

void set_press_parameter(PressOptions& o, const PressParameterEntry& e, long long value) {
  std::visit(
      [&](auto field) {
        using T = std::remove_reference_t<decltype(o.*field)>;
        if constexpr (std::is_same_v<T, std::uint64_t>) {
          require(value >= 0, std::string(e.name) + " must be >= 0");
          o.*field = static_cast<std::uint64_t>(value);
        } else {
          require(value >= INT_MIN && value <= INT_MAX, std::string(e.name) + " is out of range");
          o.*field = static_cast<T>(value);
        }
      },
      e.field);
}

nlohmann::json press_parameters_to_json(const PressOptions& o) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& e : kTable) std::visit([&](auto field) { j[std::string(e.name)] = o.*field; }, e.field);
  return j;
}

PressOptions press_parameters_from_json(const nlohmann::json& j, const std::string& what) {
  PressOptions o;
  read_json_fields(j, what, [&](const std::string& key, const nlohmann::json& value) {
    const PressParameterEntry* e = find_press_parameter(key);
    if (e == nullptr) return false;
    require(value.is_number_integer(), what + ": '" + key + "' has the wrong type: " + value.dump());
    set_press_parameter(o, *e, value.get<long long>());
    return true;
  });
  return o;
}

}  // namespace kvo

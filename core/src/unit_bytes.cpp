#include "kvo/core/unit_bytes.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

#include "kvo/core/error.hpp"

namespace kvo {

std::string to_unit_bytes(const nlohmann::json& value) {
  const std::vector<std::uint8_t> b = nlohmann::json::to_cbor(value);
  return std::string(b.begin(), b.end());
}

nlohmann::json from_unit_bytes(const std::string& bytes, const std::string& what) {
  try {
    return nlohmann::json::from_cbor(bytes);
  } catch (const nlohmann::json::exception& e) {
    throw Error(what + " is not readable: " + e.what());
  }
}

double json_number(const nlohmann::json& value) { return value.is_null() ? NAN : value.get<double>(); }

}  // namespace kvo

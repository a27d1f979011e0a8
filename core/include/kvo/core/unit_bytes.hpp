// How a work unit's results travel between MPI ranks and sit in checkpoints: JSON values encoded
// as CBOR, which keeps every double bit for bit (NaN and infinities included).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace kvo {

std::string to_unit_bytes(const nlohmann::json& value);
// kvo::Error "<what> is not readable: ..." when the bytes are not CBOR.
nlohmann::json from_unit_bytes(const std::string& bytes, const std::string& what);
// A number of a decoded value; null (a non-finite double written as JSON text) reads as NaN.
double json_number(const nlohmann::json& value);

}  // namespace kvo

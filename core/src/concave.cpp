#include "kvo/core/concave.hpp"

#include <cmath>

#include "kvo/core/error.hpp"

namespace kvo {

double apply(Concave h, double z) {
  switch (h) {
    case Concave::Identity:
      return z;
    case Concave::Sqrt:
      return std::sqrt(1.0 + z) - 1.0;
    case Concave::Log:
      return std::log1p(z);
  }
  return z;
}

Concave parse_concave(const std::string& name) {
  if (name == "id" || name == "identity") return Concave::Identity;
  if (name == "sqrt") return Concave::Sqrt;
  if (name == "log") return Concave::Log;
  throw Error("unknown concave transform '" + name + "' (expected id, sqrt or log)");
}

std::string to_string(Concave h) {
  switch (h) {
    case Concave::Identity:
      return "id";
    case Concave::Sqrt:
      return "sqrt";
    case Concave::Log:
      return "log";
  }
  return "?";
}

}  // namespace kvo

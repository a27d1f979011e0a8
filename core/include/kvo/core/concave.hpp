// The concave transforms h of H2O Remark D.14, normalised so that h(0) = 0:
// identity h(z) = z, sqrt h(z) = sqrt(1+z) - 1, log h(z) = log(1+z). All strictly increasing.
#pragma once
#include <string>

namespace kvo {

enum class Concave { Identity, Sqrt, Log };

double apply(Concave h, double z);
Concave parse_concave(const std::string& name);  // "id", "sqrt" or "log"; kvo::Error otherwise
std::string to_string(Concave h);

}  // namespace kvo

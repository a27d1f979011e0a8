// Error type for bad input: one clear line naming the problem, caught at the CLI boundary.
#pragma once
#include <stdexcept>
#include <string>

namespace kvo {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Throws kvo::Error(message) when cond is false.
void require(bool cond, const std::string& message);

}  // namespace kvo

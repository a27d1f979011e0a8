#include "kvo/core/error.hpp"

namespace kvo {

void require(bool cond, const std::string& message) {
  if (!cond) throw Error(message);
}

}  // namespace kvo

// H2O with a recent window (recommended semantics = the real-drop code's).
#include "kvo/core/policies.hpp"

namespace kvo {

void H2OPolicy::on_begin() { score_.assign(static_cast<size_t>(setup().n), 0.0); }

void H2OPolicy::on_attend(int, std::span<const int> attended, std::span<const double> probs) {
  for (size_t t = 0; t < attended.size(); ++t) score_[attended[t]] += probs[t];
}

}  // namespace kvo

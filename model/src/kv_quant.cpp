#include "kvo/model/kv_quant.hpp"

#include <algorithm>
#include <cmath>

#include "kvo/core/error.hpp"

namespace kvo::model {

void KvQuantization::validate() const {
  require(bits == 0 || (bits >= 2 && bits <= 8), "kv quantization: bits must be 0 (off) or in [2, 8]");
  require(group >= 1, "kv quantization: the group must hold at least one value");
}

void quantize_dequantize(std::span<float> x, const KvQuantization& q) {
  if (!q.on()) return;
  const float steps = static_cast<float>((1 << q.bits) - 1);
  for (size_t a = 0; a < x.size(); a += static_cast<size_t>(q.group)) {
    const auto g = x.subspan(a, std::min(x.size() - a, static_cast<size_t>(q.group)));
    const auto [lo, hi] = std::minmax_element(g.begin(), g.end());
    const float mn = *lo, range = *hi - *lo;
    if (!(range > 0)) continue;
    const float scale = steps / range;
    for (float& v : g) v = std::clamp(std::round((v - mn) * scale), 0.0f, steps) / scale + mn;
  }
}

}  // namespace kvo::model

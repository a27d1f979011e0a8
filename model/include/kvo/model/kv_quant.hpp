// Group-wise asymmetric integer quantization of cached keys and values, as FlexGen compresses its KV
// cache (CompressionConfig(num_bits, group_size, group_dim = head_dim, symmetric = False), the
// setting the H2O code pairs with its eviction): per group of `group` consecutive values, the
// minimum and the range map onto the 2^bits - 1 steps, values round to the nearest step. The
// decoder stores the dequantised values, so attention reads exactly what a compressed cache returns.
#pragma once
#include <span>

namespace kvo::model {

struct KvQuantization {
  int bits = 0;    // 0: values kept as they are; else 2..8
  int group = 64;  // values per group along the head dimension (the last group may be shorter)
  bool on() const { return bits > 0; }
  void validate() const;  // kvo::Error: bits not 0 or in [2, 8], group below 1
};

// Quantizes and dequantizes `x` in place, group by group (a constant group is kept as it is).
void quantize_dequantize(std::span<float> x, const KvQuantization& q);

}  // namespace kvo::model

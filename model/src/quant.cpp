// Block formats of ggml (ggml-common.h): F32, F16, BF16, and the 32-value blocks Q4_0
// (f16 scale + 16 bytes of nibbles), Q4_1 (f16 scale, f16 min, 16 bytes) and Q8_0 (f16 scale,
// 32 int8). Nibble j of a block's byte j is value j; its high nibble is value j + 16.
#include <cstring>

#include "kvo/core/error.hpp"
#include "kvo/core/safetensors.hpp"
#include "kvo/model/gguf.hpp"

namespace kvo::model {
namespace {

struct Layout {
  std::uint64_t block;  // values per block
  std::uint64_t bytes;  // bytes per block
};

bool layout_of(std::uint32_t type, Layout& l) {
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::F32:
      l = {1, 4};
      return true;
    case GgmlType::F16:
      l = {1, 2};
      return true;
    case GgmlType::BF16:
      l = {1, 2};
      return true;
    case GgmlType::Q4_0:
      l = {32, 18};
      return true;
    case GgmlType::Q4_1:
      l = {32, 20};
      return true;
    case GgmlType::Q8_0:
      l = {32, 34};
      return true;
    default:
      return false;
  }
}

float f16(const unsigned char* p) {
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return half_to_float(h);
}

}  // namespace

std::string ggml_type_name(std::uint32_t type) {
  static const char* names[] = {"F32",  "F16",  "Q4_0", "Q4_1", "Q4_2", "Q4_3", "Q5_0", "Q5_1",
                                "Q8_0", "Q8_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K"};
  if (type < 16) return names[type];
  if (type == 30) return "BF16";
  return "type " + std::to_string(type);
}

std::uint64_t ggml_row_bytes(std::uint32_t type, std::uint64_t count) {
  Layout l{};
  if (!layout_of(type, l) || count % l.block != 0) return 0;
  return count / l.block * l.bytes;
}

void dequantize_row(std::uint32_t type, const unsigned char* src, float* dst, std::uint64_t count,
                    const std::string& name) {
  Layout l{};
  require(layout_of(type, l), "tensor '" + name + "' has type " + ggml_type_name(type) +
                                  ", which kvoracle does not dequantise (F32, F16, BF16, Q4_0, Q4_1, Q8_0)");
  require(count % l.block == 0, "tensor '" + name + "' is not a whole number of " + ggml_type_name(type) + " blocks");
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::F32:
      std::memcpy(dst, src, count * 4);
      return;
    case GgmlType::F16:
      for (std::uint64_t i = 0; i < count; ++i) dst[i] = f16(src + 2 * i);
      return;
    case GgmlType::BF16:
      for (std::uint64_t i = 0; i < count; ++i) {
        std::uint16_t b;
        std::memcpy(&b, src + 2 * i, 2);
        dst[i] = bf16_to_float(b);
      }
      return;
    case GgmlType::Q4_0:
      for (std::uint64_t b = 0; b < count / 32; ++b, src += 18, dst += 32) {
        const float d = f16(src);
        for (int j = 0; j < 16; ++j) {
          dst[j] = d * static_cast<float>((src[2 + j] & 0x0F) - 8);
          dst[j + 16] = d * static_cast<float>((src[2 + j] >> 4) - 8);
        }
      }
      return;
    case GgmlType::Q4_1:
      for (std::uint64_t b = 0; b < count / 32; ++b, src += 20, dst += 32) {
        const float d = f16(src), m = f16(src + 2);
        for (int j = 0; j < 16; ++j) {
          dst[j] = d * static_cast<float>(src[4 + j] & 0x0F) + m;
          dst[j + 16] = d * static_cast<float>(src[4 + j] >> 4) + m;
        }
      }
      return;
    case GgmlType::Q8_0:
      for (std::uint64_t b = 0; b < count / 32; ++b, src += 34, dst += 32) {
        const float d = f16(src);
        for (int j = 0; j < 32; ++j) dst[j] = d * static_cast<float>(static_cast<std::int8_t>(src[2 + j]));
      }
      return;
    default:
      return;
  }
}

}  // namespace kvo::model

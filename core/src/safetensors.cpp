#include "kvo/core/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "kvo/core/atomic_file.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/mapped_file.hpp"

static_assert(std::endian::native == std::endian::little, "kvoracle assumes a little-endian host");

namespace kvo {
namespace {

constexpr std::uint64_t kMaxHeader = 100ull << 20;  // 100 MiB of JSON is surely not a trace

DType parse_dtype(const std::string& s, const std::string& tensor) {
  if (s == "F32") return DType::F32;
  if (s == "F16") return DType::F16;
  if (s == "BF16") return DType::BF16;
  if (s == "I32") return DType::I32;
  if (s == "I64") return DType::I64;
  if (s == "U8") return DType::U8;
  throw Error("tensor '" + tensor + "' has unsupported dtype '" + s + "'");
}

}  // namespace

size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32:
    case DType::I32:
      return 4;
    case DType::F16:
    case DType::BF16:
      return 2;
    case DType::I64:
      return 8;
    case DType::U8:
      return 1;
  }
  return 1;
}

std::string dtype_name(DType t) {
  switch (t) {
    case DType::F32:
      return "F32";
    case DType::F16:
      return "F16";
    case DType::BF16:
      return "BF16";
    case DType::I32:
      return "I32";
    case DType::I64:
      return "I64";
    case DType::U8:
      return "U8";
  }
  return "?";
}

std::int64_t TensorInfo::numel() const {
  std::int64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in fp32
    const float f = static_cast<float>(mant) * 0x1p-24f;
    return sign ? -f : f;
  }
  if (exp == 31) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    return mant ? (sign ? -nan : nan) : std::bit_cast<float>(sign | 0x7f800000u);
  }
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));  // rebias 15 -> 127
}

// Round to nearest, ties to even, in integer arithmetic (no libm call: C4 converts every score of
// every step); tests/core/trace_io_test.cpp checks every half and every midpoint between two.
std::uint16_t float_to_half(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);   // NaN
  if (ax >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // |f| >= 65520: inf
  if (ax < 0x38800000u) {                                     // |f| < 2^-14: a multiple of 2^-24 (subnormal or zero)
    const float scaled = std::bit_cast<float>(ax) * 0x1p24f;  // exact
    const float rounded = (scaled + 0x1p23f) - 0x1p23f;       // to an integer, ties to even
    return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(rounded));
  }
  // Rebias the exponent (127 -> 15), keep 10 mantissa bits, round on the 13 dropped; a carry out of
  // the mantissa moves into the exponent, which is what rounding up to the next binade needs.
  std::uint32_t h = ((ax >> 23) - 112u) << 10 | ((ax >> 13) & 0x3ffu);
  const std::uint32_t rest = ax & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<std::uint16_t>(sign | h);
}

float bf16_to_float(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

std::uint16_t float_to_bf16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if (std::isnan(f)) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  const std::uint32_t rounded = x + 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>(rounded >> 16);
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  file_ = std::make_unique<MappedFile>(path, 8, "safetensors");
  parse(file_->data(), file_->size());
}

SafetensorsFile::SafetensorsFile(std::span<const unsigned char> bytes, std::string name) : path_(std::move(name)) {
  parse(bytes.data(), bytes.size());
}

void SafetensorsFile::parse(const unsigned char* base, size_t size) {
  const std::string& path = path_;
  require(size >= 8, "'" + path + "' is too short to be a safetensors file");
  map_size_ = size;
  {
    std::uint64_t hlen = 0;
    std::memcpy(&hlen, base, 8);
    require(hlen <= kMaxHeader && hlen <= map_size_ - 8,
            "'" + path + "': header length " + std::to_string(hlen) + " exceeds the file size");
    data_ = base + 8 + hlen;
    const size_t data_size = map_size_ - 8 - static_cast<size_t>(hlen);
    // JSON text holds no raw NUL (Python's safetensors refuses "{...}\0garbage" too).
    if (const void* nul = std::memchr(base + 8, 0, static_cast<size_t>(hlen)))
      throw Error("'" + path + "': the header has a NUL byte at offset " +
                  std::to_string(static_cast<const unsigned char*>(nul) - base - 8) + " (JSON text cannot)");
    nlohmann::json h;
    std::string duplicate;
    try {
      // The callback sees every key; a tensor named twice would otherwise silently keep the last.
      std::vector<std::string> keys;
      h = nlohmann::json::parse(base + 8, base + 8 + hlen,
                                [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
                                  if (depth == 1 && event == nlohmann::json::parse_event_t::key) {
                                    const auto key = parsed.get<std::string>();
                                    if (duplicate.empty() && std::find(keys.begin(), keys.end(), key) != keys.end())
                                      duplicate = key;
                                    keys.push_back(key);
                                  }
                                  return true;
                                });
    } catch (const nlohmann::json::exception& e) {
      throw Error("'" + path + "': the header is not valid JSON");
    }
    require(duplicate.empty(), "'" + path + "': the header names '" + duplicate + "' twice");
    require(h.is_object(), "'" + path + "': the header is not a JSON object");
    for (auto it = h.begin(); it != h.end(); ++it) {
      const std::string& name = it.key();
      const auto& v = it.value();
      if (name == "__metadata__") {
        require(v.is_object(), "'" + path + "': __metadata__ is not an object");
        for (auto m = v.begin(); m != v.end(); ++m) {
          require(m.value().is_string(), "'" + path + "': metadata '" + m.key() + "' is not a string");
          metadata_[m.key()] = m.value().get<std::string>();
        }
        continue;
      }
      const std::string where = "'" + path + "': tensor '" + name + "'";
      require(v.is_object() && v.contains("dtype") && v.contains("shape") && v.contains("data_offsets"),
              where + " lacks dtype, shape or data_offsets");
      require(v["dtype"].is_string(), where + " has a non-string dtype");
      TensorInfo t;
      t.name = name;
      t.dtype = parse_dtype(v["dtype"].get<std::string>(), name);
      require(v["shape"].is_array(), where + " has a shape that is not an array");
      std::uint64_t numel = 1;
      for (const auto& d : v["shape"]) {
        require(d.is_number_unsigned() || (d.is_number_integer() && d.get<std::int64_t>() >= 0),
                where + " has a negative or non-integer dimension");
        const auto dim = d.get<std::uint64_t>();
        require(dim == 0 || numel <= (std::uint64_t{1} << 48) / dim, where + " is implausibly large");
        numel *= dim;
        t.shape.push_back(static_cast<std::int64_t>(dim));
      }
      const auto& off = v["data_offsets"];
      require(off.is_array() && off.size() == 2 && off[0].is_number_unsigned() && off[1].is_number_unsigned(),
              where + " has data_offsets that are not two non-negative integers");
      const auto b = off[0].get<std::uint64_t>(), e = off[1].get<std::uint64_t>();
      require(b <= e && e <= data_size, where + " has data_offsets [" + std::to_string(b) + ", " + std::to_string(e) +
                                            "] outside the data section (" + std::to_string(data_size) + " bytes)");
      require(e - b == numel * dtype_size(t.dtype), where + " holds " + std::to_string(e - b) +
                                                        " bytes but its shape and dtype need " +
                                                        std::to_string(numel * dtype_size(t.dtype)));
      t.begin = static_cast<size_t>(b);
      t.end = static_cast<size_t>(e);
      tensors_.push_back(std::move(t));
    }
    std::vector<const TensorInfo*> by_off;
    for (const auto& t : tensors_)
      if (t.end > t.begin) by_off.push_back(&t);  // empty tensors occupy no bytes
    std::sort(by_off.begin(), by_off.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
    for (size_t x = 1; x < by_off.size(); ++x)
      require(by_off[x]->begin >= by_off[x - 1]->end,
              "'" + path + "': tensors '" + by_off[x - 1]->name + "' and '" + by_off[x]->name + "' overlap");
    // As Python's safetensors: the tensors tile the data section, nothing before, between or after.
    size_t end = 0;
    for (const TensorInfo* t : by_off) {
      require(t->begin == end, "'" + path + "': tensor '" + t->name + "' starts at byte " + std::to_string(t->begin) +
                                   " of the data section, not at " + std::to_string(end) + " (a gap)");
      end = t->end;
    }
    require(end == data_size, "'" + path + "': " + std::to_string(data_size - end) +
                                  " bytes follow the last tensor (the data section ends at byte " +
                                  std::to_string(end) + ")");
  }
}

SafetensorsFile::~SafetensorsFile() = default;

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

std::vector<float> SafetensorsFile::read_float(const TensorInfo& t) const {
  const size_t n = static_cast<size_t>(t.numel());
  std::vector<float> out(n);
  const unsigned char* p = bytes(t);
  switch (t.dtype) {
    case DType::F32:
      std::memcpy(out.data(), p, n * 4);
      break;
    case DType::F16:
    case DType::BF16:
      for (size_t x = 0; x < n; ++x) {
        std::uint16_t h;
        std::memcpy(&h, p + 2 * x, 2);
        out[x] = t.dtype == DType::F16 ? half_to_float(h) : bf16_to_float(h);
      }
      break;
    default:
      throw Error("'" + path_ + "': tensor '" + t.name + "' has dtype " + dtype_name(t.dtype) +
                  " where a float type (F32, F16, BF16) is expected");
  }
  return out;
}

std::vector<std::int32_t> SafetensorsFile::read_int32(const TensorInfo& t) const {
  const size_t n = static_cast<size_t>(t.numel());
  std::vector<std::int32_t> out(n);
  const unsigned char* p = bytes(t);
  if (t.dtype == DType::I32) {
    std::memcpy(out.data(), p, n * 4);
  } else if (t.dtype == DType::I64) {
    for (size_t x = 0; x < n; ++x) {
      std::int64_t v;
      std::memcpy(&v, p + 8 * x, 8);
      require(v >= std::numeric_limits<std::int32_t>::min() && v <= std::numeric_limits<std::int32_t>::max(),
              "'" + path_ + "': tensor '" + t.name + "' holds a value outside the int32 range");
      out[x] = static_cast<std::int32_t>(v);
    }
  } else {
    throw Error("'" + path_ + "': tensor '" + t.name + "' has dtype " + dtype_name(t.dtype) +
                " where an integer type (I32, I64) is expected");
  }
  return out;
}

namespace {
template <class T>
std::vector<unsigned char> raw(const std::vector<T>& v) {
  std::vector<unsigned char> b(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}
}  // namespace

TensorOut tensor_f32(std::string name, std::vector<std::int64_t> shape, const std::vector<float>& values) {
  return {std::move(name), DType::F32, std::move(shape), raw(values)};
}

TensorOut tensor_f16(std::string name, std::vector<std::int64_t> shape, const std::vector<float>& values) {
  std::vector<std::uint16_t> h(values.size());
  for (size_t x = 0; x < values.size(); ++x) h[x] = float_to_half(values[x]);
  return {std::move(name), DType::F16, std::move(shape), raw(h)};
}

TensorOut tensor_bf16(std::string name, std::vector<std::int64_t> shape, const std::vector<float>& values) {
  std::vector<std::uint16_t> b(values.size());
  for (size_t x = 0; x < values.size(); ++x) b[x] = float_to_bf16(values[x]);
  return {std::move(name), DType::BF16, std::move(shape), raw(b)};
}

TensorOut tensor_i32(std::string name, std::vector<std::int64_t> shape, const std::vector<std::int32_t>& values) {
  return {std::move(name), DType::I32, std::move(shape), raw(values)};
}

void write_safetensors(const std::string& path, const std::vector<TensorOut>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::json h = nlohmann::json::object();
  if (!metadata.empty()) h["__metadata__"] = metadata;
  size_t off = 0;
  for (const auto& t : tensors) {
    std::int64_t numel = 1;
    for (auto s : t.shape) numel *= s;
    require(static_cast<size_t>(numel) * dtype_size(t.dtype) == t.bytes.size(),
            "tensor '" + t.name + "' has a shape that disagrees with its data");
    h[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {off, off + t.bytes.size()}}};
    off += t.bytes.size();
  }
  std::string header = h.dump();
  header.append((8 - header.size() % 8) % 8, ' ');  // keep the data section 8-byte aligned
  const std::uint64_t hlen = header.size();
  AtomicFile f(path);
  f.stream().write(reinterpret_cast<const char*>(&hlen), 8);
  f.stream().write(header.data(), static_cast<std::streamsize>(header.size()));
  for (const auto& t : tensors)
    f.stream().write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
  f.commit();
}

}  // namespace kvo

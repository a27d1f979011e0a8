#include "kvo/model/gguf.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "kvo/core/error.hpp"
#include "kvo/core/mapped_file.hpp"

namespace kvo::model {
namespace {

constexpr std::uint64_t kMaxArray = 1ull << 28;  // elements in one metadata array
constexpr std::uint64_t kMaxString = 1ull << 26;

// A bounds-checked little-endian cursor over the mapped file.
class Cursor {
 public:
  Cursor(const unsigned char* p, size_t size, const std::string& path) : p_(p), size_(size), path_(path) {}
  size_t pos() const { return pos_; }
  void need(std::uint64_t n, const char* what) const {
    if (n > size_ - pos_)
      throw Error("'" + path_ + "' is truncated: " + what + " at byte " + std::to_string(pos_) + " runs past the end");
  }
  template <class T>
  T get(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string str(const char* what) {
    const auto n = get<std::uint64_t>(what);
    if (n > kMaxString) throw Error("'" + path_ + "': " + what + " has an implausible length " + std::to_string(n));
    need(n, what);
    std::string s(reinterpret_cast<const char*>(p_ + pos_), n);
    pos_ += n;
    return s;
  }

 private:
  const unsigned char* p_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& path_;
};

nlohmann::json read_value(Cursor& c, std::uint32_t type, const std::string& path, const std::string& key, int depth) {
  switch (type) {
    case 0:
      return c.get<std::uint8_t>("uint8 value");
    case 1:
      return c.get<std::int8_t>("int8 value");
    case 2:
      return c.get<std::uint16_t>("uint16 value");
    case 3:
      return c.get<std::int16_t>("int16 value");
    case 4:
      return c.get<std::uint32_t>("uint32 value");
    case 5:
      return c.get<std::int32_t>("int32 value");
    case 6:
      return c.get<float>("float32 value");
    case 7: {
      const auto b = c.get<std::uint8_t>("bool value");
      require(b <= 1, "'" + path + "': metadata '" + key + "' has a bool that is neither 0 nor 1");
      return b == 1;
    }
    case 8:
      return c.str("string value");
    case 9: {
      require(depth < 2, "'" + path + "': metadata '" + key + "' nests arrays too deeply");
      const auto et = c.get<std::uint32_t>("array type");
      const auto n = c.get<std::uint64_t>("array length");
      require(n <= kMaxArray, "'" + path + "': metadata '" + key + "' has an implausible array length");
      c.need(n, "array");  // every element takes at least one byte
      nlohmann::json arr = nlohmann::json::array();
      for (std::uint64_t i = 0; i < n; ++i) arr.push_back(read_value(c, et, path, key, depth + 1));
      return arr;
    }
    case 10:
      return c.get<std::uint64_t>("uint64 value");
    case 11:
      return c.get<std::int64_t>("int64 value");
    case 12:
      return c.get<double>("float64 value");
    default:
      throw Error("'" + path + "': metadata '" + key + "' has unknown value type " + std::to_string(type));
  }
}

}  // namespace

std::uint64_t GgufTensor::numel() const {
  std::uint64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

GgufFile::GgufFile(const std::string& path) : path_(path) {
  file_ = std::make_unique<MappedFile>(path, 24, "GGUF");
  parse(file_->data(), file_->size());
}

GgufFile::GgufFile(std::span<const unsigned char> bytes, std::string name) : path_(std::move(name)) {
  parse(bytes.data(), bytes.size());
}

void GgufFile::parse(const unsigned char* base, size_t size) {
  const std::string& path = path_;
  require(size >= 24, "'" + path + "' is too short to be a GGUF file");
  size_ = size;
  {
    Cursor c(base, size_, path_);
    require(std::memcmp(base, "GGUF", 4) == 0, "'" + path + "' is not a GGUF file (bad magic)");
    c.get<std::uint32_t>("magic");
    version_ = c.get<std::uint32_t>("version");
    require(version_ == 3, "'" + path + "' is GGUF version " + std::to_string(version_) + "; kvoracle reads version 3");
    const auto n_tensors = c.get<std::uint64_t>("tensor count");
    const auto n_kv = c.get<std::uint64_t>("metadata count");
    require(n_tensors <= (1u << 20) && n_kv <= (1u << 20), "'" + path + "' has implausible tensor or metadata counts");
    meta_ = nlohmann::json::object();
    for (std::uint64_t i = 0; i < n_kv; ++i) {
      const std::string key = c.str("metadata key");
      const auto type = c.get<std::uint32_t>("metadata type");
      meta_[key] = read_value(c, type, path, key, 0);
    }
    if (meta_.contains("general.alignment")) {
      require(meta_["general.alignment"].is_number_unsigned(), "'" + path + "': general.alignment is not an integer");
      alignment_ = meta_["general.alignment"].get<std::uint64_t>();
      require(alignment_ >= 1 && alignment_ <= 65536 && (alignment_ & (alignment_ - 1)) == 0,
              "'" + path + "': general.alignment " + std::to_string(alignment_) + " is not a power of two");
    }
    for (std::uint64_t i = 0; i < n_tensors; ++i) {
      GgufTensor t;
      t.name = c.str("tensor name");
      const auto nd = c.get<std::uint32_t>("tensor rank");
      require(nd >= 1 && nd <= 4, "'" + path + "': tensor '" + t.name + "' has rank " + std::to_string(nd));
      std::uint64_t numel = 1;
      for (std::uint32_t d = 0; d < nd; ++d) {
        const auto v = c.get<std::uint64_t>("tensor dimension");
        require(v >= 1 && v <= (1ull << 32) && numel <= (1ull << 40) / v,
                "'" + path + "': tensor '" + t.name + "' has an implausible shape");
        numel *= v;
        t.dims.push_back(v);
      }
      t.type = c.get<std::uint32_t>("tensor type");
      t.offset = c.get<std::uint64_t>("tensor offset");
      t.bytes = ggml_row_bytes(t.type, t.numel());
      require(t.bytes > 0 || ggml_type_name(t.type).rfind("type ", 0) != 0,
              "'" + path + "': tensor '" + t.name + "' has unknown type " + std::to_string(t.type));
      require(t.offset % alignment_ == 0, "'" + path + "': tensor '" + t.name + "' is not aligned");
      tensors_.push_back(std::move(t));
    }
    const std::uint64_t start = (c.pos() + alignment_ - 1) / alignment_ * alignment_;
    require(start <= size_, "'" + path + "': the data section starts past the end of the file");
    data_ = base + start;
    const std::uint64_t data_size = size_ - start;
    for (const auto& t : tensors_) {
      if (t.bytes == 0) continue;  // unsupported type: reported when dequantised
      require(t.offset <= data_size && t.bytes <= data_size - t.offset,
              "'" + path + "': tensor '" + t.name + "' lies outside the file");
    }
  }
}

GgufFile::~GgufFile() = default;

bool GgufFile::has_tensor(const std::string& name) const {
  return std::any_of(tensors_.begin(), tensors_.end(), [&](const GgufTensor& t) { return t.name == name; });
}

const GgufTensor& GgufFile::tensor(const std::string& name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return t;
  throw Error("'" + path_ + "' has no tensor '" + name + "'");
}

std::vector<float> GgufFile::dequantize(const GgufTensor& t) const {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  require(t.bytes > 0 || ggml_row_bytes(t.type, t.numel()) > 0,
          "tensor '" + t.name + "' has type " + ggml_type_name(t.type) +
              ", which kvoracle does not dequantise (F32, F16, BF16, Q4_0, Q4_1, Q8_0)");
  dequantize_row(t.type, data(t), out.data(), t.numel(), t.name);
  return out;
}

std::uint64_t GgufFile::get_uint(const std::string& key) const {
  require(meta_.contains(key) && meta_[key].is_number_unsigned(),
          "'" + path_ + "': metadata '" + key + "' is missing or not an unsigned integer");
  return meta_[key].get<std::uint64_t>();
}

double GgufFile::get_float(const std::string& key) const {
  require(meta_.contains(key) && meta_[key].is_number(),
          "'" + path_ + "': metadata '" + key + "' is missing or not a number");
  return meta_[key].get<double>();
}

std::string GgufFile::get_string(const std::string& key) const {
  require(meta_.contains(key) && meta_[key].is_string(),
          "'" + path_ + "': metadata '" + key + "' is missing or not a string");
  return meta_[key].get<std::string>();
}

}  // namespace kvo::model

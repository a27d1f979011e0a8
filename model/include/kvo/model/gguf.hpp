// GGUF v3 reader (the GGUF specification, gguf.md in ggml-org/ggml): header, typed metadata, tensor infos and
// alignment, memory-mapped; every count, length and offset is checked against the file, so no
// input can make it read out of bounds. Dequantises F32, F16, BF16, Q4_0, Q4_1 and Q8_0.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

namespace kvo {
class MappedFile;
}

namespace kvo::model {

// ggml tensor types (the subset named here; others are reported by number).
enum class GgmlType : std::uint32_t { F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q8_0 = 8, Q6_K = 14, BF16 = 30 };
std::string ggml_type_name(std::uint32_t type);

struct GgufTensor {
  std::string name;
  std::vector<std::uint64_t> dims;  // ne[0] is the contiguous (row) dimension
  std::uint32_t type = 0;
  std::uint64_t offset = 0;  // from the start of the data section
  std::uint64_t bytes = 0;
  std::uint64_t numel() const;
  std::uint64_t rows() const { return dims.empty() ? 1 : numel() / dims[0]; }
};

class GgufFile {
 public:
  explicit GgufFile(const std::string& path);  // kvo::Error naming the first problem
  // The same over the caller's bytes (kept alive by the caller); `name` appears in errors.
  GgufFile(std::span<const unsigned char> bytes, std::string name);
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  std::uint32_t version() const { return version_; }
  std::uint64_t alignment() const { return alignment_; }
  // Metadata as JSON values (integers, floats, bools, strings, arrays).
  const nlohmann::json& metadata() const { return meta_; }
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor& tensor(const std::string& name) const;  // kvo::Error when absent
  bool has_tensor(const std::string& name) const;

  // All values of a tensor as fp32, row-major over (rows, dims[0]).
  std::vector<float> dequantize(const GgufTensor& t) const;
  const unsigned char* data(const GgufTensor& t) const { return data_ + t.offset; }

  // Typed metadata accessors; kvo::Error when the key is missing or has another type.
  std::uint64_t get_uint(const std::string& key) const;
  double get_float(const std::string& key) const;
  std::string get_string(const std::string& key) const;

 private:
  void parse(const unsigned char* base, size_t size);
  std::string path_;
  std::unique_ptr<MappedFile> file_;
  size_t size_ = 0;
  const unsigned char* data_ = nullptr;
  std::uint32_t version_ = 0;
  std::uint64_t alignment_ = 32;
  nlohmann::json meta_;
  std::vector<GgufTensor> tensors_;
};

// Dequantises `count` values of a ggml type from raw little-endian blocks (count must be a
// multiple of the type's block size). kvo::Error for unsupported types.
void dequantize_row(std::uint32_t type, const unsigned char* src, float* dst, std::uint64_t count,
                    const std::string& tensor_name);
// Bytes for `count` values of a type, or 0 when the type is unsupported / count is not whole blocks.
std::uint64_t ggml_row_bytes(std::uint32_t type, std::uint64_t count);

}  // namespace kvo::model

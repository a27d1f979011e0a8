// The safetensors container (8-byte little-endian header length, JSON header, raw little-endian
// tensors), read through a memory map with every header field validated, and written atomically.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace kvo {

class MappedFile;

enum class DType { F32, F16, BF16, I32, I64, U8 };
size_t dtype_size(DType t);
std::string dtype_name(DType t);

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;
  size_t begin = 0, end = 0;  // byte range within the data section
  std::int64_t numel() const;
};

class SafetensorsFile {
 public:
  // Maps and validates the file; kvo::Error with one line naming the first problem.
  explicit SafetensorsFile(const std::string& path);
  // The same over the caller's bytes (kept alive by the caller); `name` appears in errors.
  SafetensorsFile(std::span<const unsigned char> bytes, std::string name);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find(const std::string& name) const;

  // Converts F32, F16 or BF16 to float; kvo::Error for other dtypes.
  std::vector<float> read_float(const TensorInfo& t) const;
  // Converts I32 or I64 (range-checked) to int32.
  std::vector<std::int32_t> read_int32(const TensorInfo& t) const;

 private:
  void parse(const unsigned char* base, size_t size);
  const unsigned char* bytes(const TensorInfo& t) const { return data_ + t.begin; }
  std::string path_;
  std::unique_ptr<MappedFile> file_;
  size_t map_size_ = 0;
  const unsigned char* data_ = nullptr;
  std::map<std::string, std::string> metadata_;
  std::vector<TensorInfo> tensors_;
};

struct TensorOut {
  std::string name;
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;
  std::vector<unsigned char> bytes;  // little-endian raw data
};
TensorOut tensor_f32(std::string name, std::vector<std::int64_t> shape, const std::vector<float>& values);
TensorOut tensor_f16(std::string name, std::vector<std::int64_t> shape, const std::vector<float>& values);
TensorOut tensor_bf16(std::string name, std::vector<std::int64_t> shape, const std::vector<float>& values);
TensorOut tensor_i32(std::string name, std::vector<std::int64_t> shape, const std::vector<std::int32_t>& values);

void write_safetensors(const std::string& path, const std::vector<TensorOut>& tensors,
                       const std::map<std::string, std::string>& metadata);

float half_to_float(std::uint16_t h);
std::uint16_t float_to_half(float f);
float bf16_to_float(std::uint16_t b);
std::uint16_t float_to_bf16(float f);  // round to nearest even; NaN stays NaN

}  // namespace kvo

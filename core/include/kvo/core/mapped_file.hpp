// A read-only memory map of a whole regular file (RAII), shared by the trace and model readers.
#pragma once
#include <cstddef>
#include <string>

namespace kvo {

class MappedFile {
 public:
  // kvo::Error when the file cannot be opened or mapped, is not a regular file, or holds fewer
  // than min_size bytes ("too short to be a <kind> file").
  MappedFile(const std::string& path, std::size_t min_size, const std::string& kind);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const unsigned char* data() const { return static_cast<const unsigned char*>(map_); }
  std::size_t size() const { return size_; }

 private:
  void* map_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace kvo

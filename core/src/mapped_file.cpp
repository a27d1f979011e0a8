#include "kvo/core/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kvo/core/error.hpp"

namespace kvo {

MappedFile::MappedFile(const std::string& path, std::size_t min_size, const std::string& kind) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  require(fd >= 0, "cannot open '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error("'" + path + "' is not a regular file");
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ < min_size) {
    ::close(fd);
    throw Error("'" + path + "' is too short to be a " + kind + " file (" + std::to_string(size_) + " bytes)");
  }
  map_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw Error("cannot map '" + path + "' into memory");
  }
}

MappedFile::~MappedFile() {
  if (map_) ::munmap(map_, size_);
}

}  // namespace kvo

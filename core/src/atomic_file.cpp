#include "kvo/core/atomic_file.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "kvo/core/error.hpp"

namespace kvo {

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  tmp_ = path_ + ".tmp." + std::to_string(::getpid());
  out_.open(tmp_, std::ios::binary | std::ios::trunc);
  require(out_.good(), "cannot write '" + path_ + "' (is the folder there and writable?)");
}

AtomicFile::~AtomicFile() {
  if (!committed_) {
    out_.close();
    std::error_code ec;
    std::filesystem::remove(tmp_, ec);
  }
}

void AtomicFile::commit() {
  out_.flush();
  const bool ok = out_.good();
  out_.close();
  require(ok && !out_.fail(), "writing '" + path_ + "' failed (disk full?)");
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  require(!ec, "cannot rename the temporary file onto '" + path_ + "': " + ec.message());
  committed_ = true;
}

void write_file_atomic(const std::string& path, const std::string& content) {
  AtomicFile f(path);
  f.stream().write(content.data(), static_cast<std::streamsize>(content.size()));
  f.commit();
}

}  // namespace kvo

#include "kvo/core/file_sha256.hpp"

#include <openssl/evp.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <vector>

#include "kvo/core/error.hpp"

namespace kvo {
namespace {

using DigestContext = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

DigestContext sha256_context() {
  DigestContext ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  require(ctx != nullptr && EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) == 1,
          "internal: OpenSSL cannot start a sha256");
  return ctx;
}

std::string hex_digest(EVP_MD_CTX* ctx) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx, md, &len);
  std::string hex;
  char b[3];
  for (unsigned i = 0; i < len; ++i) {
    std::snprintf(b, sizeof b, "%02x", md[i]);
    hex += b;
  }
  return hex;
}

}  // namespace

std::string file_sha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  require(in.good(), "cannot read '" + path + "'");
  DigestContext ctx = sha256_context();
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(in.gcount()));
  }
  return hex_digest(ctx.get());
}

std::string bytes_sha256(std::string_view bytes) {
  DigestContext ctx = sha256_context();
  EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size());
  return hex_digest(ctx.get());
}

}  // namespace kvo

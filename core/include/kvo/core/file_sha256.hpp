// sha256 as lower-case hex (OpenSSL): of a file (model provenance, checkpoint identities) or of a
// byte string (the checksum of each checkpoint unit).
#pragma once
#include <string>
#include <string_view>

namespace kvo {

std::string file_sha256(const std::string& path);  // kvo::Error when the file cannot be read
std::string bytes_sha256(std::string_view bytes);

}  // namespace kvo

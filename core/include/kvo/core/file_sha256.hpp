// The sha256 of a file, as lower-case hex (OpenSSL): model provenance and checkpoint identities.
#pragma once
#include <string>

namespace kvo {

std::string file_sha256(const std::string& path);  // kvo::Error when the file cannot be read

}  // namespace kvo

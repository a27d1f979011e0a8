#include "kvo/model/model_path.hpp"

#include <cstdlib>

namespace kvo::model {

std::string default_model_path() {
  if (const char* m = std::getenv("KVO_MODEL"); m && *m) return m;
  const std::string name = std::string("/") + kModelFile;
  if (const char* d = std::getenv("KVO_MODEL_DIR"); d && *d) return std::string(d) + name;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.cache/kvoracle" + name;
}

}  // namespace kvo::model

#include "model_options.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "kvo/core/error.hpp"
#include "kvo/model/model_path.hpp"

namespace kvo::cli {

void add_model_option(CLI::App* cmd, std::string& path) {
  path = model::default_model_path();
  cmd->add_option("--model,-m", path, "GGUF model (fetched by scripts/fetch-model)")->capture_default_str();
}

model::Llama load_model(const std::string& path) {
  require(std::filesystem::exists(path), "model '" + path + "' is missing: run scripts/fetch-model (or pass --model)");
  return model::Llama(path);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  require(in.good(), "cannot read text file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace kvo::cli

// The --model option shared by the commands that run the real model.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "kvo/model/llama.hpp"

namespace kvo::cli {

// --model, defaulting to kvo::model::default_model_path().
void add_model_option(CLI::App* cmd, std::string& path);
// Loads the model; kvo::Error naming scripts/fetch-model when the file is missing.
model::Llama load_model(const std::string& path);
// Reads a whole text file; kvo::Error when it cannot.
std::string read_text(const std::string& path);

}  // namespace kvo::cli

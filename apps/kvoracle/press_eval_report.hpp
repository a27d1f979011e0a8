// kvoracle eval prefill: kvpress's presses and the prefill optimum's sets in closed loop on the
// real model (studies/press_eval.hpp), printed as a table, JSON and an SVG plot of KL against kept share.
#pragma once
#include <string>

#include "commands.hpp"
#include "kvo/studies/press_eval_run.hpp"

namespace kvo::cli {

// Runs `request` (kvo::studies::run_press_eval) on the text file with the model file and prints it.
int print_press_eval(studies::PressEvalRequest request, const std::string& text_path, const std::string& model_path,
                     const std::string& json_path, const std::string& plot_path, const Global& g);

}  // namespace kvo::cli

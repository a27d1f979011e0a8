// kvoracle eval --prefill: kvpress's presses and the prefill optimum's sets in closed loop on the
// real model (model/press_eval.hpp), printed as a table, JSON and an SVG plot of KL against kept share.
#pragma once
#include <string>

#include "commands.hpp"
#include "kvo/core/run_config.hpp"
#include "press_options.hpp"

namespace kvo::cli {

struct PressEvalArgs {
  std::string text, model, json, plot;
  int tokens = 0, prompt_len = 0;
  PressArgs press;
  std::vector<PolicyId> policies;  // kvoracle's policies as prefill presses
  RunConfig run;                   // their parameters
};
int run_press_eval(const PressEvalArgs& a, const Global& g);

}  // namespace kvo::cli

// kvoracle eval: eviction policies in closed loop on the real model, against the full cache:
// perplexity, mean KL of the next-token distribution and K/V bytes held, per policy and budget,
// as a table, JSON and an SVG plot (perplexity against budget).
#include <algorithm>
#include <iostream>

#include "commands.hpp"
#include "kvo/core/atomic_file.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/progress.hpp"
#include "kvo/core/text_list.hpp"
#include "kvo/studies/diversity.hpp"
#include "kvo/studies/eval_run.hpp"
#include "model_options.hpp"
#include "options.hpp"
#include "press_eval_report.hpp"
#include "schema_flags.hpp"

namespace kvo::cli {

namespace {

// `eval --prefill P` is gone: one line naming `eval prefill`; anything else unknown is named.
[[noreturn]] void refuse_extras(const std::vector<std::string>& typed) {
  if (std::find(typed.begin(), typed.end(), "--prefill") != typed.end())
    throw Error("`eval --prefill P` is now `kvoracle eval prefill --prompt-len P ...`");
  throw Error("eval: unexpected arguments: " + join_list(typed));
}

}  // namespace

Runner add_eval(CLI::App& app, const Global& g) {
  auto* cmd = app.add_subcommand("eval", "evaluate eviction policies in closed loop on the real model");
  struct Args {
    std::string text, model, json, plot;
    RequestFlags<studies::EvalRequest> request;
  };
  auto a = std::make_shared<Args>();
  cmd->require_subcommand(0, 1);
  cmd->add_option("--text,-t", a->text, "UTF-8 text file (required)")->check(CLI::ExistingFile);
  a->request.add(cmd);
  cmd->add_option("--json", a->json, "write the results as JSON");
  cmd->add_option("--plot", a->plot, "write an SVG plot of perplexity against budget");
  add_model_option(cmd, a->model);

  // `kvoracle eval prefill`: kvpress's protocol on the real model.
  struct PrefillArgs {
    std::string text, model, json, plot;
    RequestFlags<studies::PressEvalRequest> request;
  };
  auto pre = std::make_shared<PrefillArgs>();
  auto* pre_cmd = cmd->add_subcommand(
      "prefill",
      "kvpress's protocol on the real model: compress the first --prompt-len tokens once with each press (and the "
      "prefill optimum's sets, and kvoracle's --policies when given), teacher-force the rest");
  pre_cmd->add_option("--text,-t", pre->text, "UTF-8 text file")->required()->check(CLI::ExistingFile);
  pre->request.add(pre_cmd);
  pre_cmd->get_option("--prompt-len")->required();
  pre_cmd->add_option("--json", pre->json, "write the results as JSON");
  pre_cmd->add_option("--plot", pre->plot, "write an SVG plot of KL against the kept share");
  add_model_option(pre_cmd, pre->model);
  cmd->allow_extras();  // after the subcommands: they keep refusing what they do not know

  // `kvoracle eval diversity`: greedy continuations under eviction, scored by distinct-n (E10).
  struct DiversityArgs {
    std::string text, model, json;
    RequestFlags<studies::DiversityRequest> request;
  };
  auto div = std::make_shared<DiversityArgs>();
  auto* div_cmd = cmd->add_subcommand(
      "diversity",
      "greedy continuations of prompts cut from a text, full cache against each policy and budget: distinct-n and "
      "4-gram repetition of their words (the paper's claim that H2O increases diversity, E10)");
  div_cmd->add_option("--text,-t", div->text, "UTF-8 text file")->required()->check(CLI::ExistingFile);
  div->request.add(div_cmd);
  div_cmd->add_option("--json", div->json, "write the results (with every continuation) as JSON");
  add_model_option(div_cmd, div->model);

  const auto run_diversity = [&g](DiversityArgs& x) {
    studies::DiversityRequest req = x.request.request();
    req.validate();
    const std::string text = read_text(x.text);
    const model::Llama m = load_model(x.model);
    Progress bar("diversity", studies::diversity_units(req), !g.quiet);
    req.on_token = [&bar] { bar.tick(); };
    const studies::DiversityResult r = studies::continuation_diversity(m, text, req);
    bar.finish();
    std::cout << studies::diversity_report(r, x.text).text();
    if (!x.json.empty()) {
      write_file_atomic(x.json, studies::diversity_result_json(r).dump(2) + "\n");
      std::cout << "results: " << x.json << '\n';
    }
    return 0;
  };

  return [a, pre, div, &g, cmd, pre_cmd, div_cmd, run_diversity] {
    if (pre_cmd->parsed())
      return print_press_eval(pre->request.request(), pre->text, pre->model, pre->json, pre->plot, g);
    if (div_cmd->parsed()) return run_diversity(*div);
    if (!cmd->remaining().empty()) refuse_extras(cmd->remaining());
    require(!a->text.empty(),
            "eval needs --text (kvoracle eval --text FILE, or kvoracle eval prefill --text FILE ...)");
    studies::EvalRequest req = a->request.request();
    req.validate();
    const std::string text = read_text(a->text);
    const model::Llama m = load_model(a->model);
    Progress bar("eval", studies::eval_units(req.options()), !g.quiet);
    req.on_token = [&bar] { bar.tick(); };
    const studies::EvalResult r = studies::run_eval(m, text, req);
    bar.finish();
    const Report report = studies::eval_report(r, a->text);
    std::cout << report.text();
    if (!a->json.empty()) {
      write_file_atomic(a->json, studies::eval_result_json(r, a->text).dump(2) + "\n");
      std::cout << "results: " << a->json << '\n';
    }
    if (!a->plot.empty()) {
      write_file_atomic(a->plot, report.plots().at(0).svg);
      std::cout << "plot: " << a->plot << '\n';
    }
    return 0;
  };
}

}  // namespace kvo::cli

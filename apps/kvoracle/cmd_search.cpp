// kvoracle search: worst cases for eviction policies, found by a seeded search (docs/worst-cases.md).
// `search attention` searches the attention a transformer can produce for the lowest share of the
// exact offline optimum a policy keeps; `search hypotheses` searches the traces on which H2O's
// theorem applies for the lowest share of its bound; `search text` searches a task instance's
// haystack, read by the real model, for the text a policy does worst on.
#include <iostream>

#include "commands.hpp"
#include "kvo/core/atomic_file.hpp"
#include "kvo/core/progress.hpp"
#include "kvo/studies/hypothesis_search.hpp"
#include "kvo/studies/text_search.hpp"
#include "kvo/studies/worst_case.hpp"
#include "model_options.hpp"
#include "options.hpp"
#include "schema_flags.hpp"

namespace kvo::cli {

namespace {

struct Outputs {
  std::string json, plot;
  void add(CLI::App* cmd) {
    cmd->add_option("--json", json, "write the result, with each search's curve, as JSON");
    cmd->add_option("--plot", plot, "write the lowest value found against evaluations as SVG");
  }
};

// Prints a search's report and writes the files asked for; exit 1 when verify finds a theorem
// failing on a saved instance.
template <class Result>
int finish_search(const Result& r, const Outputs& o, bool failed) {
  std::cout << r.report().text();
  if (!o.json.empty()) {
    write_file_atomic(o.json, r.to_json().dump(1) + "\n");
    std::cout << "results: " << o.json << '\n';
  }
  if (!o.plot.empty()) {
    write_file_atomic(o.plot, r.plot_svg());
    std::cout << "plot: " << o.plot << '\n';
  }
  return failed ? 1 : 0;
}

// Runs one search over synthetic instances with a progress bar.
template <class Request, class Search>
int run_search(const Request& req, const Outputs& o, const Global& g, const char* what, Search search) {
  req.validate();
  Progress bar(what, static_cast<long>(req.evaluations) * static_cast<long>(req.policies.size()), !g.quiet);
  const auto r = search(req, [&] { bar.tick(); });
  bar.finish();
  bool failed = false;
  for (const auto& p : r.policies) failed = failed || p.theorem_failures > 0;
  return finish_search(r, o, failed);
}

}  // namespace

Runner add_search(CLI::App& app, const Global& g) {
  auto* cmd = app.add_subcommand("search", "search for the inputs on which eviction policies do worst");
  cmd->require_subcommand(1);
  struct Args {
    RequestFlags<studies::AttentionSearchRequest> attention;
    RequestFlags<studies::HypothesisSearchRequest> hypotheses;
    RequestFlags<studies::TextSearchRequest> text;
    Outputs attention_out, hypotheses_out, text_out;
    std::string model;
  };
  auto a = std::make_shared<Args>();
  auto* attention = cmd->add_subcommand(
      "attention", "the attention softmax(q.k) with bounded norms on which a policy keeps the least of the optimum");
  a->attention.add(attention);
  a->attention_out.add(attention);
  auto* hypotheses = cmd->add_subcommand(
      "hypotheses", "the traces satisfying Theorem 4.4's hypotheses on which a policy comes closest to its bound");
  a->hypotheses.add(hypotheses);
  a->hypotheses_out.add(hypotheses);
  auto* text = cmd->add_subcommand(
      "text", "the words of a task's haystack, read by the real model, on which a policy does worst");
  a->text.add(text);
  a->text_out.add(text);
  add_model_option(text, a->model);
  return [a, attention, text, &g] {
    if (attention->parsed())
      return run_search(a->attention.request(), a->attention_out, g, "search attention",
                        [](const auto& r, const auto& t) { return studies::search_attention(r, t); });
    if (text->parsed()) {
      const studies::TextSearchRequest req = a->text.request();
      req.validate();
      const model::Llama m = load_model(a->model);
      Progress bar("search text", req.evaluations, !g.quiet);
      const studies::TextSearchResult r = studies::search_text(m, req, [&] { bar.tick(); });
      bar.finish();
      return finish_search(r, a->text_out, r.theorem_failures > 0);
    }
    return run_search(a->hypotheses.request(), a->hypotheses_out, g, "search hypotheses",
                      [](const auto& r, const auto& t) { return studies::search_hypotheses(r, t); });
  };
}

}  // namespace kvo::cli

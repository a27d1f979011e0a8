// kvoracle search: worst cases for eviction policies, found by a seeded search (docs/worst-cases.md).
// `search attention` searches the attention a transformer can produce for the lowest share of the
// exact offline optimum a policy keeps; `search hypotheses` searches the traces on which H2O's
// theorem applies for the lowest share of its bound.
#include <iostream>

#include "commands.hpp"
#include "kvo/core/atomic_file.hpp"
#include "kvo/core/progress.hpp"
#include "kvo/studies/hypothesis_search.hpp"
#include "kvo/studies/worst_case.hpp"
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

// Runs one search with a progress bar, prints its report and writes the files asked for; exit 1
// when verify finds a theorem failing on a saved instance.
template <class Request, class Search>
int run_search(const Request& req, const Outputs& o, const Global& g, const char* what, Search search) {
  req.validate();
  Progress bar(what, static_cast<long>(req.evaluations) * static_cast<long>(req.policies.size()), !g.quiet);
  const auto r = search(req, [&] { bar.tick(); });
  bar.finish();
  std::cout << r.report().text();
  if (!o.json.empty()) {
    write_file_atomic(o.json, r.to_json().dump(1) + "\n");
    std::cout << "results: " << o.json << '\n';
  }
  if (!o.plot.empty()) {
    write_file_atomic(o.plot, r.plot_svg());
    std::cout << "plot: " << o.plot << '\n';
  }
  for (const auto& p : r.policies)
    if (p.theorem_failures > 0) return 1;
  return 0;
}

}  // namespace

Runner add_search(CLI::App& app, const Global& g) {
  auto* cmd = app.add_subcommand("search", "search for the inputs on which eviction policies do worst");
  cmd->require_subcommand(1);
  struct Args {
    RequestFlags<studies::AttentionSearchRequest> attention;
    RequestFlags<studies::HypothesisSearchRequest> hypotheses;
    Outputs attention_out, hypotheses_out;
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
  return [a, attention, &g] {
    if (attention->parsed())
      return run_search(a->attention.request(), a->attention_out, g, "search attention",
                        [](const auto& r, const auto& t) { return studies::search_attention(r, t); });
    return run_search(a->hypotheses.request(), a->hypotheses_out, g, "search hypotheses",
                      [](const auto& r, const auto& t) { return studies::search_hypotheses(r, t); });
  };
}

}  // namespace kvo::cli

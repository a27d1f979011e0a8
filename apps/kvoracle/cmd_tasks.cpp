// kvoracle tasks: long-context tasks (RULER-style, generated offline) answered under eviction.
// `tasks generate` writes instances as JSON Lines; `tasks run` answers generated or JSON Lines
// instances with the full cache and every policy (and press) at every budget, and prints accuracy
// per task x length x row x budget with Wilson 95% intervals, as JSON and SVG plots too; `tasks
// report` prints the table and draws the plots again from that JSON; `tasks power` says how many
// instances a paired comparison of two rows needs.
#include <filesystem>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "distributed.hpp"
#include "kvo/core/atomic_file.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/text_list.hpp"
#include "kvo/model/model_path.hpp"
#include "kvo/studies/paired_power.hpp"
#include "kvo/studies/task_io.hpp"
#include "kvo/studies/task_options.hpp"
#include "model_options.hpp"
#include "options.hpp"
#include "schema_flags.hpp"

namespace kvo::cli {
namespace {

// The options of the task schema a subcommand takes, as the texts typed.
struct TaskArgs {
  SchemaFlags flags;

  // The options with every given one applied (kvo::Error naming the option for bad text).
  studies::TaskOptions build(int positions) const {
    studies::TaskOptions o;
    flags.apply(studies::task_options_schema(), o);
    o.suite.max_positions = positions;
    return o;
  }
};

void add_task_options(CLI::App* cmd, TaskArgs& a, bool run) {
  a.flags.add(cmd, studies::task_options_schema(), studies::TaskOptions{},
              [run](const Field<studies::TaskOptions>& f) { return run || f.info.use == studies::kSuiteUse; });
}

// An output directory that exists or can be made, checked before any work.
void require_writable_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  require(!ec && std::filesystem::is_directory(dir), "cannot write to directory '" + dir + "'");
}

// Prints the report of the cells and the paper's experiments; draws its plots into `dir` when given.
void show(const studies::TaskEvalResult& r, const std::string& dir) {
  const Report report = studies::task_report(r);
  std::cout << report.text();
  if (dir.empty()) return;
  for (const ReportPlot& p : report.plots()) write_file_atomic(dir + "/" + p.name, p.svg);
}

}  // namespace

Runner add_tasks(CLI::App& app, const Global& g) {
  auto* cmd = app.add_subcommand("tasks", "long-context tasks (RULER-style, generated offline) under eviction");
  cmd->require_subcommand(1, 1);
  struct Args {
    TaskArgs task;
    std::string out, instances, json, plots, model, checkpoint;
  };
  auto a = std::make_shared<Args>();
  auto* gen = cmd->add_subcommand("generate", "write a seeded task suite as JSON Lines (kvpress's columns)");
  add_task_options(gen, a->task, false);
  gen->add_option("--out,-o", a->out, "the instances file (.jsonl)")->required();
  add_model_option(gen, a->model);

  auto b = std::make_shared<Args>();
  auto* run = cmd->add_subcommand(
      "run", "answer the instances with the full cache and under every policy (and press) at every budget");
  add_task_options(run, b->task, true);
  run->add_option("--instances,-i", b->instances,
                  "a JSON Lines file of instances (kvpress's columns); default: the suite the options generate")
      ->check(CLI::ExistingFile);
  run->add_option("--json", b->json, "write every outcome and cell as JSON");
  run->add_option("--plots", b->plots, "write SVG plots (accuracy against budget, length x depth) to this directory");
  run->add_option("--checkpoint", b->checkpoint,
                  "store each answered instance in this directory; a rerun with the same arguments resumes from it");
  add_model_option(run, b->model);

  struct ReportArgs {
    std::string results, plots, json;
  };
  auto c = std::make_shared<ReportArgs>();
  auto* report = cmd->add_subcommand("report", "print the table and draw the plots of a saved `tasks run --json`");
  report->add_option("results", c->results, "the JSON written by tasks run --json")->required();
  report->add_option("--plots", c->plots,
                     "write SVG plots (accuracy against budget, length x depth) to this directory");
  report->add_option("--json", c->json,
                     "write the outcomes with the cells, comparisons and experiments computed again as JSON");

  struct PowerArgs {
    RequestFlags<studies::PairedPowerRequest> request;
    std::string json;
  };
  auto d = std::make_shared<PowerArgs>();
  auto* power = cmd->add_subcommand(
      "power", "how many instances a paired comparison of two rows needs to find a difference in accuracy");
  d->request.add(power);
  power->add_option("--json", d->json, "write the table as JSON");

  return [a, b, c, d, gen, run, report, power, &g] {
    if (power->parsed()) {
      const studies::PairedPowerResult r = studies::paired_power(d->request.request());
      std::cout << r.report().text();
      if (!d->json.empty()) {
        write_file_atomic(d->json, r.to_json().dump(2) + "\n");
        std::cout << "results: " << d->json << '\n';
      }
      return 0;
    }
    if (report->parsed()) {
      if (!c->plots.empty()) require_writable_dir(c->plots);
      const studies::TaskEvalResult r = studies::read_task_result(c->results);
      std::cout << "kvoracle tasks report: " << c->results << ", " << r.outcomes.size() << " outcomes, protocol "
                << studies::to_string(r.protocol) << "\n";
      std::unique_ptr<AtomicFile> json;
      if (!c->json.empty()) json = std::make_unique<AtomicFile>(c->json);
      show(r, c->plots);
      if (json) {
        json->stream() << studies::task_result_json(r).dump(2) << '\n';
        json->commit();
        std::cout << "results: " << c->json << '\n';
      }
      if (!c->plots.empty()) std::cout << "plots: " << c->plots << '\n';
      return 0;
    }
    if (gen->parsed()) {
      const model::Llama m = load_model(a->model);
      const studies::TaskOptions o = a->task.build(m.config().context);
      const auto inst = studies::generate_tasks(m.tokenizer(), o.suite);
      studies::write_task_jsonl(a->out, inst);
      std::cout << "wrote " << a->out << ": " << inst.size() << " instances\n";
      return 0;
    }
    const model::Llama m = load_model(b->model);
    const studies::TaskOptions opts = b->task.build(m.config().context);
    const studies::TaskEvalRequest req = opts.eval_request();
    if (b->instances.empty()) opts.suite.validate();
    if (!b->plots.empty()) require_writable_dir(b->plots);
    // Instances go to every MPI rank under mpirun/srun, one at a time per process (the model's
    // matrix products use the cores); the checkpoint's identity holds the model's and the instances'
    // sha256 (in place of their paths) and every other option but the outputs. Only the leader writes: the JSON's
    // temporary is made now (a path that cannot be written fails before any work) and renamed over the target when the
    // run has finished.
    std::vector<std::string> inputs = {b->model};
    if (!b->instances.empty()) inputs.push_back(b->instances);
    const auto checkpoint =
        open_checkpoint(b->checkpoint, run, {"--model", "--instances", "--json", "--plots", "--checkpoint"}, inputs);
    const scaleout::RankTeam team(1, !g.quiet, checkpoint.get());
    std::unique_ptr<AtomicFile> json;
    if (!b->json.empty() && team.leader()) json = std::make_unique<AtomicFile>(b->json);
    const std::vector<studies::TaskInstance> inst = b->instances.empty()
                                                        ? studies::generate_tasks(m.tokenizer(), opts.suite)
                                                        : studies::read_task_jsonl(b->instances);
    const std::optional<studies::TaskEvalResult> result = studies::run_tasks(m, inst, req, team);
    if (!result) return 0;
    const studies::TaskEvalResult& r = *result;
    std::cout << "kvoracle tasks run: " << inst.size() << " instances, protocol " << studies::to_string(r.protocol)
              << "\n";
    show(r, b->plots);
    if (!b->json.empty()) {
      json->stream() << studies::task_result_json(r).dump(2) << '\n';
      json->commit();
      std::cout << "results: " << b->json << '\n';
    }
    if (!b->plots.empty()) std::cout << "plots: " << b->plots << '\n';
    return 0;
  };
}

}  // namespace kvo::cli

#include "kvo/studies/task_options.hpp"

#include <array>

#include "kvo/core/error.hpp"
#include "kvo/core/press_parameters.hpp"
#include "kvo/core/text_list.hpp"

namespace kvo::studies {
namespace {

using O = TaskOptions;
using S = TaskSuiteRequest;
using E = TaskEvalRequest;
const std::string kSuite = kSuiteUse;
const std::string kRun = kRunUse;

std::string task_names(const std::vector<TaskId>& ids) {
  std::vector<std::string> s;
  for (TaskId id : ids) s.push_back(task_name(id));
  return join_list(s);
}

std::string press_names(const std::vector<PressId>& ids) {
  std::vector<std::string> s;
  for (PressId id : ids) s.push_back(press_name(id));
  return join_list(s);
}

}  // namespace

TaskEvalRequest TaskOptions::eval_request() const {
  TaskEvalRequest r = run;
  // The default policies include the offline optimum `oracle`, a streaming row; under the prefill
  // protocol (where the prefill optimum is the row `optimum`) the default is the others, as presses.
  if (r.protocol == TaskProtocol::Prefill && r.policies == TaskEvalRequest{}.policies)
    std::erase_if(r.policies, [](PolicyId id) { return policy_traits(id).offline; });
  r.run = policy.build(r.policies.empty() ? PolicyId::H2O : r.policies.front(), nullptr, SharedBudgets::Allowed);
  r.press = press;
  r.validate();
  return r;
}

namespace {

// The policies' and presses' parameters: flat, of use Run (`tasks generate` does not take them).
// The run options that choose one total budget or parts of a trace are not the suite's: its budgets
// are shares of each instance, and it decodes whole instances.
std::vector<Field<TaskOptions>> run_part(std::vector<Field<TaskOptions>> part) {
  for (auto& f : part) f.info.use = kRun;
  return part;
}

}  // namespace

const Schema<TaskOptions>& task_options_schema() {
  static const Schema<TaskOptions> schema(
      "task options",
      fields<O>(
          {{custom<O>(
                {.name = "tasks", .help = "comma-separated tasks, or all", .use = kSuite}, "list of tasks",
                [](O& o, std::string_view t) { o.suite.tasks = parse_task_list(t); },
                [](const O& o) { return task_names(o.suite.tasks); }),
            member(&O::suite, &S::lengths,
                   {.name = "lengths", .help = "comma-separated input lengths in tokens", .use = kSuite}),
            member(&O::suite, &S::depths,
                   {.name = "depths", .help = "comma-separated needle depths in [0, 1]", .use = kSuite}),
            member(&O::suite, &S::per_cell,
                   {.name = "per_cell", .help = "instances per task x length x depth", .use = kSuite}),
            member(&O::suite, &S::shots,
                   {.name = "shots",
                    .help = "worked examples of the same task (256 tokens each, with their answers) opening every "
                            "instance (few-shot)",
                    .use = kSuite}),
            member(&O::suite, &S::seed,
                   {.name = "task_seed", .help = "the seed the instances are generated from", .use = kSuite}),
            member(&O::suite, &S::haystack_dir,
                   {.name = "haystack", .help = "directory of plain texts for the needles' haystacks", .use = kSuite}),
            custom<O>(
                {.name = "protocol",
                 .help = "dynamic (streaming eviction: evict at every step) or prefill (compress the context "
                         "once)",
                 .use = kRun},
                "dynamic|prefill", [](O& o, std::string_view t) { o.run.protocol = parse_task_protocol(t); },
                [](const O& o) { return std::string(to_string(o.run.protocol)); }),
            custom<O>(
                {.name = "policies",
                 .help = "comma-separated policies (oracle: the offline optimum); none: the full cache (and "
                         "presses) only",
                 .alias = "-p",
                 .use = kRun},
                "list of policies, or none",
                [](O& o, std::string_view t) {
                  o.run.policies = t == "none" || t.empty() ? std::vector<PolicyId>{} : parse_policy_list(t);
                },
                [](const O& o) {
                  return o.run.policies.empty() ? std::string("none") : join_policy_names(o.run.policies);
                }),
            custom<O>(
                {.name = "presses", .help = "comma-separated kvpress presses, or all (prefill protocol)", .use = kRun},
                "list of presses",
                [](O& o, std::string_view t) {
                  o.run.presses = t.empty() ? std::vector<PressId>{} : parse_press_list(t);
                },
                [](const O& o) { return press_names(o.run.presses); }),
            member(&O::run, &E::budgets,
                   {.name = "budgets",
                    .help = "comma-separated shares of tokens kept, in (0, 1]",
                    .alias = "-b",
                    .use = kRun}),
            member(&O::run, &E::question_first,
                   {.name = "question_first",
                    .help = "the question also opens the context",
                    .switch_text = "true",
                    .use = kRun}),
            custom<O>(
                {.name = "format",
                 .help = "the prompt: plain completion, or chat (the GGUF's ChatML template)",
                 .use = kRun},
                "plain|chat", [](O& o, std::string_view t) { o.run.format = parse_prompt_format(t); },
                [](const O& o) { return std::string(to_string(o.run.format)); }),
            member(&O::run, &E::optimum,
                   {.name = "optimum",
                    .help = "prefill protocol: the prefill optimum's row (--no-optimum: leave it out)",
                    .flag = "--no-optimum",
                    .switch_text = "false",
                    .use = kRun}),
            member(&O::run, &E::optimum_scopes,
                   {.name = "optimum_scopes",
                    .help = "prefill protocol: budget scopes of the optimum's rows: head (per-head budgets: optimum), "
                            "layer, layerwise, model (shared budgets of the same total: optimum@model), "
                            "comma-separated or all",
                    .use = kRun}),
            member(&O::run, &E::topk,
                   {.name = "topk",
                    .help = "streaming: the oracle top-k's row (--no-topk: leave it out)",
                    .flag = "--no-topk",
                    .switch_text = "false",
                    .use = kRun}),
            member(&O::run, &E::full_cache,
                   {.name = "full_cache",
                    .help = "answer with the full cache first (--no-full-cache: skip it; streaming without oracle "
                            "only)",
                    .flag = "--no-full-cache",
                    .switch_text = "false",
                    .use = kRun})},
           run_part(nested("policy", &O::policy, run_options_schema(), "", "", decoding_run_option)),
           run_part(nested_beside_run("press", &O::press, press_parameters_schema(), "Press parameters"))}));
  return schema;
}

}  // namespace kvo::studies

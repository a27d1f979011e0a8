#include "kvo/studies/task_options.hpp"

#include <array>

#include "kvo/core/error.hpp"
#include "kvo/core/text_list.hpp"

namespace kvo::studies {
namespace {

bool parse_bool(std::string_view text, std::string_view name) {
  if (text == "true" || text == "1") return true;
  if (text == "false" || text == "0") return false;
  throw Error(std::string(name) + " takes true or false, got '" + std::string(text) + "'");
}

std::string bool_text(bool b) { return b ? "true" : "false"; }

std::string ints_text(const std::vector<int>& v) {
  std::vector<std::string> s;
  for (int x : v) s.push_back(std::to_string(x));
  return join_list(s);
}

using O = TaskOptions;
using U = TaskOptionUse;

const std::array<TaskOptionEntry, 17> kTaskOptions{{
    {"tasks", "--tasks", "", "comma-separated tasks, or all", U::Suite, "",
     [](O& o, std::string_view t) { o.suite.tasks = parse_task_list(t); },
     [](const O& o) {
       std::vector<std::string> s;
       for (TaskId id : o.suite.tasks) s.push_back(task_name(id));
       return join_list(s);
     }},
    {"lengths", "--lengths", "", "comma-separated input lengths in tokens", U::Suite, "",
     [](O& o, std::string_view t) { o.suite.lengths = parse_int_list(t, "lengths"); },
     [](const O& o) { return ints_text(o.suite.lengths); }},
    {"depths", "--depths", "", "comma-separated needle depths in [0, 1]", U::Suite, "",
     [](O& o, std::string_view t) { o.suite.depths = parse_number_list(t, "depths"); },
     [](const O& o) { return join_numbers(o.suite.depths); }},
    {"per_cell", "--per-cell", "", "instances per task x length x depth", U::Suite, "",
     [](O& o, std::string_view t) { o.suite.per_cell = parse_int(t, "per_cell"); },
     [](const O& o) { return std::to_string(o.suite.per_cell); }},
    {"shots", "--shots", "",
     "worked examples of the same task (256 tokens each, with their answers) opening every instance (few-shot)",
     U::Suite, "", [](O& o, std::string_view t) { o.suite.shots = parse_int(t, "shots"); },
     [](const O& o) { return std::to_string(o.suite.shots); }},
    {"task_seed", "--task-seed", "", "the seed the instances are generated from", U::Suite, "",
     [](O& o, std::string_view t) {
       const int s = parse_int(t, "task_seed");
       require(s >= 0, "task_seed must be >= 0");
       o.suite.seed = static_cast<std::uint64_t>(s);
     },
     [](const O& o) { return std::to_string(o.suite.seed); }},
    {"haystack", "--haystack", "", "directory of plain texts for the needles' haystacks", U::Suite, "",
     [](O& o, std::string_view t) { o.suite.haystack_dir = std::string(t); },
     [](const O& o) { return o.suite.haystack_dir; }},
    {"protocol", "--protocol", "",
     "dynamic (streaming eviction: evict at every step) or prefill (compress the context once)", U::Run, "",
     [](O& o, std::string_view t) { o.run.protocol = parse_task_protocol(t); },
     [](const O& o) { return std::string(to_string(o.run.protocol)); }},
    {"policies", "--policies", "-p",
     "comma-separated policies (oracle: the offline optimum); none: the full cache (and presses) only", U::Run, "",
     [](O& o, std::string_view t) { o.run.policies = t == "none" ? std::vector<PolicyId>{} : parse_policy_list(t); },
     [](const O& o) { return o.run.policies.empty() ? std::string("none") : join_policy_names(o.run.policies); }},
    {"presses", "--presses", "", "comma-separated kvpress presses, or all (prefill protocol)", U::Run, "",
     [](O& o, std::string_view t) { o.run.presses = t.empty() ? std::vector<PressId>{} : parse_press_list(t); },
     [](const O& o) {
       std::vector<std::string> s;
       for (PressId id : o.run.presses) s.push_back(press_name(id));
       return join_list(s);
     }},
    {"budgets", "--budgets", "-b", "comma-separated shares of tokens kept, in (0, 1]", U::Run, "",
     [](O& o, std::string_view t) { o.run.budgets = parse_number_list(t, "budgets"); },
     [](const O& o) { return join_numbers(o.run.budgets); }},
    {"question_first", "--question-first", "", "the question also opens the context", U::Run, "true",
     [](O& o, std::string_view t) { o.run.question_first = parse_bool(t, "question_first"); },
     [](const O& o) { return bool_text(o.run.question_first); }},
    {"format", "--format", "", "the prompt: plain completion, or chat (the GGUF's ChatML template)", U::Run, "",
     [](O& o, std::string_view t) { o.run.format = parse_prompt_format(t); },
     [](const O& o) { return std::string(to_string(o.run.format)); }},
    {"optimum", "--no-optimum", "", "prefill protocol: the prefill optimum's row (--no-optimum: leave it out)", U::Run,
     "false", [](O& o, std::string_view t) { o.run.optimum = parse_bool(t, "optimum"); },
     [](const O& o) { return bool_text(o.run.optimum); }},
    {"optimum_scopes", "--optimum-scopes", "",
     "prefill protocol: budget scopes of the optimum's rows: head (per-head budgets: optimum), layer, layerwise, "
     "model (shared budgets of the same total: optimum@model), comma-separated or all",
     U::Run, "", [](O& o, std::string_view t) { o.run.optimum_scopes = parse_budget_scopes(t); },
     [](const O& o) { return join_budget_scopes(o.run.optimum_scopes); }},
    {"topk", "--no-topk", "", "streaming: the oracle top-k's row (--no-topk: leave it out)", U::Run, "false",
     [](O& o, std::string_view t) { o.run.topk = parse_bool(t, "topk"); },
     [](const O& o) { return bool_text(o.run.topk); }},
    {"full_cache", "--no-full-cache", "",
     "answer with the full cache first (--no-full-cache: skip it; streaming without oracle only)", U::Run, "false",
     [](O& o, std::string_view t) { o.run.full_cache = parse_bool(t, "full_cache"); },
     [](const O& o) { return bool_text(o.run.full_cache); }},
}};

}  // namespace

std::span<const TaskOptionEntry> task_option_table() { return kTaskOptions; }

const TaskOptionEntry* find_task_option(std::string_view name) {
  for (const auto& e : kTaskOptions)
    if (e.name == name) return &e;
  return nullptr;
}

std::string task_option_names(TaskOptionUse use) {
  std::vector<std::string> s;
  for (const auto& e : kTaskOptions)
    if (e.use == use || use == TaskOptionUse::Run) s.emplace_back(e.name);
  return join_list(s);
}

nlohmann::json task_options_json(const TaskOptions& o) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& e : kTaskOptions) j[std::string(e.name)] = e.get(o);
  return j;
}

}  // namespace kvo::studies

#include "kvo/studies/task_io.hpp"

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "kvo/core/atomic_file.hpp"
#include "kvo/core/error.hpp"
#include "kvo/proofs_check/paper_experiments.hpp"
#include "kvo/studies/task_comparisons.hpp"

namespace kvo::studies {

nlohmann::json task_instance_json(const TaskInstance& in) {
  nlohmann::json j = {{"id", in.id},
                      {"task", in.task},
                      {"length", in.length},
                      {"depth", in.depth},
                      {"context", in.context},
                      {"question", in.question},
                      {"answer_prefix", in.answer_prefix},
                      {"answer", in.answers},
                      {"rule", std::string(to_string(in.rule))},
                      {"max_new_tokens", in.max_new_tokens}};
  nlohmann::json needles = nlohmann::json::array();
  for (const auto& [a, b] : in.needles) needles.push_back({a, b});
  j["needles"] = needles;
  if (in.shots > 0) {
    j["examples"] = in.examples;
    j["shots"] = in.shots;
  }
  return j;
}

TaskInstance task_instance_from_json(const nlohmann::json& j, const std::string& where) {
  require(j.is_object(), where + ": not a JSON object");
  auto text = [&](const char* key, bool required) -> std::string {
    if (!j.contains(key)) {
      require(!required, where + ": no \"" + key + "\" column");
      return "";
    }
    require(j[key].is_string(), where + ": \"" + key + "\" is not a string");
    return j[key].get<std::string>();
  };
  TaskInstance in;
  in.context = text("context", true);
  in.question = text("question", true);
  in.answer_prefix = text("answer_prefix", false);
  require(j.contains("answer"), where + ": no \"answer\" column");
  const auto& a = j["answer"];
  if (a.is_string()) {
    in.answers = {a.get<std::string>()};
  } else {
    require(a.is_array() && !a.empty(), where + ": \"answer\" is neither a string nor a list of strings");
    for (const auto& x : a) {
      require(x.is_string(), where + ": \"answer\" is neither a string nor a list of strings");
      in.answers.push_back(x.get<std::string>());
    }
  }
  in.id = j.contains("id") ? text("id", false) : where;
  in.task = j.contains("task") ? text("task", false) : "custom";
  if (j.contains("rule")) in.rule = parse_score_rule(text("rule", false));
  auto integer = [&](const char* key, int fallback) {
    if (!j.contains(key)) return fallback;
    require(j[key].is_number_integer(), where + ": \"" + key + "\" is not an integer");
    return j[key].get<int>();
  };
  in.max_new_tokens = integer("max_new_tokens", in.max_new_tokens);
  require(in.max_new_tokens >= 1, where + ": \"max_new_tokens\" must be >= 1");
  in.length = integer("length", 0);
  if (j.contains("depth")) {
    require(j["depth"].is_number(), where + ": \"depth\" is not a number");
    in.depth = j["depth"].get<double>();
  }
  in.shots = integer("shots", 0);
  require(in.shots >= 0, where + ": \"shots\" must be >= 0");
  if (j.contains("examples")) {
    require(j["examples"].is_string(), where + ": \"examples\" is not a string");
    in.examples = j["examples"].get<std::string>();
  }
  if (j.contains("needles")) {
    require(j["needles"].is_array(), where + ": \"needles\" is not a list of [first, last) pairs");
    for (const auto& p : j["needles"]) {
      require(p.is_array() && p.size() == 2 && p[0].is_number_integer() && p[1].is_number_integer() &&
                  p[0].get<int>() >= 0 && p[0].get<int>() < p[1].get<int>(),
              where + ": \"needles\" is not a list of [first, last) pairs");
      in.needles.emplace_back(p[0].get<int>(), p[1].get<int>());
    }
  }
  return in;
}

std::vector<TaskInstance> read_task_jsonl(const std::string& path) {
  std::ifstream in(path);
  require(in.good(), "cannot read instances file '" + path + "'");
  std::vector<TaskInstance> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + " line " + std::to_string(n);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      throw Error(where + ": not valid JSON");
    }
    TaskInstance t = task_instance_from_json(j, where);
    if (!j.contains("id")) t.id = "line-" + std::to_string(n);
    out.push_back(std::move(t));
  }
  require(!out.empty(), "instances file '" + path + "' holds no instance");
  return out;
}

void write_task_jsonl(const std::string& path, const std::vector<TaskInstance>& instances) {
  std::ostringstream s;
  for (const TaskInstance& t : instances) s << task_instance_json(t).dump() << '\n';
  write_file_atomic(path, s.str());
}

namespace {

nlohmann::json number_or_null(double x) { return std::isnan(x) ? nlohmann::json() : nlohmann::json(x); }

}  // namespace

nlohmann::json task_outcomes_json(std::span<const TaskOutcome> outcomes) {
  nlohmann::json a = nlohmann::json::array();
  for (const TaskOutcome& o : outcomes)
    a.push_back({{"instance", o.instance},
                 {"task", o.task},
                 {"length", o.length},
                 {"depth", o.depth},
                 {"shots", o.shots},
                 {"input_tokens", o.input_tokens},
                 {"row", o.row},
                 {"budget", o.budget},
                 {"kept", o.kept},
                 {"score", o.score},
                 {"answer", o.answer},
                 {"needles_held", number_or_null(o.needles_held)},
                 {"mass_of_optimum", number_or_null(o.mass_of_optimum)}});
  return a;
}

static_assert(kFullCacheRow == kLoopFullRow, "the paper's claims name the full cache's row as tasks run does");

std::vector<CheckRecord> task_paper_experiments(const TaskEvalResult& r) {
  if (r.protocol != TaskProtocol::Streaming) return {};
  // Per shot count: (row, budget) -> score sum, count.
  std::map<int, std::map<std::pair<std::string, double>, std::pair<double, int>>> sums;
  for (const TaskOutcome& o : r.outcomes) {
    auto& [sum, count] = sums[o.shots][{o.row, o.row == kFullCacheRow ? 1.0 : o.budget}];
    sum += o.score;
    ++count;
  }
  std::vector<CheckRecord> out;
  for (const auto& [shots, cell] : sums) {
    const auto full = cell.find({std::string(kFullCacheRow), 1.0});
    if (full == cell.end()) continue;
    LoopMeasurements m;
    m.metric = LoopMetric::Accuracy;
    m.shots = shots;
    m.full = full->second.first / full->second.second;
    for (const auto& [key, value] : cell)
      if (key.first != kFullCacheRow) m.rows.push_back({key.first, key.second, value.first / value.second});
    TaskEvalResult same_shots;  // the claims compare rows on this shot count's instances
    same_shots.protocol = r.protocol;
    for (const TaskOutcome& o : r.outcomes)
      if (o.shots == shots) same_shots.outcomes.push_back(o);
    m.paired = [&same_shots](const std::string& row, double budget, const std::string& against,
                             double against_budget) -> std::optional<PairedTest> {
      try {
        const TaskComparison c = compare_task_rows(same_shots, row, budget, against, against_budget);
        return PairedTest{.instances = c.instances, .better = c.better, .worse = c.worse, .p_value = c.p_value};
      } catch (const Error&) {  // merged runs whose rows answered different instances: no pairs
        return std::nullopt;
      }
    };
    for (auto& rec : paper_experiment_records(m)) out.push_back(std::move(rec));
  }
  return out;
}

nlohmann::json task_result_json(const TaskEvalResult& r) {
  auto cells_json = [&](bool by_depth) {
    nlohmann::json a = nlohmann::json::array();
    for (const TaskCell& c : summarize_tasks(r, by_depth))
      a.push_back({{"task", c.task},
                   {"length", c.length},
                   {"depth", c.depth},
                   {"row", c.row},
                   {"budget", c.budget},
                   {"count", c.count},
                   {"accuracy", c.accuracy},
                   {"low", c.low},
                   {"high", c.high},
                   {"model_fails", c.model_fails},
                   {"needles_held", number_or_null(c.needles_held)},
                   {"mass_of_optimum", number_or_null(c.mass_of_optimum)}});
    return a;
  };
  return {{"protocol", std::string(to_string(r.protocol))},
          {"outcomes", task_outcomes_json(r.outcomes)},
          {"cells", cells_json(false)},
          {"cells_by_depth", cells_json(true)},
          {"comparisons", task_comparisons_json(task_comparisons(r))},
          {"paper_experiments", paper_experiments_json(task_paper_experiments(r))}};
}

TaskEvalResult task_result_from_json(const nlohmann::json& j, const std::string& where) {
  require(j.is_object() && j.contains("protocol") && j["protocol"].is_string() && j.contains("outcomes") &&
              j["outcomes"].is_array(),
          where + ": not the JSON of kvoracle tasks run (no \"protocol\" and \"outcomes\")");
  TaskEvalResult r;
  try {
    r.protocol = parse_task_protocol(j["protocol"].get<std::string>());
  } catch (const Error& e) {
    throw Error(where + ": " + e.what());
  }
  for (size_t x = 0; x < j["outcomes"].size(); ++x) {
    const nlohmann::json& o = j["outcomes"][x];
    const std::string at = where + " outcome " + std::to_string(x + 1);
    require(o.is_object(), at + ": not a JSON object");
    auto field = [&](const char* key) -> const nlohmann::json& {
      require(o.contains(key), at + ": no \"" + key + "\"");
      return o[key];
    };
    auto text = [&](const char* key) {
      require(field(key).is_string(), at + ": \"" + key + "\" is not a string");
      return o[key].get<std::string>();
    };
    auto number = [&](const char* key, bool nullable) {
      const nlohmann::json& v = field(key);
      if (nullable && v.is_null()) return static_cast<double>(NAN);
      require(v.is_number(), at + ": \"" + key + "\" is not a number");
      return v.get<double>();
    };
    auto integer = [&](const char* key) {
      require(field(key).is_number_integer(), at + ": \"" + key + "\" is not an integer");
      return o[key].get<int>();
    };
    TaskOutcome t;
    t.instance = text("instance");
    t.task = text("task");
    t.length = integer("length");
    t.depth = number("depth", false);
    t.shots = o.contains("shots") ? integer("shots") : 0;
    t.input_tokens = integer("input_tokens");
    t.row = text("row");
    t.budget = number("budget", false);
    t.kept = number("kept", false);
    t.score = number("score", false);
    require(t.score >= 0 && t.score <= 1, at + ": \"score\" is outside [0, 1]");
    t.answer = text("answer");
    t.needles_held = number("needles_held", true);
    t.mass_of_optimum = o.contains("mass_of_optimum") ? number("mass_of_optimum", true) : NAN;
    r.outcomes.push_back(std::move(t));
  }
  return r;
}

TaskEvalResult read_task_result(const std::string& path) {
  std::ifstream in(path);
  require(in.good(), "cannot read results file '" + path + "'");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception&) {
    throw Error(path + ": not valid JSON");
  }
  return task_result_from_json(j, path);
}

}  // namespace kvo::studies

#include "kvo/studies/text_search.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <random>
#include <set>
#include <tuple>

#include "kvo/core/error.hpp"
#include "kvo/core/request_json.hpp"
#include "kvo/core/trace_io.hpp"
#include "kvo/model/recorder.hpp"
#include "kvo/oracle/competitive.hpp"
#include "kvo/report/svg_plot.hpp"
#include "kvo/report/table.hpp"
#include "kvo/studies/task_eval.hpp"
#include "kvo/studies/task_io.hpp"
#include "local_search.hpp"

namespace kvo::studies {

namespace {

TaskSuiteRequest suite_of(const TextSearchRequest& r) {
  TaskSuiteRequest s;
  s.tasks = {parse_task(r.task)};
  s.lengths = {r.length};
  s.depths = {r.depth};
  s.per_cell = 1;
  s.seed = r.suite_seed;
  s.haystack_dir = r.haystack_dir;
  return s;
}

// A word of the haystack with the whitespace after it; `origin` is its index among the unaltered
// text's words (-1: inserted by the search).
struct Word {
  std::string text, space;
  bool fixed = false;
  int origin = -1;
};
using Text = std::vector<Word>;

std::string joined(const Text& t) {
  std::string s;
  for (const Word& w : t) s += w.text + w.space;
  return s;
}

// The context's words; those inside a sentence holding an expected answer (from the '.' before it
// to the '.' after it) are fixed, so that the needle stays what the question asks for.
Text split_words(const std::string& context, const std::vector<std::string>& answers) {
  std::vector<std::pair<size_t, size_t>> kept;
  for (const std::string& a : answers) {
    if (a.empty()) continue;
    for (size_t at = context.find(a); at != std::string::npos; at = context.find(a, at + 1)) {
      const size_t dot = context.rfind('.', at);
      const size_t left = dot == std::string::npos ? 0 : dot + 1;
      const size_t end = context.find('.', at + a.size());
      kept.emplace_back(left, end == std::string::npos ? context.size() : end + 1);
    }
  }
  Text t;
  size_t i = 0;
  while (i < context.size()) {
    const size_t start = i;
    while (i < context.size() && !std::isspace(static_cast<unsigned char>(context[i]))) ++i;
    const size_t word_end = i;
    while (i < context.size() && std::isspace(static_cast<unsigned char>(context[i]))) ++i;
    Word w{context.substr(start, word_end - start), context.substr(word_end, i - word_end), false,
           static_cast<int>(t.size())};
    w.fixed = w.text.empty() || std::any_of(kept.begin(), kept.end(),
                                            [&](const auto& r) { return start < r.second && word_end > r.first; });
    t.push_back(std::move(w));
  }
  return t;
}

std::vector<int> editable(const Text& t) {
  std::vector<int> e;
  for (int i = 0; i < static_cast<int>(t.size()); ++i)
    if (!t[static_cast<size_t>(i)].fixed) e.push_back(i);
  return e;
}

// The needles' token ranges moved to where their tokens (with a token either side) sit in the
// edited context's ids; a needle not found is dropped.
std::vector<std::pair<int, int>> relocate_needles(const std::vector<int>& before, const std::vector<int>& after,
                                                  const std::vector<std::pair<int, int>>& needles) {
  std::vector<std::pair<int, int>> out;
  for (auto [a, b] : needles) {
    const int lo = std::max(0, a - 1), hi = std::min(static_cast<int>(before.size()), b + 1);
    const auto first = before.begin() + lo, last = before.begin() + hi;
    const auto at = std::search(after.begin(), after.end(), first, last);
    if (at == after.end()) continue;
    const int shift = static_cast<int>(at - after.begin()) - lo;
    out.emplace_back(a + shift, b + shift);
  }
  return out;
}

class TextEvaluator {
 public:
  TextEvaluator(const model::Llama& m, const TextSearchRequest& r, TaskInstance base)
      : m_(m), r_(r), base_(std::move(base)), base_ids_(m.tokenizer().encode(base_.context)) {}

  TaskInstance instance(const Text& t) const {
    TaskInstance inst = base_;
    inst.context = joined(t);
    if (!inst.needles.empty())
      inst.needles = relocate_needles(base_ids_, m_.tokenizer().encode(inst.context), base_.needles);
    return inst;
  }

  std::vector<int> input_ids(const TaskInstance& inst) const {
    const TaskTokens tt = task_tokens(m_.tokenizer(), inst);
    std::vector<int> ids = tt.context;
    ids.insert(ids.end(), tt.question.begin(), tt.question.end());
    return ids;
  }
  bool fits(const TaskInstance& inst) const {
    const int context = m_.config().context;
    return context <= 0 || static_cast<int>(input_ids(inst).size()) + inst.max_new_tokens <= context;
  }

  Trace record(const TaskInstance& inst) const {
    const std::vector<int> ids = input_ids(inst);
    model::RecordOptions o;
    o.tokens = static_cast<int>(ids.size());
    o.text_source = "kvoracle search text: " + inst.id;
    return model::record_trace(m_, ids, o);
  }

  // The policy's mean and lowest ratio to OPT_dyn over the trace's (layer, head) units.
  std::pair<double, double> ratios(const Trace& t) const {
    CompetitiveOptions co;
    ReplayOptions ro;
    ro.run = r_.run.build(r_.policy, &t);
    co.policies.push_back(std::move(ro));
    co.threads = r_.threads;
    double sum = 0.0, lowest = INFINITY;
    const std::vector<HeadCompetitive> heads = competitive_ratios(t, co);
    for (const HeadCompetitive& h : heads) {
      const double v = h.opt_dyn > 0 ? h.policies.front().value / h.opt_dyn : 1.0;
      sum += v;
      lowest = std::min(lowest, v);
    }
    return {sum / static_cast<double>(heads.size()), lowest};
  }

  // The full cache's and the policy's outcomes on the instance (the streaming protocol).
  std::pair<TaskOutcome, TaskOutcome> outcomes(const TaskInstance& inst) const {
    TaskEvalRequest q;
    q.policies = {r_.policy};
    const int n = static_cast<int>(input_ids(inst).size());
    q.budgets = {static_cast<double>(r_.run.build(r_.policy).unit_budget(n, 0, 0).total) / n};
    q.optimum = false;
    q.topk = false;
    q.run = r_.run.build(r_.policy);
    const std::vector<TaskInstance> one{inst};
    TaskEvalResult res = evaluate_tasks(m_, one, q);
    return {res.outcomes.at(0), res.outcomes.at(1)};
  }

  double task_value(const TaskOutcome& full, const TaskOutcome& row) const {
    const double mass = std::isfinite(row.mass_of_optimum) ? row.mass_of_optimum : 0.0;
    return row.score - full.score + 1e-3 * mass;
  }

  // The target's value of a text (INFINITY when it no longer fits the model's positions).
  double value(const Text& t) const {
    const TaskInstance inst = instance(t);
    if (!fits(inst)) return INFINITY;
    if (r_.target == "ratio") return ratios(record(inst)).first;
    const auto [full, row] = outcomes(inst);
    return task_value(full, row);
  }

  TextMeasure measure(const TaskInstance& inst) const {
    TextMeasure m;
    m.tokens = static_cast<int>(input_ids(inst).size());
    std::tie(m.ratio, m.worst_head) = ratios(record(inst));
    const auto [full, row] = outcomes(inst);
    m.score = row.score;
    m.full_score = full.score;
    m.needles_held = row.needles_held;
    m.mass_of_optimum = row.mass_of_optimum;
    m.answer = row.answer;
    m.full_answer = full.answer;
    return m;
  }
  double value_of(const TextMeasure& m) const {
    if (r_.target == "ratio") return m.ratio;
    TaskOutcome full, row;
    full.score = m.full_score;
    row.score = m.score;
    row.mass_of_optimum = m.mass_of_optimum;
    return task_value(full, row);
  }

 private:
  const model::Llama& m_;
  const TextSearchRequest& r_;
  TaskInstance base_;
  std::vector<int> base_ids_;
};

std::vector<TextEdit> edits_between(const Text& base, const Text& now) {
  std::vector<TextEdit> out;
  std::vector<bool> seen(base.size(), false);
  for (size_t i = 0; i < now.size(); ++i) {
    const Word& w = now[i];
    if (w.origin >= 0) {
      seen[static_cast<size_t>(w.origin)] = true;
      if (w.text != base[static_cast<size_t>(w.origin)].text)
        out.push_back({w.origin, "replace", base[static_cast<size_t>(w.origin)].text, w.text});
      continue;
    }
    int next = static_cast<int>(base.size());
    for (size_t j = i + 1; j < now.size(); ++j)
      if (now[j].origin >= 0) {
        next = now[j].origin;
        break;
      }
    out.push_back({next, "insert", "", w.text});
  }
  for (size_t o = 0; o < base.size(); ++o)
    if (!seen[o]) out.push_back({static_cast<int>(o), "delete", base[o].text, ""});
  std::stable_sort(out.begin(), out.end(), [](const TextEdit& a, const TextEdit& b) { return a.word < b.word; });
  return out;
}

nlohmann::json measure_json(const TextMeasure& m) {
  return {{"tokens", m.tokens},
          {"ratio", m.ratio},
          {"worst_head", m.worst_head},
          {"score", m.score},
          {"full_score", m.full_score},
          {"needles_held", std::isfinite(m.needles_held) ? nlohmann::json(m.needles_held) : nlohmann::json()},
          {"mass_of_optimum", std::isfinite(m.mass_of_optimum) ? nlohmann::json(m.mass_of_optimum) : nlohmann::json()},
          {"answer", m.answer},
          {"full_answer", m.full_answer}};
}

}  // namespace

void TextSearchRequest::validate() const {
  suite_of(*this).validate();
  require(target == "ratio" || target == "task", "target: '" + target + "' is neither ratio nor task");
  require(threads >= 1, "threads: " + std::to_string(threads) + " is below 1");
  require(edit_words >= 0, "edit_words: " + std::to_string(edit_words) + " is below 0");
  const PolicyTraits& t = policy_traits(policy);
  require(t.decoder && t.nested && !t.offline,
          "policy: " + policy_name(policy) + " is not a policy a decoder can drive step by step");
  validate_search_size({policy}, length, evaluations, restarts, run);
  for (const std::string& w : words)
    require(!w.empty() &&
                std::none_of(w.begin(), w.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); }),
            "words: '" + w + "' is not one word (empty or with whitespace)");
}

const Schema<TextSearchRequest>& TextSearchRequest::schema() {
  using R = TextSearchRequest;
  static const Schema<R> schema(
      "text search request",
      fields<R>(
          {{member(&R::task, {.name = "task", .help = "the task of the instance whose haystack is searched"}),
            member(&R::length, {.name = "length", .help = "the instance's length in tokens"}),
            member(&R::depth, {.name = "depth", .help = "the needle's depth in [0, 1]"}),
            member(&R::suite_seed, {.name = "suite_seed", .help = "the task suite's seed (which instance)"}),
            member(&R::haystack_dir, {.name = "haystack_dir", .help = "the real texts of the haystacks"}),
            member(&R::policy, {.name = "policy", .help = "the policy whose worst text is searched"}),
            member(&R::target,
                   {.name = "target",
                    .help = "ratio (its mean share of OPT_dyn) or task (its score minus the full cache's)"}),
            member(&R::words, {.name = "words", .help = "the words edits draw from (default: the haystack's own)"}),
            member(&R::edit_words,
                   {.name = "edit_words", .help = "only the first this many editable words change (0: all)"}),
            member(&R::insertions, {.name = "insertions", .help = "insert words as well as replace them"}),
            member(&R::evaluations, {.name = "evaluations", .help = "texts evaluated, over every restart"}),
            member(&R::restarts, {.name = "restarts", .help = "restarts, each from the unaltered text"}),
            member(&R::threads, {.name = "threads", .help = "threads for the per-head optima of one text"}),
            member(&R::out, {.name = "out", .help = "save the worst text (instance and trace) in this directory"})},
           nested("run", &R::run, run_options_schema())}));
  return schema;
}

TextSearchResult search_text(const model::Llama& model, const TextSearchRequest& req,
                             const std::function<void()>& on_tick) {
  req.validate();
  if (!req.out.empty()) std::filesystem::create_directories(req.out);
  const std::vector<TaskInstance> suite = generate_tasks(model.tokenizer(), suite_of(req));
  require(!suite.empty(), "search text: the suite gave no instance");
  const TaskInstance& base = suite.front();
  Text unaltered = split_words(base.context, base.answers);
  std::vector<std::string> pool = req.words;
  if (pool.empty()) {  // the haystack's own words, each once, in order
    std::set<std::string> seen;
    for (int i : editable(unaltered))
      if (seen.insert(unaltered[static_cast<size_t>(i)].text).second)
        pool.push_back(unaltered[static_cast<size_t>(i)].text);
  }
  if (req.edit_words > 0)
    for (int seen = 0; Word & w : unaltered)
      if (!w.fixed && ++seen > req.edit_words) w.fixed = true;
  const std::vector<int> free = editable(unaltered);
  require(!free.empty(), "search text: instance " + base.id + " has no word outside its needles to edit");
  const TextEvaluator eval(model, req, base);

  detail::LocalSearch<Text> s;
  s.start = [&](std::mt19937_64&) { return unaltered; };
  // sigma sets how many edits a move makes (1 to 8): each replaces an editable word by a pool word,
  // or (with insertions) inserts one before an editable word and deletes another, so the haystack
  // keeps its length.
  s.move = [&](const Text& x, double sigma, std::mt19937_64& g) {
    Text y = x;
    const int edits = std::clamp(static_cast<int>(std::lround(sigma * 4)), 1, 8);
    std::uniform_int_distribution<size_t> word(0, pool.size() - 1);
    std::bernoulli_distribution insert(0.5);
    for (int e = 0; e < edits; ++e) {
      std::vector<int> at = editable(y);
      std::uniform_int_distribution<size_t> pick(0, at.size() - 1);
      const int i = at[pick(g)];
      if (!req.insertions || at.size() < 2 || !insert(g)) {
        y[static_cast<size_t>(i)].text = pool[word(g)];
        continue;
      }
      y.insert(y.begin() + i, Word{pool[word(g)], " ", false, -1});
      at = editable(y);
      int j = i;
      while (j == i) j = at[std::uniform_int_distribution<size_t>(0, at.size() - 1)(g)];
      y.erase(y.begin() + j);
    }
    return y;
  };
  s.evaluate = [&](const Text& x) { return eval.value(x); };
  s.admissible = [](double v) { return std::isfinite(v); };
  const auto found = detail::local_search(s, req.restarts, req.evaluations, req.run.seed, on_tick);

  TextSearchResult res;
  res.request = req;
  res.instance_id = base.id;
  res.editable_words = static_cast<int>(free.size());
  res.pool_words = static_cast<int>(pool.size());
  res.unaltered = eval.measure(base);
  res.unaltered_value = eval.value_of(res.unaltered);
  const Text& best = found.found ? found.best : unaltered;
  TaskInstance worst = eval.instance(best);
  worst.id = base.id + "-worst-" + policy_name(req.policy) + "-" + req.target;
  res.worst = eval.measure(worst);
  res.worst_value = found.found ? found.worst : res.unaltered_value;
  res.found_at = found.found_at;
  res.curve = found.curve;
  res.edits = edits_between(unaltered, best);
  if (!req.out.empty()) {
    const std::filesystem::path dir(req.out);
    res.instance_file = (dir / "worst-text.jsonl").string();
    res.trace_file = (dir / "worst-text.safetensors").string();
    write_task_jsonl(res.instance_file, {worst});
    write_trace(res.trace_file, eval.record(worst));
    const std::vector<TaskInstance> again = read_task_jsonl(res.instance_file);  // what a reader reruns
    res.verified = eval.value_of(eval.measure(again.front()));
    res.theorem_failures = theorem_failures(read_trace(res.trace_file), req.policy, req.run, {"C1", "C19"});
  }
  return res;
}

nlohmann::json TextSearchResult::to_json() const {
  nlohmann::json edits_json = nlohmann::json::array();
  for (const TextEdit& e : edits)
    edits_json.push_back({{"word", e.word}, {"kind", e.kind}, {"was", e.was}, {"now", e.now}});
  return {{"request", TextSearchRequest::schema().to_json(request)},
          {"instance", instance_id},
          {"editable_words", editable_words},
          {"pool_words", pool_words},
          {"unaltered", measure_json(unaltered)},
          {"worst", measure_json(worst)},
          {"unaltered_value", unaltered_value},
          {"worst_value", worst_value},
          {"found_at", found_at},
          {"curve", search_curve_json(curve)},
          {"edits", edits_json},
          {"instance_file", instance_file},
          {"trace_file", trace_file},
          {"verified", verified},
          {"theorem_failures", theorem_failures}};
}

Report TextSearchResult::report() const {
  Report rep;
  const std::string policy = policy_name(request.policy);
  rep.line("The text on which " + policy + " at budget " + request.run.budget + " does worst (" +
           (request.target == "ratio" ? "its mean share of OPT_dyn over the (layer, head) units"
                                      : "its task score minus the full cache's") +
           "), searched over replacements and insertions of " + std::to_string(pool_words) + " words in the " +
           std::to_string(editable_words) + " editable words of " + instance_id + " (" +
           std::to_string(request.evaluations) + " evaluations in " + std::to_string(request.restarts) +
           " restarts, seed " + std::to_string(request.run.seed) + "):");
  Table& t = rep.table({"text", "tokens", "/ OPT_dyn", "lowest head", policy + " score", "full cache", "needles held",
                        policy + " answer"});
  for (const auto& [name, m] :
       {std::pair<std::string, const TextMeasure*>{"unaltered", &unaltered}, {"worst found", &worst}})
    t.row({name, integer(m->tokens), decimal(m->ratio), decimal(m->worst_head), decimal(m->score),
           decimal(m->full_score), std::isfinite(m->needles_held) ? decimal(m->needles_held) : "-", m->answer});
  std::string list;
  for (size_t i = 0; i < edits.size() && i < 12; ++i)
    list += (i ? "; " : "") + edits[i].kind + " word " + std::to_string(edits[i].word) +
            (edits[i].was.empty() ? "" : " '" + edits[i].was + "'") +
            (edits[i].now.empty() ? "" : " -> '" + edits[i].now + "'");
  rep.line(std::to_string(edits.size()) + " edits (found at evaluation " + std::to_string(found_at) + ")" +
           (edits.empty() ? "" : ": " + list + (edits.size() > 12 ? "; ..." : "")));
  if (!instance_file.empty())
    rep.line("read back from " + instance_file + ": " + reread_verdict(verified, worst_value) + "; trace " +
             trace_file + ", verify's C1 and C19 " + (theorem_failures == 0 ? "hold" : "FAIL") + " on it");
  return rep;
}

std::string TextSearchResult::plot_svg() const {
  LinePlot plot;
  plot.title = "lowest value found against evaluations";
  plot.x_label = "texts evaluated";
  plot.y_label = request.target == "ratio" ? "mean value / OPT_dyn" : "score minus the full cache's";
  for (const SearchPoint& c : curve)
    plot.add_point(policy_name(request.policy), static_cast<double>(c.evaluation), c.worst);
  plot.lines.push_back({"unaltered", unaltered_value});
  return plot.svg();
}

}  // namespace kvo::studies

#include "kvo/studies/task_eval.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <tuple>

#include "kvo/core/cache_manager.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/policy_press.hpp"
#include "kvo/model/evicting_decoder.hpp"
#include "kvo/model/recorder.hpp"
#include "kvo/model/topk_decoder.hpp"
#include "kvo/oracle/prefill_oracle.hpp"
#include "kvo/oracle/shared_prefill.hpp"
#include "kvo/studies/offline_schedule.hpp"
#include "kvo/studies/press_eval.hpp"
#include "kvo/studies/task_io.hpp"

namespace kvo::studies {

using namespace kvo::model;  // the engine the studies drive
namespace {

using UnitSets = std::vector<std::vector<int>>;  // kept positions per (layer, KV head), layer-major

std::string share_text(double b) {
  std::ostringstream s;
  s << b;
  return s.str();
}

int argmax(const Eigen::RowVectorXf& logits) {
  Eigen::Index best = 0;
  logits.maxCoeff(&best);  // ties: the smallest id
  return static_cast<int>(best);
}

// Greedy answer: `first` predicts the first token, next(token) feeds one and returns the logits.
template <class Next>
std::vector<int> greedy_answer(const Llama& m, Eigen::RowVectorXf first, int max_new, Next next) {
  std::vector<int> ids;
  Eigen::RowVectorXf logits = std::move(first);
  for (int t = 0; t < max_new; ++t) {
    const int tok = argmax(logits);
    ids.push_back(tok);
    if (tok == m.tokenizer().eos()) break;
    if (t + 1 < max_new) logits = next(tok);
  }
  return ids;
}

// Share of units whose kept set holds every needle token (NaN without needles).
double needles_held(const UnitSets& kept, const std::vector<std::pair<int, int>>& needles, int shift) {
  if (needles.empty()) return NAN;
  int held = 0;
  for (const auto& s : kept) {
    bool all = true;
    for (const auto& [a, b] : needles)
      for (int p = a + shift; p < b + shift && all; ++p) all = std::binary_search(s.begin(), s.end(), p);
    held += all ? 1 : 0;
  }
  return static_cast<double>(held) / static_cast<double>(kept.size());
}

// Tokens per (layer, KV head) a share of an input of n tokens keeps under streaming eviction.
int streaming_budget(double share, int n) { return std::max(1, static_cast<int>(std::floor(share * n + 1e-9))); }

// Appends ids to the cache in chunks of 256 (the causal blocks a full-attention prefill needs).
void prefill_full(const Llama& m, std::span<const int> ids, KvCache& cache, LayerTap* tap) {
  for (size_t s = 0; s < ids.size(); s += 256)
    m.forward(ids.subspan(s, std::min<size_t>(256, ids.size() - s)), cache, false, tap);
}

double mean_size(const UnitSets& kept) {
  double s = 0;
  for (const auto& k : kept) s += static_cast<double>(k.size());
  return s / static_cast<double>(kept.size());
}

struct Prepared {
  const TaskInstance* inst = nullptr;
  TaskTokens tokens;
  int shift = 0;  // needles' offset in the context ids (question_first)
};

TaskOutcome outcome_of(const Prepared& p, std::string row, double budget) {
  TaskOutcome o;
  o.instance = p.inst->id;
  o.task = p.inst->task;
  o.length = p.inst->length;
  o.depth = p.inst->depth;
  o.shots = p.inst->shots;
  o.input_tokens = p.tokens.size();
  o.row = std::move(row);
  o.budget = budget;
  return o;
}

// The answer's text leaves out the end-of-sequence token that stopped it (as kvpress's pipeline does).
void finish(const Llama& m, const Prepared& p, const std::vector<int>& answer, TaskOutcome& o) {
  const bool stopped = !answer.empty() && answer.back() == m.tokenizer().eos();
  o.answer = m.tokenizer().decode(std::vector<int>(answer.begin(), answer.end() - (stopped ? 1 : 0)));
  o.score = score_answer(*p.inst, o.answer);
}

// The full cache's run of an instance: its answer, its cache of every position, and its trace of
// the whole instance (context, question, answer), recorded along the same forward calls.
struct FullRun {
  std::vector<int> answer;
  KvCache cache;
  Trace trace;
  MassOfOptimum mass;  // the question's and answer's queries on the context, per unit
};

// The full cache: one batched prefill of the context, the question, then the answer token by token
// (its last token run too, so that the trace holds every query of the instance).
FullRun full_run(const Llama& m, const Prepared& p, int trace_prompt_len, TaskOutcome& o) {
  const int C = static_cast<int>(p.tokens.context.size());
  FullRun f;
  RecordOptions ro;
  ro.tokens = p.tokens.size() + p.inst->max_new_tokens;
  ro.prompt_len = trace_prompt_len;
  ro.text_source = p.inst->id;
  TraceRecorder rec(m, ro);
  f.cache = m.new_cache(ro.tokens);
  prefill_full(m, p.tokens.context, f.cache, rec.tap());
  const MatrixRM q = m.forward(p.tokens.question, f.cache, true, rec.tap());
  f.answer = greedy_answer(m, q.row(q.rows() - 1), p.inst->max_new_tokens, [&](int tok) {
    return Eigen::RowVectorXf(m.forward(std::span<const int>(&tok, 1), f.cache, true, rec.tap()).row(0));
  });
  m.forward(std::span<const int>(&f.answer.back(), 1), f.cache, false, rec.tap());
  std::vector<int> all = p.tokens.context;
  all.insert(all.end(), p.tokens.question.begin(), p.tokens.question.end());
  all.insert(all.end(), f.answer.begin(), f.answer.end());
  f.trace = rec.finish(all);
  f.mass = MassOfOptimum(f.trace, C);
  o.kept = C;
  o.needles_held = p.inst->needles.empty() ? NAN : 1.0;
  o.mass_of_optimum = 1.0;
  finish(m, p, f.answer, o);
  return f;
}

// Streaming eviction under one policy and budget, along `schedule` for the offline policy.
void streaming_row(const Llama& m, const Prepared& p, const TaskEvalRequest& r, PolicyId id, double share,
                   const FullRun* full, TaskOutcome& o) {
  const LlamaConfig& c = m.config();
  const int n = p.tokens.size();
  const int k = streaming_budget(share, n);
  CacheManagerOptions mo = closed_loop_manager(
      c, r.run, id, r.run.budget.with_total(Amount{false, static_cast<double>(k)}), n + p.inst->max_new_tokens);
  if (policy_traits(id).offline) mo.run.policy.schedule = offline_schedules(id, full->trace, mo.run.budget);
  KvEvictionManager mgr(mo);
  EvictingDecoder dec(m, mgr, decoder_slots(mgr));
  dec.prefill(p.tokens.context);
  UnitSets held;
  for (int l = 0; l < c.n_layers; ++l)
    for (int kv = 0; kv < c.n_kv_heads; ++kv) held.push_back(dec.held(l, kv));
  o.kept = mean_size(held);
  o.needles_held = needles_held(held, p.inst->needles, p.shift);
  if (full) o.mass_of_optimum = full->mass(held, k);
  const MatrixRM q = dec.prefill(p.tokens.question);
  const std::vector<int> ans =
      greedy_answer(m, q.row(0), p.inst->max_new_tokens, [&](int tok) { return dec.step(tok); });
  finish(m, p, ans, o);
}

// The oracle top-k at the budget's k: nothing is evicted, so every needle is still cached.
void topk_row(const Llama& m, const Prepared& p, double share, TaskOutcome& o) {
  const int n = p.tokens.size(), k = streaming_budget(share, n);
  TopKDecoder dec(m, k, n + p.inst->max_new_tokens);
  dec.prefill(p.tokens.context);
  const MatrixRM q = dec.prefill(p.tokens.question);
  const std::vector<int> ans =
      greedy_answer(m, q.row(0), p.inst->max_new_tokens, [&](int tok) { return dec.step(tok); });
  o.kept = k;
  o.needles_held = p.inst->needles.empty() ? NAN : 1.0;
  finish(m, p, ans, o);
}

// Prefill compression: the context's cache cut to `kept`, then the question and the answer.
void prefill_row(const Llama& m, const Prepared& p, const FullRun& full, const UnitSets& kept, int k, TaskOutcome& o) {
  const int C = static_cast<int>(p.tokens.context.size());
  const int room = static_cast<int>(p.tokens.question.size()) + p.inst->max_new_tokens;
  KvCache pc = compressed_cache(m, full.cache, kept, C, room);  // reads the context's rows only
  const MatrixRM q = m.forward(p.tokens.question, pc, true);
  const std::vector<int> ans = greedy_answer(m, q.row(q.rows() - 1), p.inst->max_new_tokens, [&](int tok) {
    return Eigen::RowVectorXf(m.forward(std::span<const int>(&tok, 1), pc, true).row(0));
  });
  o.kept = mean_size(kept);
  o.needles_held = needles_held(kept, p.inst->needles, p.shift);
  o.mass_of_optimum = full.mass(kept, k);
  finish(m, p, ans, o);
}

}  // namespace

MassOfOptimum::MassOfOptimum(const Trace& full, int context) : context_(context), kv_heads_(full.n_kv_heads) {
  require(context >= 1 && context < full.n_tokens, "mass_of_optimum: the context (" + std::to_string(context) +
                                                       " tokens) must be shorter than the trace (" +
                                                       std::to_string(full.n_tokens) + ")");
  for (int l = 0; l < full.n_layers; ++l)
    for (int kv = 0; kv < full.n_kv_heads; ++kv) units_.push_back(prefill_unit(full, l, kv, context, false));
}

void MassOfOptimum::add(const Trace& full) {
  require(!units_.empty(), "mass_of_optimum: add() needs a reference built from a first run");
  require(full.n_kv_heads == kv_heads_ && static_cast<size_t>(full.n_layers) * full.n_kv_heads == units_.size(),
          "mass_of_optimum: the added run's trace has another shape (" + std::to_string(full.n_layers) + " layers x " +
              std::to_string(full.n_kv_heads) + " KV heads)");
  require(context_ < full.n_tokens, "mass_of_optimum: the added run (" + std::to_string(full.n_tokens) +
                                        " tokens) must be longer than the context (" + std::to_string(context_) + ")");
  for (auto& u : units_) {
    const PrefillUnit more = prefill_unit(full, u.layer, u.kv_head, context_, false);
    for (int j = 0; j < context_; ++j) u.weight[j] += more.weight[j];
    u.prompt_mass += more.prompt_mass;
    u.decoded_mass += more.decoded_mass;
    u.queries += more.queries;
  }
}

std::vector<std::vector<int>> MassOfOptimum::optimum_sets(BudgetScope scope, int k) const {
  require(!units_.empty(), "mass_of_optimum: optimum_sets() needs a reference");
  require(k >= 0 && k <= context_,
          "mass_of_optimum: budget k=" + std::to_string(k) + " outside [0, " + std::to_string(context_) + "]");
  return shared_prefill_sets(units_, kv_heads_, scope, k);
}

double MassOfOptimum::operator()(std::span<const std::vector<int>> kept, int k) const {
  if (units_.empty()) return NAN;
  require(kept.size() == units_.size(), "mass_of_optimum: one kept set per (layer, KV head) of the trace (" +
                                            std::to_string(units_.size()) + "), not " + std::to_string(kept.size()));
  double sum = 0;
  for (size_t u = 0; u < units_.size(); ++u) {
    for (int p : kept[u]) require(p >= 0 && p < context_, "mass_of_optimum: a kept position outside the context");
    const int ku = std::min(context_, std::max(k, static_cast<int>(kept[u].size())));
    const double best = solve_prefill(units_[u], ku).value;
    sum += best > 0 ? prefill_value(units_[u], kept[u]) / best : 1.0;
  }
  return sum / static_cast<double>(units_.size());
}

double mass_of_optimum(const Trace& full, int context, std::span<const std::vector<int>> kept, int k) {
  return MassOfOptimum(full, context)(kept, k);
}

std::string_view to_string(TaskProtocol p) { return p == TaskProtocol::Streaming ? "dynamic" : "prefill"; }

TaskProtocol parse_task_protocol(std::string_view name) {
  if (name == "dynamic") return TaskProtocol::Streaming;
  if (name == "prefill") return TaskProtocol::Prefill;
  throw Error("unknown protocol '" + std::string(name) + "' (known: dynamic, prefill)");
}

void TaskEvalRequest::validate() const {
  require(!budgets.empty(), "tasks: at least one budget");
  require(!optimum_scopes.empty(), "tasks: optimum_scopes needs at least one budget scope (head: per-head budgets)");
  require(protocol == TaskProtocol::Prefill || optimum_scopes == std::vector<BudgetScope>{BudgetScope::Head},
          "tasks: optimum_scopes is read by the prefill protocol only");
  require(protocol == TaskProtocol::Streaming || run.budget_scope == BudgetScope::Head,
          "tasks: budget_scope is read by the dynamic protocol (the prefill protocol's shared budgets are "
          "optimum_scopes)");
  for (double b : budgets)
    require(b > 0 && b <= 1, "tasks: budget " + share_text(b) + " is outside (0, 1] (the share of tokens kept)");
  if (protocol == TaskProtocol::Streaming) {
    require(presses.empty(), "tasks: presses run under the prefill protocol only");
    for (PolicyId id : policies)
      require(policy_traits(id).offline || (policy_traits(id).decoder && policy_traits(id).nested),
              "tasks: policy " + policy_name(id) + " cannot be driven by a decoder");
  } else {
    for (PolicyId id : policies)
      for (double b : budgets)
        if (const std::string why = policy_press_refusal(id, 1.0 - b); !why.empty()) throw Error("tasks: " + why);
  }
  if (!full_cache)
    for (PolicyId id : policies)
      require(protocol == TaskProtocol::Streaming && !policy_traits(id).offline,
              "tasks: only streaming rows without the offline optimum can run without the full cache");
  // Two rows of one name would be merged into one cell of the report.
  const std::vector<std::string> rows = task_row_names(*this);
  for (std::size_t x = 0; x < rows.size(); ++x)
    require(std::find(rows.begin() + static_cast<std::ptrdiff_t>(x) + 1, rows.end(), rows[x]) == rows.end(),
            "tasks: the row '" + rows[x] + "' is listed twice");
  for (PolicyId id : policies) {
    run.with_policy(id).validate_budget_scope(SharedBudgets::Allowed);        // a shared budget needs a score policy
    if (!policy_traits(id).offline) make_policy(run.with_policy(id).policy);  // bad parameters fail here
  }
}

namespace {

// A row's name in outcomes and cells. Under the prefill protocol a policy and a press that share a
// name ("tova", "random") keep different tokens, so both are written qualified, as everywhere
// (prefill_set_label); under a shared budget a streaming row says who shared it ("h2o@layer").
std::string policy_row(PolicyId id, const TaskEvalRequest& r) {
  if (r.protocol == TaskProtocol::Prefill) return prefill_set_label({PrefillSetKind::Policy, PressId::SnapKV, id});
  return budget_scoped_name(policy_name(id), r.run.budget_scope);
}
std::string press_row(PressId id) { return prefill_set_label({PrefillSetKind::Press, id, PolicyId::H2O}); }

}  // namespace

std::vector<std::string> task_row_names(const TaskEvalRequest& r) {
  std::vector<std::string> rows;
  if (r.protocol == TaskProtocol::Streaming) {
    for (PolicyId id : r.policies) rows.push_back(policy_row(id, r));
    if (r.topk) rows.emplace_back(kTopKRow);
    return rows;
  }
  for (PressId id : r.presses) rows.push_back(press_row(id));
  for (PolicyId id : r.policies) rows.push_back(policy_row(id, r));
  if (r.optimum)
    for (BudgetScope scope : r.optimum_scopes) rows.push_back(shared_optimum_row(scope));
  return rows;
}

long task_eval_units(std::size_t instances, const TaskEvalRequest& r) {
  size_t rows = r.policies.size();
  if (r.protocol == TaskProtocol::Prefill) rows += r.presses.size() + (r.optimum ? r.optimum_scopes.size() : 0);
  if (r.protocol == TaskProtocol::Streaming && r.topk) rows += 1;
  return static_cast<long>(instances * ((r.full_cache ? 1 : 0) + rows * r.budgets.size()));
}

namespace {

// Every instance tokenised and checked before any work: kvo::Error naming the first bad one.
std::vector<Prepared> prepare(const Llama& m, std::span<const TaskInstance> instances, const TaskEvalRequest& r) {
  r.validate();
  const LlamaConfig& c = m.config();
  std::vector<Prepared> prepared;
  for (const TaskInstance& in : instances) {
    Prepared p;
    p.inst = &in;
    p.tokens = task_tokens(m.tokenizer(), in, r.question_first, r.format);
    p.shift = p.tokens.needle_shift;
    require(!in.answers.empty(), "tasks: instance '" + in.id + "' has no expected answer");
    require(in.max_new_tokens >= 1, "tasks: instance '" + in.id + "' asks for no answer tokens");
    require(!p.tokens.context.empty(), "tasks: instance '" + in.id + "' has an empty context");
    require(p.tokens.size() + in.max_new_tokens <= c.context,
            "tasks: instance '" + in.id + "' needs " + std::to_string(p.tokens.size() + in.max_new_tokens) +
                " positions with its answer; the model has " + std::to_string(c.context));
    for (const auto& [a, b] : in.needles)
      require(a >= 0 && a < b && b + p.shift <= static_cast<int>(p.tokens.context.size()),
              "tasks: instance '" + in.id + "' has a needle at tokens [" + std::to_string(a) + ", " +
                  std::to_string(b) + ") outside its context of " +
                  std::to_string(p.tokens.context.size() - static_cast<size_t>(p.shift)) + " tokens");
    // Every budget must resolve on this instance (a recent window larger than it is refused here).
    for (double b : r.budgets) {
      const int n = r.protocol == TaskProtocol::Streaming ? p.tokens.size() : static_cast<int>(p.tokens.context.size());
      const int k = r.protocol == TaskProtocol::Streaming ? streaming_budget(b, n) : press_n_kept(n, 1.0 - b);
      try {
        r.run.budget.with_total(Amount{false, static_cast<double>(k)}).resolve(std::max(n, k), 0, 0);
      } catch (const Error& e) {
        throw Error("tasks: instance '" + in.id + "' at budget " + share_text(b) + " (" + std::to_string(k) +
                    " tokens): " + e.what());
      }
    }
    prepared.push_back(std::move(p));
  }
  return prepared;
}

// One instance: the full cache's run, then every row at every budget on its cache and trace.
void answer_instance(const Llama& m, const Prepared& p, const TaskEvalRequest& r,
                     const std::function<void(TaskOutcome)>& emit) {
  const LlamaConfig& c = m.config();
  const int C = static_cast<int>(p.tokens.context.size());
  // The full cache's run: its answer, cache and trace of the whole instance, what the references read.
  std::optional<FullRun> full;
  if (r.full_cache) {
    TaskOutcome o = outcome_of(p, std::string(kFullCacheRow), 1.0);
    full = full_run(m, p, r.protocol == TaskProtocol::Prefill ? C : 0, o);
    emit(std::move(o));
  }
  if (r.protocol == TaskProtocol::Streaming) {
    for (PolicyId id : r.policies)
      for (double b : r.budgets) {
        // Under a shared budget the row says who shared it: "h2o@layer", as the optima's rows do.
        TaskOutcome o = outcome_of(p, policy_row(id, r), b);
        streaming_row(m, p, r, id, b, full ? &*full : nullptr, o);
        emit(std::move(o));
      }
    if (r.topk)
      for (double b : r.budgets) {
        TaskOutcome o = outcome_of(p, std::string(kTopKRow), b);
        topk_row(m, p, b, o);
        emit(std::move(o));
      }
    return;
  }
  auto run_sets = [&](const std::string& name, double b, const UnitSets& kept) {
    TaskOutcome o = outcome_of(p, name, b);
    prefill_row(m, p, *full, kept, press_n_kept(C, 1.0 - b), o);
    emit(std::move(o));
  };
  for (PressId id : r.presses)
    for (double b : r.budgets) {
      PressOptions po = r.press;
      po.id = id;
      po.compression_ratio = 1.0 - b;
      UnitSets kept;
      for (int l = 0; l < c.n_layers; ++l)
        for (auto& s : run_press(press_layer_of(full->trace, l, C), po).kept) kept.push_back(std::move(s));
      run_sets(press_row(id), b, kept);
    }
  for (PolicyId id : r.policies)
    for (double b : r.budgets)
      run_sets(policy_row(id, r), b, policy_prefill_kept(full->trace, r.run, id, C, press_n_kept(C, 1.0 - b)));
  if (r.optimum)
    for (double b : r.budgets)
      for (BudgetScope scope : r.optimum_scopes)  // per-head budgets, or shared ones of the same total
        run_sets(shared_optimum_row(scope), b,
                 shared_prefill_sets(full->mass.units(), c.n_kv_heads, scope, press_n_kept(C, 1.0 - b)));
}

// One unit per instance (its rows share the full cache's run: one prefill per instance), its
// outcomes as task_outcomes_json in CBOR; largest first by the attention's cost.
class TaskPlan final : public WorkPlan<TaskEvalResult> {
 public:
  TaskPlan(const Llama& m, std::vector<Prepared> prepared, const TaskEvalRequest& r)
      : m_(m), prepared_(std::move(prepared)), r_(r) {}
  int size() const override { return static_cast<int>(prepared_.size()); }
  std::string name(int u) const override { return "instance '" + at(u).inst->id + "'"; }
  double cost(int u) const override {
    const double n = at(u).tokens.size();
    return n * (1.0 + n / 2048.0);
  }
  std::string run_bytes(int u) const override {
    std::vector<TaskOutcome> out;
    answer_instance(m_, at(u), r_, [&](TaskOutcome o) { out.push_back(std::move(o)); });
    const std::vector<std::uint8_t> cbor =
        nlohmann::json::to_cbor(task_outcomes_json(out));  // every double bit for bit
    return {cbor.begin(), cbor.end()};
  }
  TaskEvalResult assemble_bytes(const std::vector<std::string>& units) const override {
    TaskEvalResult res;
    res.protocol = r_.protocol;
    for (size_t u = 0; u < units.size(); ++u) {
      const nlohmann::json j = {{"protocol", std::string(to_string(r_.protocol))},
                                {"outcomes", nlohmann::json::from_cbor(units[u])}};
      for (TaskOutcome& o : task_result_from_json(j, name(static_cast<int>(u))).outcomes)
        res.outcomes.push_back(std::move(o));
    }
    return res;
  }

 private:
  const Prepared& at(int u) const { return prepared_[static_cast<size_t>(u)]; }
  const Llama& m_;
  std::vector<Prepared> prepared_;
  const TaskEvalRequest& r_;
};

}  // namespace

TaskEvalResult evaluate_tasks(const Llama& m, std::span<const TaskInstance> instances, const TaskEvalRequest& r) {
  TaskEvalResult res;
  res.protocol = r.protocol;
  for (const Prepared& p : prepare(m, instances, r))
    answer_instance(m, p, r, [&](TaskOutcome o) {  // one answered (instance, row, budget)
      res.outcomes.push_back(std::move(o));
      if (r.on_unit) r.on_unit();
    });
  return res;
}

std::optional<TaskEvalResult> run_tasks(const Llama& m, std::span<const TaskInstance> instances,
                                        const TaskEvalRequest& r, const WorkTeam& team) {
  std::unique_ptr<TaskPlan> plan;
  team.together([&] { plan = std::make_unique<TaskPlan>(m, prepare(m, instances, r), r); });
  return team.run(*plan, "tasks", "tasks");
}

std::pair<double, double> wilson_interval(double p, int n) {
  if (n <= 0) return {0.0, 1.0};
  const double z = 1.959963984540054, z2 = z * z, nn = static_cast<double>(n);
  const double centre = (p + z2 / (2 * nn)) / (1 + z2 / nn);
  const double half = z / (1 + z2 / nn) * std::sqrt(std::max(0.0, p * (1 - p) / nn + z2 / (4 * nn * nn)));
  return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

std::vector<TaskCell> summarize_tasks(const TaskEvalResult& res, bool by_depth) {
  using Key = std::tuple<std::string, int, double, std::string, double>;
  struct Sums {
    double score = 0, held = 0, mass = 0;
    int n_held = 0, n_mass = 0;
  };
  std::map<Key, size_t> index;
  std::vector<TaskCell> cells;
  std::vector<Sums> sums;
  std::map<std::pair<std::string, int>, double> full_best;  // the full cache's best score per (task, length)
  for (const TaskOutcome& o : res.outcomes) {
    const double depth = by_depth ? o.depth : -1.0;
    const Key key{o.task, o.length, depth, o.row, o.budget};
    auto [it, fresh] = index.emplace(key, cells.size());
    if (fresh) {
      TaskCell cell;
      cell.task = o.task;
      cell.row = o.row;
      cell.length = o.length;
      cell.depth = depth;
      cell.budget = o.budget;
      cells.push_back(cell);
      sums.emplace_back();
    }
    cells[it->second].count += 1;
    Sums& s = sums[it->second];
    s.score += o.score;
    if (!std::isnan(o.needles_held)) s.held += o.needles_held, s.n_held += 1;
    if (!std::isnan(o.mass_of_optimum)) s.mass += o.mass_of_optimum, s.n_mass += 1;
    if (o.row == kFullCacheRow) {
      double& best = full_best[{o.task, o.length}];
      best = std::max(best, o.score);
    }
  }
  for (size_t x = 0; x < cells.size(); ++x) {
    TaskCell& cell = cells[x];
    const Sums& s = sums[x];
    cell.accuracy = s.score / cell.count;
    std::tie(cell.low, cell.high) = wilson_interval(cell.accuracy, cell.count);
    if (s.n_held > 0) cell.needles_held = s.held / s.n_held;
    if (s.n_mass > 0) cell.mass_of_optimum = s.mass / s.n_mass;
    const auto f = full_best.find({cell.task, cell.length});
    cell.model_fails = f != full_best.end() && f->second == 0.0;
  }
  return cells;
}

}  // namespace kvo::studies

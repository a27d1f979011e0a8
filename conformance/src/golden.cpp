#include "kvo/conformance/golden.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <utility>

#include "kvo/core/budget.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/file_sha256.hpp"
#include "kvo/core/replay.hpp"
#include "kvo/core/text_list.hpp"

namespace kvo::conformance {
namespace {

using enum PolicyId;

struct CoveredPolicy {
  PolicyId id;
  const char* tie_rule;
};

// The policies whose decisions the kit fixes, and how each breaks a tie of its score.
constexpr CoveredPolicy kCovered[] = {
    {H2O, "equal accumulated scores: the oldest token leaves first"},
    {H2ORealdrop, "equal accumulated scores: the oldest token leaves first"},
    {H2OMask, "equal accumulated scores: the newer token keeps its heavy slot (the masking code's top-k)"},
    {H2OPaper, "equal marginal gains: the oldest token leaves first"},
    {Tova, "equal attention of the current query: the oldest token leaves first"},
    {Scissorhands, "equal unimportance marks: the oldest token leaves first"},
    {Streaming, "no scores: the oldest token after the sinks leaves"},
    {Window, "no scores: the oldest token leaves"},
};

const CoveredPolicy* covered(PolicyId id) {
  for (const CoveredPolicy& c : kCovered)
    if (c.id == id) return &c;
  return nullptr;
}

std::string covered_names() {
  std::vector<PolicyId> ids;
  for (const CoveredPolicy& c : kCovered) ids.push_back(c.id);
  return join_policy_names(ids);
}

// Of the attention and the shape the units come from (layers, heads, KV heads, n, prompt).
std::string trace_digest(const Trace& tr) {
  std::string bytes;
  for (int v : {tr.n_layers, tr.n_heads, tr.n_kv_heads, tr.n_tokens, tr.prompt_len}) bytes += std::to_string(v) + ",";
  for (const std::vector<float>& a : tr.attn)
    bytes.append(reinterpret_cast<const char*>(a.data()), a.size() * sizeof(float));
  return bytes_sha256(bytes);
}

nlohmann::json score_json(const std::optional<double>& s) { return s ? nlohmann::json(*s) : nlohmann::json(); }

template <class T>
T field(const nlohmann::json& j, const char* name, const std::string& where) {
  require(j.is_object() && j.contains(name), "golden file: " + where + " has no field '" + name + "'");
  try {
    return j.at(name).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error("golden file: " + where + "'s field '" + name + "' has the wrong type");
  }
}

}  // namespace

std::string policy_tie_rule(PolicyId id) {
  const CoveredPolicy* c = covered(id);
  require(c != nullptr, "conformance: the kit has no golden semantics for policy " + policy_name(id) +
                            " (covered: " + covered_names() + ")");
  return c->tie_rule;
}

std::string policy_semantics(PolicyId id) {
  policy_tie_rule(id);
  return "kvoracle's " + policy_name(id) + ": " + std::string(policy_entry(id).summary);
}

void GoldenRequest::validate() const {
  require(!policies.empty(), "policies: name at least one policy");
  for (PolicyId id : policies) policy_tie_rule(id);
  require(!budgets.empty(), "budgets: name at least one budget");
  for (const std::string& b : budgets) Budget::parse(b, recent);
}

const Schema<GoldenRequest>& GoldenRequest::schema() {
  using R = GoldenRequest;
  static const Schema<R> schema(
      "golden request",
      {member(&R::policies, {.name = "policies", .help = "policies whose decisions the file fixes (comma-separated)"}),
       member(&R::budgets, {.name = "budgets", .help = "budgets per KV head: tokens or shares of n (comma-separated)"}),
       member(&R::recent, {.name = "recent", .help = "recent window: tokens or a share of the budget (default: half)"}),
       member(&R::threads, {.name = "threads", .help = "threads (0: all cores)", .cli = false})});
  return schema;
}

std::string GoldenCase::key() const { return policy + "@" + std::to_string(budget); }

const GoldenCase& GoldenFile::find(const std::string& policy, int budget) const {
  std::string known;
  for (const GoldenCase& c : cases) {
    if (c.policy == policy && c.budget == budget) return c;
    known += (known.empty() ? "" : ", ") + c.key();
  }
  throw Error("golden file: no case " + policy + "@" + std::to_string(budget) + " (it holds " + known + ")");
}

GoldenFile make_golden(const Trace& tr, const GoldenRequest& req, const std::string& name) {
  req.validate();
  tr.validate();
  for (int l = 0; l < tr.n_layers; ++l)
    require(tr.has_attention(l),
            "conformance: the trace needs dense attention in every layer (layer " + std::to_string(l) + " has none)");
  GoldenFile g;
  g.trace = name;
  g.trace_sha256 = trace_digest(tr);
  g.n = tr.n_tokens;
  g.layers = tr.n_layers;
  g.heads = tr.n_heads;
  g.kv_heads = tr.n_kv_heads;
  g.prompt_len = tr.prompt_len;
  for (PolicyId id : req.policies) {
    for (const std::string& b : req.budgets) {
      ReplayOptions o;
      o.run.policy.id = id;
      o.run.budget = Budget::parse(b, req.recent);
      o.run.gqa = GqaMode::KvMean;
      o.run.prompt_len = tr.prompt_len;
      o.threads = req.threads;
      std::mutex mu;
      std::map<std::pair<int, int>, std::map<int, std::vector<double>>> scores;
      o.on_step = [&](int layer, int head, int step, const EvictionPolicy& p) {
        std::vector<double> s = p.eviction_scores();
        const std::lock_guard lock(mu);
        scores[{layer, head}][step] = std::move(s);
      };
      const ReplayResult r = replay(tr, o);
      GoldenCase c;
      c.policy = policy_name(id);
      c.tie_rule = policy_tie_rule(id);
      c.semantics = policy_semantics(id);
      const int group = tr.group_size();
      for (const HeadReplay& h : r.heads) {
        if (h.head % group != 0) continue;  // the group's other query heads hold the same cache
        c.budget = h.budget.total;
        c.heavy = h.budget.heavy;
        c.recent = h.budget.recent;
        GoldenUnit u{h.layer, h.head / group, {}};
        const auto& by_step = scores[{h.layer, u.head}];
        for (size_t i = 0; i < h.steps.size(); ++i) {
          const StepRecord& s = h.steps[i];
          GoldenStep gs{s.kept, s.evicted, {}};
          std::vector<int> candidates = s.kept;
          candidates.insert(candidates.end(), s.evicted.begin(), s.evicted.end());
          std::sort(candidates.begin(), candidates.end());
          const auto it = by_step.find(static_cast<int>(i));
          for (int t : candidates) {
            std::optional<double> v;
            if (it != by_step.end() && static_cast<size_t>(t) < it->second.size() &&
                std::isfinite(it->second[static_cast<size_t>(t)]))
              v = it->second[static_cast<size_t>(t)];
            gs.scores.push_back(v);
          }
          u.steps.push_back(std::move(gs));
        }
        c.units.push_back(std::move(u));
      }
      for (const GoldenCase& other : g.cases)
        require(other.key() != c.key(), "budgets: two budgets resolve to " + std::to_string(c.budget) + " tokens");
      g.cases.push_back(std::move(c));
    }
  }
  return g;
}

nlohmann::json GoldenFile::to_json() const {
  nlohmann::json cases_json = nlohmann::json::array();
  for (const GoldenCase& c : cases) {
    nlohmann::json units_json = nlohmann::json::array();
    for (const GoldenUnit& u : c.units) {
      nlohmann::json steps_json = nlohmann::json::array();
      for (const GoldenStep& s : u.steps) {
        nlohmann::json sc = nlohmann::json::array();
        for (const auto& v : s.scores) sc.push_back(score_json(v));
        steps_json.push_back({{"kept", s.kept}, {"evicted", s.evicted}, {"scores", sc}});
      }
      units_json.push_back({{"layer", u.layer}, {"head", u.head}, {"steps", steps_json}});
    }
    cases_json.push_back({{"policy", c.policy},
                          {"budget", c.budget},
                          {"heavy", c.heavy},
                          {"recent", c.recent},
                          {"tie_rule", c.tie_rule},
                          {"semantics", c.semantics},
                          {"units", units_json}});
  }
  return {{"kit", "kvoracle conformance"},
          {"version", version},
          {"trace",
           {{"name", trace},
            {"sha256", trace_sha256},
            {"n", n},
            {"layers", layers},
            {"heads", heads},
            {"kv_heads", kv_heads},
            {"prompt_len", prompt_len}}},
          {"units", "(layer, KV head); a KV head's attention is the mean over its query heads"},
          {"cases", cases_json}};
}

GoldenFile GoldenFile::from_json(const nlohmann::json& j) {
  GoldenFile g;
  g.version = field<int>(j, "version", "the file");
  require(g.version == kGoldenVersion, "golden file: version " + std::to_string(g.version) +
                                           " (this kit reads version " + std::to_string(kGoldenVersion) + ")");
  const nlohmann::json t = field<nlohmann::json>(j, "trace", "the file");
  g.trace = field<std::string>(t, "name", "trace");
  g.trace_sha256 = field<std::string>(t, "sha256", "trace");
  g.n = field<int>(t, "n", "trace");
  g.layers = field<int>(t, "layers", "trace");
  g.heads = field<int>(t, "heads", "trace");
  g.kv_heads = field<int>(t, "kv_heads", "trace");
  g.prompt_len = field<int>(t, "prompt_len", "trace");
  for (const nlohmann::json& cj : field<nlohmann::json>(j, "cases", "the file")) {
    GoldenCase c;
    c.policy = field<std::string>(cj, "policy", "a case");
    const std::string where = "case " + c.policy;
    c.budget = field<int>(cj, "budget", where);
    c.heavy = field<int>(cj, "heavy", where);
    c.recent = field<int>(cj, "recent", where);
    c.tie_rule = field<std::string>(cj, "tie_rule", where);
    c.semantics = field<std::string>(cj, "semantics", where);
    for (const nlohmann::json& uj : field<nlohmann::json>(cj, "units", where)) {
      GoldenUnit u{field<int>(uj, "layer", where), field<int>(uj, "head", where), {}};
      for (const nlohmann::json& sj : field<nlohmann::json>(uj, "steps", where)) {
        GoldenStep s{field<std::vector<int>>(sj, "kept", where), field<std::vector<int>>(sj, "evicted", where), {}};
        for (const nlohmann::json& v : field<nlohmann::json>(sj, "scores", where))
          s.scores.push_back(v.is_null() ? std::nullopt : std::optional<double>(v.get<double>()));
        u.steps.push_back(std::move(s));
      }
      require(static_cast<int>(u.steps.size()) == g.n, "golden file: " + where + " layer " + std::to_string(u.layer) +
                                                           " head " + std::to_string(u.head) + " has " +
                                                           std::to_string(u.steps.size()) + " steps, not n");
      c.units.push_back(std::move(u));
    }
    g.cases.push_back(std::move(c));
  }
  return g;
}

}  // namespace kvo::conformance

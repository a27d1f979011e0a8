#include "kvo/conformance/golden.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <utility>

#include "kvo/core/adakv.hpp"
#include "kvo/core/budget.hpp"
#include "kvo/core/engine_contracts.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/file_sha256.hpp"
#include "kvo/core/page_shape.hpp"
#include "kvo/core/policy_press.hpp"
#include "kvo/core/press_parameters.hpp"
#include "kvo/core/replay.hpp"
#include "kvo/core/text_file.hpp"
#include "kvo/core/text_list.hpp"

namespace kvo::conformance {
namespace {

using enum PolicyId;

// The policies whose decisions the kit fixes (their tie rules are the policy table's).
constexpr PolicyId kCovered[] = {H2O, H2ORealdrop, H2OMask, H2OPaper, Tova, Scissorhands, Streaming, Window};

constexpr const char* kContractTieRule =
    "equal summed scores of a kept set: the older token (or block) leaves first, then the earlier set";

bool covered(PolicyId id) { return std::ranges::find(kCovered, id) != std::end(kCovered); }

// A requested press case: the press, and whether AdaKVPress wraps it.
struct PressCase {
  PressId id = PressId::SnapKV;
  bool adakv = false;
  std::string label;  // the case's name: "snapkv", "press:tova", "adakv(snapkv)"
};

constexpr std::string_view kAdaKV = "adakv(";

PressCase parse_press_case(std::string_view name) {
  PressCase c;
  c.adakv = name.starts_with(kAdaKV) && name.ends_with(")");
  const std::string_view inner = c.adakv ? name.substr(kAdaKV.size(), name.size() - kAdaKV.size() - 1) : name;
  c.id = parse_press(inner);
  require(c.id != PressId::Random, "presses: random's decisions are a seeded draw, not a rule the kit can fix");
  // kvpress's AdaKVPress asserts a ScorerPress and refuses ObservedAttentionPress.
  require(!c.adakv || c.id != PressId::ObservedAttention,
          "presses: kvpress's AdaKVPress does not wrap observed_attention");
  const std::string bare = prefill_set_label({.kind = PrefillSetKind::Press, .press = c.id});
  c.label = c.adakv ? std::string(kAdaKV) + press_name(c.id) + ")" : bare;
  return c;
}

std::string press_tie_rule(const PressCase& c) {
  if (c.adakv)
    return "within a KV head the earlier of equal scores wins the safeguard; across heads the lower KV head, then "
           "the earlier position, wins a shared slot (kvpress leaves both to torch.topk's order)";
  return "the earlier of equal scores is kept (kvpress leaves ties to torch.topk's order)";
}

std::string press_semantics(const PressCase& c, double alpha) {
  const PressEntry& e = press_entry(c.id);
  std::string s = "kvpress 0.5.5's " + std::string(e.kvpress_class) + ": " + std::string(e.score);
  if (c.adakv)
    s = "kvpress 0.5.5's AdaKVPress(" + std::string(e.kvpress_class) + ", alpha_safeguard=" + join_numbers({alpha}) +
        "): a layer's KV heads share its budget above a safeguard, on " + std::string(e.kvpress_class) + "'s scores (" +
        std::string(e.score) + ")";
  return s + "; cut once at the prompt's last token, every later token kept";
}

// The case of one press at one ratio: every step keeps every token but the prompt's last, where
// the press cuts the prompt to its kept sets.
GoldenCase press_golden(const Trace& tr, const GoldenRequest& req, const PressCase& pc, double ratio) {
  const int P = tr.prompt_len;
  PressOptions o = req.press;
  o.id = pc.id;
  o.compression_ratio = ratio;
  GoldenCase c;
  c.policy = pc.label;
  c.budget = press_n_kept(P, ratio);
  c.heavy = c.budget;
  c.tie_rule = press_tie_rule(pc);
  c.semantics = press_semantics(pc, req.alpha_safeguard);
  c.compression_ratio = ratio;
  // The parameters the press reads (an object, empty for a press that reads none).
  const nlohmann::json all = press_parameters_schema().to_json(o);
  c.press = nlohmann::json::object();
  if (const std::string_view reads = press_entry(pc.id).reads; !reads.empty())
    for (const std::string& p : split_list(reads, "press reads")) c.press[p] = all.at(p);
  if (pc.adakv) c.press["alpha_safeguard"] = req.alpha_safeguard;
  for (int l = 0; l < tr.n_layers; ++l) {
    const PressResult pr = run_press(press_layer_of(tr, l, P), o);
    const std::vector<std::vector<int>> kept =
        pc.adakv ? adakv_kept(pr.scores, c.budget, req.alpha_safeguard) : pr.kept;
    for (int h = 0; h < tr.n_kv_heads; ++h) {
      GoldenUnit u{l, h, {}};
      std::vector<int> held;
      for (int i = 0; i < tr.n_tokens; ++i) {
        held.push_back(i);
        GoldenStep gs;
        if (i == P - 1) {
          const std::vector<int>& k = kept[static_cast<size_t>(h)];
          std::set_difference(held.begin(), held.end(), k.begin(), k.end(), std::back_inserter(gs.evicted));
          held = k;
          for (int j = 0; j < P; ++j) gs.scores.emplace_back(pr.scores[static_cast<size_t>(h)][static_cast<size_t>(j)]);
        } else {
          gs.scores.assign(held.size(), std::nullopt);
        }
        gs.kept = held;
        u.steps.push_back(std::move(gs));
      }
      c.units.push_back(std::move(u));
    }
  }
  return c;
}

std::string covered_names() { return join_policy_names(kCovered); }

// Of the attention (dense, or q, k, v and the logit scale) and the shape the units come from
// (layers, heads, KV heads, n, prompt). A dense-only trace's digest is that of its attention alone.
std::string trace_digest(const Trace& tr) {
  std::string bytes;
  for (int v : {tr.n_layers, tr.n_heads, tr.n_kv_heads, tr.n_tokens, tr.prompt_len}) bytes += std::to_string(v) + ",";
  const auto append = [&](const std::vector<std::vector<float>>& tensors) {
    for (const std::vector<float>& a : tensors)
      bytes.append(reinterpret_cast<const char*>(a.data()), a.size() * sizeof(float));
  };
  append(tr.attn);
  if (tr.head_dim > 0) {
    bytes += "qkv," + std::to_string(tr.head_dim) + "," + std::to_string(tr.attn_scale) + ",";
    append(tr.q);
    append(tr.k);
    append(tr.v);
  }
  return bytes_sha256(bytes);
}

nlohmann::json score_json(const std::optional<double>& s) { return s ? nlohmann::json(*s) : nlohmann::json(); }

// Whether a contract never evicts token j after step i: a sink, in the window when the eviction
// takes effect, or in one of the newest R blocks.
bool contract_protects(const EvictionContract& c, int i, int j) {
  if (j < c.sinks) return true;
  if (c.page_size == 1) return j > i + c.delay - c.recent;
  if (i < c.sinks) return true;
  const PageShape shape = page_shape(c.budget - c.sinks, c.recent, c.page_size);
  return (j - c.sinks) / c.page_size > (i - c.sinks) / c.page_size - shape.recent;
}

// Each policy's scores, by (layer, KV head), step and token, as on_step saw them.
using ScoreLog = std::map<std::pair<int, int>, std::map<int, std::vector<double>>>;

// The score a unit's candidate t had after step i (nullopt: none, or not finite).
std::optional<double> logged(const ScoreLog& log, std::pair<int, int> unit, int i, int t) {
  const auto u = log.find(unit);
  if (u == log.end()) return std::nullopt;
  const auto s = u->second.find(i);
  if (s == u->second.end() || static_cast<size_t>(t) >= s->second.size()) return std::nullopt;
  const double v = s->second[static_cast<size_t>(t)];
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

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
  require(covered(id), "conformance: the kit has no golden semantics for policy " + policy_name(id) +
                           " (covered: " + covered_names() + ")");
  return std::string(policy_entry(id).tie_rule);
}

std::string policy_semantics(PolicyId id) {
  policy_tie_rule(id);
  return "kvoracle's " + policy_name(id) + ": " + std::string(policy_entry(id).summary);
}

void GoldenRequest::validate() const {
  for (PolicyId id : policies) policy_tie_rule(id);
  require(contract.empty() || recent.empty(), "recent: a contract names its own window (its recent field)");
  for (const std::string& b : budgets) Budget::parse(b, recent);
  for (const std::string& p : presses) parse_press_case(p);
  require(presses.empty() || contract.empty(), "presses: a press cuts the prompt per KV head, not under a contract");
  require(presses.empty() || !compression_ratio.empty(), "compression_ratio: name at least one ratio");
  for (double r : compression_ratio)
    require(r >= 0.0 && r < 1.0, "compression_ratio: " + join_numbers({r}) + " is outside [0, 1)");
  adakv_safeguard(1, alpha_safeguard);
}

const Schema<GoldenRequest>& GoldenRequest::schema() {
  using R = GoldenRequest;
  static const Schema<R> schema(
      "golden request",
      fields<R>(
          {{member(&R::policies, {.name = "policies",
                                  .help = "policies whose decisions the file fixes (comma-separated; default, with no "
                                          "press: h2o,tova,scissorhands,streaming)"}),
            member(&R::budgets,
                   {.name = "budgets",
                    .help = "budgets per KV head: tokens or shares of n (comma-separated; default 8,16, or the "
                            "contract's own)"}),
            member(&R::recent,
                   {.name = "recent", .help = "recent window: tokens or a share of the budget (default: half)"}),
            member(&R::contract, {.name = "contract",
                                  .help = "an engine's contract the policies obey: a JSON document or its file "
                                          "(docs/engines.md); budgets replace its k"}),
            member(&R::presses, {.name = "presses",
                                 .help = "kvpress presses cutting the prompt once (comma-separated registry names; "
                                         "adakv(NAME): under AdaKVPress)"}),
            member(&R::compression_ratio,
                   {.name = "compression_ratio", .help = "the presses' compression ratios (comma-separated)"}),
            member(&R::alpha_safeguard, {.name = "alpha_safeguard", .help = "AdaKVPress's alpha_safeguard"}),
            member(&R::threads, {.name = "threads", .help = "threads (0: all cores)", .cli = false})},
           // Random is refused, so its seed is not lifted.
           nested("press", &R::press, press_parameters_schema(), "Press parameters", "golden request: press",
                  [](const Field<PressOptions>& f) { return f.name() != "seed"; })}));
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
    require(tr.has_attention(l) || tr.has_qk(l),
            "conformance: the trace needs dense attention or q and k in every layer (layer " + std::to_string(l) +
                " has neither)");
  require(req.presses.empty() || tr.prompt_len >= 2,
          "presses: the trace has no prompt of at least 2 tokens for a press to cut (its prompt_len is " +
              std::to_string(tr.prompt_len) + ")");
  GoldenFile g;
  g.trace = name;
  g.trace_sha256 = trace_digest(tr);
  g.n = tr.n_tokens;
  g.layers = tr.n_layers;
  g.heads = tr.n_heads;
  g.kv_heads = tr.n_kv_heads;
  g.prompt_len = tr.prompt_len;
  if (!req.contract.empty()) g.contract = json_text_or_file(req.contract, "contract");
  const std::vector<std::string> budgets = !req.budgets.empty()   ? req.budgets
                                           : g.contract.is_null() ? std::vector<std::string>{"8", "16"}
                                                                  : std::vector<std::string>{""};
  const std::vector<ContractUnit> all_units = model_units(tr.n_layers, tr.n_kv_heads);  // in replay's order
  const int group = tr.group_size();
  const std::vector<PolicyId> policies =
      req.policies.empty() && req.presses.empty()
          ? std::vector<PolicyId>(std::begin(kDefaultGoldenPolicies), std::end(kDefaultGoldenPolicies))
          : req.policies;
  for (PolicyId id : policies) {
    for (const std::string& b : budgets) {
      ReplayOptions o;
      o.run.policy.id = id;
      o.run.gqa = GqaMode::KvMean;
      o.run.prompt_len = tr.prompt_len;
      o.threads = req.threads;
      if (g.contract.is_null())
        o.run.budget = Budget::parse(b, req.recent);
      else
        o.contract = read_engine_contract(g.contract, tr.n_tokens, tr.prompt_len,
                                          b.empty() ? 0 : Amount::parse(b).resolve(tr.n_tokens))
                         .contract;
      std::mutex mu;
      ScoreLog scores;
      o.on_step = [&](int layer, int head, int step, const EvictionPolicy& p) {
        std::vector<double> s = p.eviction_scores();
        const std::lock_guard lock(mu);
        scores[{layer, head}][step] = std::move(s);
      };
      const ReplayResult r = replay(tr, o);
      GoldenCase c;
      c.policy = policy_name(id);
      // Under a contract its group evicts, by the policy's scores summed over each kept set.
      c.tie_rule = o.contract ? kContractTieRule : policy_tie_rule(id);
      c.semantics = policy_semantics(id);
      c.contract = o.contract;
      // Under a contract, the units whose scores add up to their kept set's.
      std::map<std::pair<int, int>, std::vector<std::pair<int, int>>> set_of;
      if (c.contract)
        for (const std::vector<size_t>& set : c.contract->sets_of(all_units)) {
          std::vector<std::pair<int, int>> members;
          for (size_t u : set) members.emplace_back(all_units[u].layer, all_units[u].kv_head);
          for (const auto& m : members) set_of[m] = members;
        }
      for (const HeadReplay& h : r.heads) {
        if (h.head % group != 0) continue;  // the group's other query heads hold the same cache
        c.budget = c.contract ? c.contract->budget : h.budget.total;
        c.heavy = h.budget.heavy;
        c.recent = c.contract ? c.contract->recent : h.budget.recent;
        GoldenUnit u{h.layer, h.head / group, {}};
        const std::pair<int, int> key{u.layer, u.head};
        for (size_t i = 0; i < h.steps.size(); ++i) {
          const StepRecord& s = h.steps[i];
          const int step = static_cast<int>(i);
          GoldenStep gs{s.kept, s.evicted, {}};
          std::vector<int> candidates = s.kept;
          candidates.insert(candidates.end(), s.evicted.begin(), s.evicted.end());
          std::sort(candidates.begin(), candidates.end());
          for (int t : candidates) {
            std::optional<double> v;
            if (!c.contract) {
              v = logged(scores, key, step, t);
            } else if (!contract_protects(*c.contract, step, t)) {
              v = 0.0;
              for (const auto& m : set_of.at(key)) {
                const std::optional<double> part = logged(scores, m, step, t);
                v = part ? std::optional<double>(*v + *part) : std::nullopt;
                if (!v) break;
              }
            }
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
  for (const std::string& p : req.presses) {
    const PressCase pc = parse_press_case(p);
    for (double r : req.compression_ratio) {
      GoldenCase c = press_golden(tr, req, pc, r);
      for (const GoldenCase& other : g.cases)
        require(other.key() != c.key(),
                "presses: two cases named " + c.key() + " (ratios resolving to the same n_kept)");
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
                          {"contract", c.contract ? eviction_contract_schema().to_json(*c.contract) : nlohmann::json()},
                          {"units", units_json}});
    // A press's case also says its ratio and parameters (a policy's case has neither field).
    if (c.compression_ratio) {
      cases_json.back()["compression_ratio"] = *c.compression_ratio;
      cases_json.back()["press"] = c.press;
    }
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
          {"contract", contract},
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
  g.contract = j.value("contract", nlohmann::json());
  for (const nlohmann::json& cj : field<nlohmann::json>(j, "cases", "the file")) {
    GoldenCase c;
    c.policy = field<std::string>(cj, "policy", "a case");
    const std::string where = "case " + c.policy;
    c.budget = field<int>(cj, "budget", where);
    c.heavy = field<int>(cj, "heavy", where);
    c.recent = field<int>(cj, "recent", where);
    c.tie_rule = field<std::string>(cj, "tie_rule", where);
    c.semantics = field<std::string>(cj, "semantics", where);
    if (const nlohmann::json k = cj.value("contract", nlohmann::json()); !k.is_null())
      c.contract = eviction_contract_schema().from_json(k, EvictionContract{}, "golden file: " + where + "'s contract");
    if (const nlohmann::json r = cj.value("compression_ratio", nlohmann::json()); !r.is_null()) {
      require(r.is_number(), "golden file: " + where + "'s field 'compression_ratio' has the wrong type");
      c.compression_ratio = r.get<double>();
    }
    c.press = cj.value("press", nlohmann::json());
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

GoldenFile read_golden(const std::string& path) { return GoldenFile::from_json(read_json_file(path, "golden file")); }

}  // namespace kvo::conformance

#include "kvo/conformance/check.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <tuple>

#include "kvo/core/error.hpp"
#include "kvo/core/text_file.hpp"

namespace kvo::conformance {
namespace {

std::string list(const std::vector<int>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "}";
}

std::vector<int> minus(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

std::vector<int> sorted(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// A golden step's scores by token: its candidates (kept and evicted, ascending) and their scores.
class StepScores {
 public:
  explicit StepScores(const GoldenStep& s) : s_(s), candidates_(s.kept) {
    candidates_.insert(candidates_.end(), s.evicted.begin(), s.evicted.end());
    std::sort(candidates_.begin(), candidates_.end());
  }
  // Token t's score (nullopt: protected, unscored, or not a candidate).
  std::optional<double> of(int t) const {
    const auto it = std::lower_bound(candidates_.begin(), candidates_.end(), t);
    if (it == candidates_.end() || *it != t) return std::nullopt;
    const size_t p = static_cast<size_t>(it - candidates_.begin());
    return p < s_.scores.size() ? s_.scores[p] : std::nullopt;
  }
  std::string text(const std::vector<int>& tokens) const {
    std::ostringstream out;
    out.precision(17);
    for (size_t i = 0; i < tokens.size(); ++i) {
      const std::optional<double> v = of(tokens[i]);
      out << (i ? ", " : "") << tokens[i] << ": ";
      if (v)
        out << *v;
      else
        out << "protected or unscored";
    }
    return out.str();
  }

 private:
  const GoldenStep& s_;
  std::vector<int> candidates_;
};

// The scores the choice was made on, ascending: each token's, or under whole blocks of b tokens
// past the sinks each block's sum (nullopt: a protected token).
std::optional<std::vector<double>> choice_scores(const StepScores& s, const std::vector<int>& tokens, int b,
                                                 int sinks) {
  std::map<int, double> blocks;
  std::vector<double> out;
  for (int t : tokens) {
    const auto v = s.of(t);
    if (!v) return std::nullopt;
    if (b > 1)
      blocks[(t - sinks) / b] += *v;
    else
      out.push_back(*v);
  }
  for (const auto& [block, sum] : blocks) out.push_back(sum);
  std::sort(out.begin(), out.end());
  return out;
}

// What kind of departure the golden scores make of it: the tokens only the golden evicted (e) and
// those only the implementation evicted (g).
DepartureKind classify(const StepScores& s, const std::vector<int>& e, const std::vector<int>& g, int b, int sinks,
                       double tol) {
  if (e.size() != g.size() || e.empty()) return DepartureKind::Differs;
  const auto se = choice_scores(s, e, b, sinks), sg = choice_scores(s, g, b, sinks);
  if (!se || !sg || se->size() != sg->size()) return DepartureKind::Differs;
  if (*se == *sg) return DepartureKind::Tie;
  for (size_t i = 0; i < se->size(); ++i) {
    const double x = (*se)[i], y = (*sg)[i];
    if (std::abs(x - y) > tol * std::max({std::abs(x), std::abs(y), 1e-300})) return DepartureKind::Differs;
  }
  return DepartureKind::NearTie;
}

// Whether a case's kept sets tie the layers (a set spans them) or a layer's KV heads.
bool ties_layers(const GoldenCase& c) {
  return c.contract && (c.contract->kept_sets == KeptSets::KvHead || c.contract->kept_sets == KeptSets::Model);
}
bool ties_heads(const GoldenCase& c) {
  return c.contract && (c.contract->kept_sets == KeptSets::Layer || c.contract->kept_sets == KeptSets::Model);
}

}  // namespace

std::string to_string(DepartureKind k) {
  switch (k) {
    case DepartureKind::Tie:
      return "tie";
    case DepartureKind::NearTie:
      return "near tie";
    case DepartureKind::Differs:
      return "differs";
  }
  return "differs";
}

std::vector<Decision> parse_decisions(const std::string& jsonl) {
  std::vector<Decision> out;
  std::istringstream in(jsonl);
  std::string text;
  int line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = "decisions line " + std::to_string(line);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error&) {
      throw Error(where + ": not a JSON object");
    }
    require(j.is_object(), where + ": not a JSON object");
    Decision d;
    try {
      for (const char* f : {"policy", "budget", "step"}) require(j.contains(f), where + ": no field '" + f + "'");
      d.policy = j.at("policy").get<std::string>();
      d.budget = j.at("budget").get<int>();
      d.layer = j.contains("layer") ? j.at("layer").get<int>() : kEveryUnit;
      d.head = j.contains("head") ? j.at("head").get<int>() : kEveryUnit;
      d.step = j.at("step").get<int>();
      require(j.contains("evicted") != j.contains("kept"), where + ": give exactly one of 'evicted' and 'kept'");
      d.has_kept = j.contains("kept");
      (d.has_kept ? d.kept : d.evicted) = j.at(d.has_kept ? "kept" : "evicted").get<std::vector<int>>();
    } catch (const nlohmann::json::exception&) {
      throw Error(where +
                  ": a field has the wrong type (policy: text; budget, layer, head, step: integers; "
                  "evicted or kept: a list of integers)");
    }
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<Decision> read_decisions(const std::string& path) {
  return parse_decisions(read_text_file(path, "decisions"));
}

ConformanceResult check_conformance(const GoldenFile& golden, const std::vector<Decision>& decisions,
                                    const CheckOptions& options, const std::string& name) {
  require(options.tie_tolerance >= 0.0, "tie tolerance must be at least 0");
  using Key = std::tuple<int, int, int>;  // layer, head, step
  std::map<std::string, std::map<Key, const Decision*>> by_case;
  for (const Decision& d : decisions) {
    const GoldenCase& c = golden.find(d.policy, d.budget);
    const std::string at = "decision of " + c.key() + " at layer " +
                           (d.layer == kEveryUnit ? std::string("(every)") : std::to_string(d.layer)) + " head " +
                           (d.head == kEveryUnit ? std::string("(every)") : std::to_string(d.head)) + " step " +
                           std::to_string(d.step);
    require(d.layer != kEveryUnit || ties_layers(c),
            at + ": name its layer (the case's kept sets do not span the layers)");
    require(d.head != kEveryUnit || ties_heads(c),
            at + ": name its KV head (the case's kept sets do not span a layer's KV heads)");
    require((d.layer == kEveryUnit || (d.layer >= 0 && d.layer < golden.layers)) &&
                (d.head == kEveryUnit || (d.head >= 0 && d.head < golden.kv_heads)) && d.step >= 0 && d.step < golden.n,
            at + ": the golden file has " + std::to_string(golden.layers) + " layers, " +
                std::to_string(golden.kv_heads) + " KV heads and " + std::to_string(golden.n) + " steps");
    for (int l = 0; l < golden.layers; ++l)
      for (int h = 0; h < golden.kv_heads; ++h) {
        if ((d.layer != kEveryUnit && d.layer != l) || (d.head != kEveryUnit && d.head != h)) continue;
        const bool fresh = by_case[c.key()].emplace(Key{l, h, d.step}, &d).second;
        require(fresh, at + ": layer " + std::to_string(l) + " head " + std::to_string(h) + " has two decisions");
      }
  }
  ConformanceResult res;
  res.golden = name;
  for (const GoldenCase& c : golden.cases) {
    const auto found = by_case.find(c.key());
    if (found == by_case.end()) continue;
    CaseVerdict v;
    v.key = c.key();
    v.tie_rule = c.tie_rule;
    for (const GoldenUnit& u : c.units) {
      ++v.units;
      std::vector<int> prev;
      for (int i = 0; i < static_cast<int>(u.steps.size()); ++i) {
        const GoldenStep& s = u.steps[static_cast<size_t>(i)];
        std::vector<int> candidates = prev;
        candidates.push_back(i);
        const auto it = found->second.find(Key{u.layer, u.head, i});
        const Decision* d = it == found->second.end() ? nullptr : it->second;
        std::vector<int> got;
        bool same = false;
        if (d != nullptr && d->has_kept) {
          const std::vector<int> kept = sorted(d->kept);
          same = kept == s.kept;
          got = minus(candidates, kept);
        } else {
          got = d != nullptr ? sorted(d->evicted) : std::vector<int>{};
          same = got == s.evicted;
        }
        ++v.decisions;
        if (!same) {
          Departure dep{i, u.layer, u.head, s.evicted, got, DepartureKind::Differs, {}};
          const std::vector<int> e = minus(s.evicted, got), g = minus(got, s.evicted);
          const StepScores scores(s);
          const int block = c.contract ? c.contract->page_size : 1, sinks = c.contract ? c.contract->sinks : 0;
          dep.kind = classify(scores, e, g, block, sinks, options.tie_tolerance);
          if (d != nullptr && d->has_kept && s.kept.size() != sorted(d->kept).size())
            dep.why = "kept " + std::to_string(sorted(d->kept).size()) + " tokens where the golden keeps " +
                      std::to_string(s.kept.size());
          else if (e.size() != g.size())
            dep.why = "evicted " + std::to_string(got.size()) + " tokens where the golden evicts " +
                      std::to_string(s.evicted.size());
          else
            dep.why =
                "golden scores: only the golden evicted " + scores.text(e) + "; only yours evicted " + scores.text(g);
          const bool earlier = v.conforms || std::tie(dep.step, dep.layer, dep.head) <
                                                 std::tie(v.first.step, v.first.layer, v.first.head);
          if (earlier) v.first = dep;
          v.conforms = false;
          ++v.units_departing;
          break;
        }
        prev = s.kept;
      }
    }
    res.cases.push_back(std::move(v));
  }
  return res;
}

bool ConformanceResult::conforms() const {
  return std::all_of(cases.begin(), cases.end(), [](const CaseVerdict& c) { return c.conforms; });
}

nlohmann::json ConformanceResult::to_json() const {
  nlohmann::json cs = nlohmann::json::array();
  for (const CaseVerdict& c : cases) {
    nlohmann::json j = {{"case", c.key},
                        {"tie_rule", c.tie_rule},
                        {"decisions", c.decisions},
                        {"units", c.units},
                        {"units_departing", c.units_departing},
                        {"conforms", c.conforms}};
    if (!c.conforms)
      j["first_departure"] = {{"step", c.first.step}, {"layer", c.first.layer},
                              {"head", c.first.head}, {"expected", c.first.expected},
                              {"got", c.first.got},   {"kind", to_string(c.first.kind)},
                              {"why", c.first.why}};
    cs.push_back(j);
  }
  return {{"golden", golden}, {"conforms", conforms()}, {"cases", cs}};
}

Report ConformanceResult::report() const {
  Report r;
  int bad = 0;
  for (const CaseVerdict& c : cases) bad += c.conforms ? 0 : 1;
  r.line("conformance against " + golden + ": " + std::to_string(cases.size() - static_cast<size_t>(bad)) + " of " +
         std::to_string(cases.size()) + " cases conform");
  Table& t = r.table(
      {"case", "units", "decisions", "verdict", "step", "layer", "KV head", "golden evicts", "yours evicts", "kind"});
  for (const CaseVerdict& c : cases) {
    if (c.conforms) {
      t.row({c.key, std::to_string(c.units), std::to_string(c.decisions), "conforms", "", "", "", "", "", ""});
      continue;
    }
    t.row({c.key, std::to_string(c.units), std::to_string(c.decisions),
           "departs in " + std::to_string(c.units_departing) + " units", std::to_string(c.first.step),
           std::to_string(c.first.layer), std::to_string(c.first.head), list(c.first.expected), list(c.first.got),
           to_string(c.first.kind)});
  }
  for (const CaseVerdict& c : cases)
    if (!c.conforms) {
      std::string line = c.key + ": first departs at step " + std::to_string(c.first.step) + ", layer " +
                         std::to_string(c.first.layer) + ", KV head " + std::to_string(c.first.head) + " (" +
                         to_string(c.first.kind) + "): " + c.first.why;
      if (c.first.kind == DepartureKind::Tie) line += ". The golden rule: " + c.tie_rule;
      r.line(line);
    }
  return r;
}

std::vector<Decision> golden_decisions(const GoldenCase& c) {
  std::vector<Decision> out;
  for (const GoldenUnit& u : c.units)
    for (size_t i = 0; i < u.steps.size(); ++i)
      if (!u.steps[i].evicted.empty())
        out.push_back({c.policy, c.budget, u.layer, u.head, static_cast<int>(i), false, u.steps[i].evicted, {}});
  return out;
}

}  // namespace kvo::conformance

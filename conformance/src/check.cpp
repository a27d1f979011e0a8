#include "kvo/conformance/check.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <tuple>

#include "kvo/core/error.hpp"

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

// The golden score of token t at a step (nullopt: protected, unscored, or not a candidate).
std::optional<double> score_of(const GoldenStep& s, int t) {
  std::vector<int> candidates = s.kept;
  candidates.insert(candidates.end(), s.evicted.begin(), s.evicted.end());
  std::sort(candidates.begin(), candidates.end());
  const auto it = std::lower_bound(candidates.begin(), candidates.end(), t);
  if (it == candidates.end() || *it != t) return std::nullopt;
  const size_t p = static_cast<size_t>(it - candidates.begin());
  return p < s.scores.size() ? s.scores[p] : std::nullopt;
}

std::string scores_text(const GoldenStep& s, const std::vector<int>& tokens) {
  std::ostringstream out;
  out.precision(17);
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::optional<double> v = score_of(s, tokens[i]);
    out << (i ? ", " : "") << tokens[i] << ": ";
    if (v)
      out << *v;
    else
      out << "protected or unscored";
  }
  return out.str();
}

// What kind of departure the golden scores make of it: the tokens only the golden evicted (e) and
// those only the implementation evicted (g).
DepartureKind classify(const GoldenStep& s, const std::vector<int>& e, const std::vector<int>& g, double tol) {
  if (e.size() != g.size() || e.empty()) return DepartureKind::Differs;
  std::vector<double> se, sg;
  for (int t : e) {
    const auto v = score_of(s, t);
    if (!v) return DepartureKind::Differs;
    se.push_back(*v);
  }
  for (int t : g) {
    const auto v = score_of(s, t);
    if (!v) return DepartureKind::Differs;
    sg.push_back(*v);
  }
  std::sort(se.begin(), se.end());
  std::sort(sg.begin(), sg.end());
  if (se == sg) return DepartureKind::Tie;
  for (size_t i = 0; i < se.size(); ++i)
    if (std::abs(se[i] - sg[i]) > tol * std::max({std::abs(se[i]), std::abs(sg[i]), 1e-300}))
      return DepartureKind::Differs;
  return DepartureKind::NearTie;
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
      for (const char* f : {"policy", "budget", "layer", "head", "step"})
        require(j.contains(f), where + ": no field '" + f + "'");
      d.policy = j.at("policy").get<std::string>();
      d.budget = j.at("budget").get<int>();
      d.layer = j.at("layer").get<int>();
      d.head = j.at("head").get<int>();
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

ConformanceResult check_conformance(const GoldenFile& golden, const std::vector<Decision>& decisions,
                                    const CheckOptions& options, const std::string& name) {
  require(options.tie_tolerance >= 0.0, "tie tolerance must be at least 0");
  using Key = std::tuple<int, int, int>;  // layer, head, step
  std::map<std::string, std::map<Key, const Decision*>> by_case;
  for (const Decision& d : decisions) {
    const GoldenCase& c = golden.find(d.policy, d.budget);
    require(d.layer >= 0 && d.layer < golden.layers && d.head >= 0 && d.head < golden.kv_heads && d.step >= 0 &&
                d.step < golden.n,
            "decision of " + c.key() + " at layer " + std::to_string(d.layer) + " head " + std::to_string(d.head) +
                " step " + std::to_string(d.step) + ": the golden file has " + std::to_string(golden.layers) +
                " layers, " + std::to_string(golden.kv_heads) + " KV heads and " + std::to_string(golden.n) + " steps");
    const bool fresh = by_case[c.key()].emplace(Key{d.layer, d.head, d.step}, &d).second;
    require(fresh, "decision of " + c.key() + " at layer " + std::to_string(d.layer) + " head " +
                       std::to_string(d.head) + " step " + std::to_string(d.step) + " is given twice");
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
          dep.kind = classify(s, e, g, options.tie_tolerance);
          if (d != nullptr && d->has_kept && s.kept.size() != sorted(d->kept).size())
            dep.why = "kept " + std::to_string(sorted(d->kept).size()) + " tokens where the golden keeps " +
                      std::to_string(s.kept.size());
          else if (e.size() != g.size())
            dep.why = "evicted " + std::to_string(got.size()) + " tokens where the golden evicts " +
                      std::to_string(s.evicted.size());
          else
            dep.why = "golden scores: only the golden evicted " + scores_text(s, e) + "; only yours evicted " +
                      scores_text(s, g);
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

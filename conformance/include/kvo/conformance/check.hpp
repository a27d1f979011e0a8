// The conformance checker: another implementation's eviction decisions against a golden file. Per
// case (policy @ budget) it finds the first step, then layer and KV head, where they depart, and
// whether the departure is a tie the golden rule broke otherwise (equal scores), a near tie, or a
// real difference.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kvo/conformance/golden.hpp"
#include "kvo/report/report.hpp"

namespace kvo::conformance {

// One decision of the implementation under test: at `step` of (layer, KV head) of case
// policy@budget, either the tokens it evicted (`evicted`) or the set it kept (`kept`). A step it
// gives no record for evicted nothing. Where the case's contract ties units into one kept set, the
// tied coordinate may be kEveryUnit: the decision holds for every unit of the set (layer for sets
// spanning the layers, head for sets spanning a layer's KV heads; both for one set per model).
inline constexpr int kEveryUnit = -1;
struct Decision {
  std::string policy;
  int budget = 0, layer = 0, head = 0, step = 0;
  bool has_kept = false;
  std::vector<int> evicted;  // when !has_kept
  std::vector<int> kept;     // when has_kept
};

// JSON Lines, one object per line: {"policy", "budget", "layer", "head", "step", and "evicted" or
// "kept"}, "layer" or "head" left out for kEveryUnit; kvo::Error naming the line and the field.
std::vector<Decision> parse_decisions(const std::string& jsonl);
// The same from a file (kvo::Error naming the path when it cannot be read).
std::vector<Decision> read_decisions(const std::string& path);

enum class DepartureKind { Tie, NearTie, Differs };
std::string to_string(DepartureKind k);  // "tie", "near tie", "differs"

struct Departure {
  int step = 0, layer = 0, head = 0;
  std::vector<int> expected;  // the golden evictions at the step
  std::vector<int> got;       // the implementation's
  DepartureKind kind = DepartureKind::Differs;
  std::string why;  // one line: what differs, and the two choices' scores
};

struct CaseVerdict {
  std::string key;  // "h2o@8"
  std::string tie_rule;
  long decisions = 0;  // golden steps compared (every unit, up to its first departure)
  int units = 0, units_departing = 0;
  bool conforms = true;  // no departure in any unit
  Departure first;       // the earliest (step, layer, head) departure, when !conforms
};

struct CheckOptions {
  double tie_tolerance = 1e-9;  // relative: scores this close are a near tie
};

struct ConformanceResult {
  std::string golden;
  std::vector<CaseVerdict> cases;  // the cases the decisions name, in the golden file's order
  bool conforms() const;           // every case
  nlohmann::json to_json() const;
  Report report() const;  // one row per case: conforms, or the first departure and its kind
};

// Every case any decision names is checked over all of the golden file's units and steps;
// kvo::Error for a decision naming a case, layer, head or step the file lacks, or kEveryUnit for a
// coordinate the case's kept sets do not tie. Under whole blocks, a departure is a tie when the
// blocks each side evicted have the same summed scores.
ConformanceResult check_conformance(const GoldenFile& golden, const std::vector<Decision>& decisions,
                                    const CheckOptions& options = {}, const std::string& name = "the golden file");

// The golden file's own decisions of one case, as the implementation under test would give them
// (the evictions of every step that evicts): what a conforming implementation writes.
std::vector<Decision> golden_decisions(const GoldenCase& c);

}  // namespace kvo::conformance

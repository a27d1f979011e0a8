// The paper's closed-loop experiments judged from what a closed loop measured (kvoracle eval:
// perplexity; tasks run: accuracy): E4 (Figure 2c, masking the heavy hitters), E5 (§4.1, local
// against look-ahead heavy hitters), E6 (Table 1, the sparse-transformer patterns without and with
// heavy hitters), E7 (Table 4, H2O on few-shot inputs), E8 (Table 5, H2O with a quantized KV cache) and E9 (Table 6,
// heavy hitters and recent tokens alone and together). One finding record per claim (and pattern) and budget whose rows
// were all measured. E10 (the diversity of generated text) compares word statistics instead.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvo/proofs_check/report.hpp"
#include "kvo/report/report.hpp"

namespace kvo {

enum class LoopMetric { Perplexity, Accuracy };
std::string_view to_string(LoopMetric m);

struct LoopRow {
  std::string row;      // a policy's name
  double budget = 1.0;  // the share of the tokens kept
  double value = 0.0;
};

// Two rows compared instance by instance (tasks run answers every row on the same instances): where
// the row scores above / below the other, and the exact two-sided sign test of those counts.
struct PairedTest {
  int instances = 0, better = 0, worse = 0;
  double p_value = 1.0;
};
// The full cache's row in paired comparisons (the name tasks run gives it; studies asserts the two agree).
inline constexpr std::string_view kLoopFullRow = "full-cache";
// The paired test of `row` at `budget` against `against` at `against_budget` (kLoopFullRow at 1);
// nullopt when the two share no instance.
using PairedComparator = std::function<std::optional<PairedTest>(const std::string& row, double budget,
                                                                 const std::string& against, double against_budget)>;

struct LoopMeasurements {
  LoopMetric metric = LoopMetric::Perplexity;
  double full = 0.0;          // the full cache's value
  std::vector<LoopRow> rows;  // policies x budgets
  // How much worse than a reference still counts as comparable: a relative perplexity increase
  // (0.05: 5%) or an accuracy difference (0.05: 5 points).
  double tolerance = 0.05;
  // E8: the label quantized rows carry ("+int4": "h2o+int4") and the full cache's value with its K/V
  // quantized; empty: no quantized rows.
  std::string quantized_suffix;
  double full_quantized = 0.0;
  // E7: the instances open with this many worked examples. Above 0 only E7 is judged (h2o
  // comparable to the full cache on few-shot inputs); at 0 every other claim.
  int shots = 0;
  // Where the rows were measured on the same instances (accuracy): each record lists the sign test of
  // every comparison its claim makes in detail["paired"] (row, against, instances, better, worse,
  // p_value), so that a reader sees which of its differences a study of that size resolves.
  PairedComparator paired;
};

// A row's loss against the full cache: value / full - 1 (perplexity), full - value (accuracy).
double loop_loss(const LoopMeasurements& m, double value);

// The records of E4, E5, E6, E8 and E9, or of E7 on few-shot measurements (docs/checks.md), for every budget below 1 at
// which their rows are present, in that order; none when a claim's rows are missing. With m.paired,
// the comparisons: E4 anti-h2o against random; E5 h2o against lookahead; E6 the pattern and its
// heavy-hitter variant against the full cache, and the variant against the pattern; E7 h2o against
// the full cache; E9 heavy, window and h2o against the full cache, and heavy against window. kvo::Error for a full
// value that is not positive (perplexity) or a tolerance below 0.
std::vector<CheckRecord> paper_experiment_records(const LoopMeasurements& m);

// E10 (§5.3 Q4, Appendix C): whether h2o's greedy continuations are at least as diverse as the
// full cache's at one budget: distinct-2 no lower and 4-gram repetition no higher (each a mean over
// the same prompts; kvo/studies/diversity.hpp measures them).
struct DiversityComparison {
  double budget = 0.0;
  double full_distinct2 = 0.0, full_repetition4 = 0.0;
  double h2o_distinct2 = 0.0, h2o_repetition4 = 0.0;
};
CheckRecord diversity_record(const DiversityComparison& c);

// The records as the JSON array the closed loops write ("paper_experiments"; report.hpp's form).
nlohmann::json paper_experiments_json(const std::vector<CheckRecord>& records);
// The records as the closed loops show them after their own table: a heading naming the claims'
// doc section (and the loss and tolerance), then one row per record: claim, budget, whether the
// paper's statement holds, its metric and the rows' values. Nothing when there is no record.
void add_paper_experiments(Report& out, const std::vector<CheckRecord>& records);

}  // namespace kvo

// Column generation for the offline assignment (docs/oracle.md §3c). The restricted problem keeps,
// per eviction step t, a short list of candidate tokens with their costs L_j(t); it is solved
// exactly by shortest augmenting paths on that sparse graph, and its potentials (u_t, v_j) are
// priced against every pair j <= t - r in one backwards pass over the rows (the suffix sums
// L_j(t) built as solve_offline builds them). A pair with a negative reduced cost joins its step's
// list, as does each token's most negative pair; when none does, (u, v) is feasible for the full
// dual and the restricted optimum is the optimum. The step t evicting the newcomer t - r is always
// a candidate, so every restricted problem is feasible.
#include "column_generation.hpp"

#include <algorithm>
#include <limits>

namespace kvo::detail {
namespace {

// The cost table's memory cap: the options' bytes, and their bytes per cache slot of every column.
double table_cap(const StreamingOfflineOptions& o, size_t cols, int budget) {
  return std::min(static_cast<double>(o.table_bytes), o.table_bytes_per_slot > 0.0
                                                          ? o.table_bytes_per_slot * static_cast<double>(cols) * budget
                                                          : std::numeric_limits<double>::infinity());
}

// Re-solves match again only the rows whose lists changed, unless more than this share of them
// must (a crowded round): then they solve from scratch, or, from the schedule seed, try warm first
// up to the last scratch solve's work (docs/oracle.md §3d).
constexpr double kWarmShare = 0.9;

}  // namespace

ColumnGenerator::ColumnGenerator(std::span<const WeightRows* const> units, int budget, int recent,
                                 const StreamingOfflineOptions& options)
    : units_(units),
      o_(options),
      H_(static_cast<int>(units.size())),
      n_(units[0]->n()),
      r_(recent),
      first_(budget),  // h + r
      steps_(n_ - budget),
      cols_(static_cast<size_t>(std::max(n_ - recent, 0)) * static_cast<size_t>(H_)),
      ra_(std::max(steps_, 0), static_cast<int>(cols_), H_),
      table_(
          steps_, [this](int step) { return arrived(step); }, options.table_stride, table_cap(options, cols_, budget)),
      pricer_(cols_, static_cast<size_t>(options.candidates) * static_cast<size_t>(H_)),
      suffix_(cols_),
      pruned_at_(std::numeric_limits<double>::infinity()) {}

size_t ColumnGenerator::arrived(int step) const {
  return static_cast<size_t>(first_ + step - r_ + 1) * static_cast<size_t>(H_);
}

// One backwards pass over the rows: the exact suffix sums L(t) of every unit's row. seed: list the
// newcomers and the cheapest pairs per step and fill the table; otherwise price every pair exactly
// (refresh: first set every listed pair's cost to its exact L, replacing the table's).
ColumnGenerator::PassResult ColumnGenerator::exact_pass(bool seed, bool refresh, double relative_slack) {
  std::fill(suffix_.begin(), suffix_.end(), 0.0);
  PassResult res;
  const auto exact = [&](size_t x) { return suffix_[x]; };
  const size_t H = static_cast<size_t>(H_);
  for_each_unit_row(units_, first_, n_, true, o_.threads, [&](int t, int u, std::span<const double> row) {
    const int width = t - r_ + 1;
    for (int j = 0; j < width; ++j)
      suffix_[static_cast<size_t>(j) * H + static_cast<size_t>(u)] += row[static_cast<size_t>(j)];
    if (u + 1 < H_) return;  // the step is priced once every unit's row is in
    const int step = t - first_;
    const size_t here = arrived(step), newcomers = here - H;
    if (!table_.empty() && seed && table_.checkpoint(step) == step) {
      float* dst = table_.row(step);
      for (size_t x = 0; x < here; ++x) dst[x] = static_cast<float>(suffix_[x]);
    }
    if (refresh)
      for (Candidate& x : ra_.list_for_update(step)) x.cost = suffix_[static_cast<size_t>(x.token)];
    if (seed) {  // the newcomers keep every restricted problem feasible
      res.added += pricer_.seed_step(ra_, step, newcomers, here, exact);
      return;
    }
    const auto [added, negative] =
        pricer_.price_step(ra_, step, here, exact, relative_slack, [](size_t, size_t, double, double) { return true; });
    res.added += added;
    res.negative += negative;
  });
  if (!seed) res.added += pricer_.add_column_bests(ra_);
  ++out_.passes;
  return res;
}

// A pricing round on the table instead of the rows (steps in the same backwards order); its pairs
// carry the table's costs until the next exact pass refreshes them.
ColumnGenerator::PassResult ColumnGenerator::table_pass() {
  PassResult res;
  pricer_.refresh_screen(ra_);
  for (int step = steps_ - 1; step >= 0; --step) {
    const float* L = table_.row(step);
    const auto [added, negative] = pricer_.price_step(
        ra_, step, arrived(step), [&](size_t x) { return static_cast<double>(L[x]); }, 0.0,
        [&](size_t from, size_t to, double ut, double threshold) {
          return pricer_.screen_table(L, from, to, ut, threshold, true);
        });
    res.added += added;
    res.negative += negative;
  }
  res.added += pricer_.add_column_bests(ra_);
  return res;
}

// After a solve whose value fell since the last pruning, each step keeps only its o.keep pairs of
// lowest reduced cost (and its newcomers and held pairs): the Dijkstras of later solves scan
// shorter lists. The value falls strictly between two prunings, so a pruned problem never recurs
// and the rounds end.
void ColumnGenerator::solve(bool may_prune) {
  ra_.resolve(kWarmShare, 0.0, capped_warm_);
  ++out_.rounds;
  if (may_prune && o_.keep > 0) {
    const double value = ra_.value();
    if (value < pruned_at_ - pricer_.tolerance()) {
      const auto newcomer = [&](int step, int col) {
        return static_cast<size_t>(col) >= arrived(step) - static_cast<size_t>(H_);
      };
      pairs_ -= ra_.prune(static_cast<size_t>(o_.keep) * static_cast<size_t>(H_), newcomer);
      pruned_at_ = value;
    }
  }
  if (o_.on_round) o_.on_round(out_.rounds, pairs_);
}

ColumnGeneration ColumnGenerator::run() {
  if (steps_ > 0) {
    pairs_ = exact_pass(true, false, 0.0).added;
    double largest = 0.0;  // the largest cost: suffix_ now holds L(first), each column's largest
    for (double x : suffix_) largest = std::max(largest, x);
    pricer_.set_tolerance(1e-16 * std::max(1.0, largest));
    if (largest > 1e30) table_.clear();  // beyond what a float table can bound: price on the rows
    const auto arrived_by = [this](int step) { return arrived(step); };
    if (!table_.empty() && o_.schedule_seed) {
      pairs_ += pricer_.seed_greedy_schedule(ra_, table_, steps_, arrived_by, static_cast<size_t>(H_));
      capped_warm_ = true;
    }
    if (table_.empty()) {
      for (;;) {  // price on recomputed rows until no pair prices below -tolerance
        solve(true);
        const PassResult p = exact_pass(false, false, 0.0);
        if (p.added == 0) break;
        pairs_ += p.added;
      }
    } else {
      for (;;) {  // rounds on the table until it finds no negative pair
        solve(true);
        const PassResult p = table_pass();
        if (p.negative == 0) break;
        pairs_ += p.added;
      }
      // The exact costs of every listed pair, and the pairs the table misjudged or cannot judge;
      // then the table certifies the new potentials, or another exact pass prices every pair.
      bool refreshed = false;
      for (;;) {
        const PassResult p = exact_pass(false, !refreshed, 0x1p-20);
        pairs_ += p.added;
        if (refreshed && p.negative == 0) break;  // exact pricing proves the current potentials feasible
        refreshed = true;
        solve(false);
        if (pricer_.table_certifies(ra_, table_, steps_, arrived_by)) break;
      }
    }
  }
  out_.pairs = pairs_;
  if (!table_.empty()) {
    out_.table_stride = table_.stride();
    out_.table_bytes = table_.bytes();
  }
  out_.work = ra_.augmentations();
  out_.col_of = ra_.matching();
  out_.row_potential = ra_.row_potentials();
  return out_;
}

ColumnGeneration column_generation(std::span<const WeightRows* const> units, int budget, int recent,
                                   const StreamingOfflineOptions& options) {
  return ColumnGenerator(units, budget, recent, options).run();
}

}  // namespace kvo::detail

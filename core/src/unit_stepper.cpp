#include "kvo/core/unit_stepper.hpp"

#include <algorithm>
#include <limits>

#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/lane_sum.hpp"
#include "kvo/core/policy_registry.hpp"
#include "kvo/core/replay.hpp"

namespace kvo {

PolicySetup unit_setup(const RunConfig& run, int n, int layer, int unit_head, std::uint64_t seed,
                       const HeadView& head) {
  PolicySetup setup;
  setup.n = n;
  setup.budget = run.unit_budget(n, layer, unit_head);
  setup.prompt_len = run.prompt_len;
  setup.seed = seed;
  setup.layer = layer;
  setup.unit_head = unit_head;
  setup.head = &head;
  return setup;
}

UnitStepper::UnitStepper(const RunConfig& run, const PolicySetup& setup, int heads, bool record_sets, bool record_probs)
    : run_(run),
      policy_(make_policy(run.policy)),
      record_sets_(record_sets),
      record_probs_(record_probs),
      was_(static_cast<size_t>(setup.n), 0),
      probs_(static_cast<size_t>(heads)) {
  policy_->begin(setup);
}

void UnitStepper::step(int i, std::span<const HeadRow> rows, std::span<StepRecord> out) {
  observe(i, rows);
  record(i, rows, out);
}

void UnitStepper::observe(int i, std::span<const HeadRow> rows) {
  att_ = policy_->attended(i);
  const std::vector<int>& att = att_;
  require(!att.empty() && att.front() >= 0 && att.back() <= i && std::is_sorted(att.begin(), att.end()),
          "policy " + policy_->name() + " returned an invalid attended set at step " + std::to_string(i));
  lg_.resize(att.size());
  agg_.assign(att.size(), run_.gqa == GqaMode::KvMax ? -std::numeric_limits<double>::infinity() : 0.0);
  for (size_t x = 0; x < rows.size(); ++x) {
    probs_[x].resize(att.size());
    for (size_t t = 0; t < att.size(); ++t) lg_[t] = rows[x].logits[static_cast<size_t>(att[t])];
    softmax(lg_, probs_[x]);
    for (size_t t = 0; t < att.size(); ++t)
      agg_[t] = run_.gqa == GqaMode::KvMax ? std::max(agg_[t], probs_[x][t]) : agg_[t] + probs_[x][t];
  }
  if (run_.gqa != GqaMode::KvMax)
    for (double& p : agg_) p /= static_cast<double>(rows.size());
  policy_->observe(i, att, agg_);
}

void UnitStepper::record(int i, std::span<const HeadRow> rows, std::span<StepRecord> out) {
  const std::vector<int>& att = att_;
  const std::vector<int>& kept = policy_->cache();

  for (int j : prev_) was_[j] = 1;
  was_[i] = 1;
  StepRecord base;
  for (int j : kept) {
    if (!was_[j]) base.reentered.push_back(j);
    was_[j] = 2;
  }
  for (int j : prev_)
    if (was_[j] == 1) base.evicted.push_back(j);
  if (was_[i] == 1) base.evicted.push_back(i);
  for (int j : prev_) was_[j] = 0;
  was_[i] = 0;
  for (int j : kept) was_[j] = 0;
  if (record_sets_) {
    base.attended = att;
    base.kept = kept;
  }
  for (size_t x = 0; x < rows.size(); ++x) {
    StepRecord& rec = out[x];
    rec = base;
    const auto& dense = rows[x].dense;
    const double mass = lane_sum(att.size(), [&](size_t t) { return dense[static_cast<size_t>(att[t])]; });
    rec.retained_mass = std::min(mass, 1.0);
    for (int j : kept) rec.accumulated += rows[x].acc[static_cast<size_t>(j)];
    if (record_probs_) rec.probs = probs_[x];
  }
  prev_ = kept;
}

}  // namespace kvo

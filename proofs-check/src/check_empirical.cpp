// E2-E3: the paper's observations on attention itself (§3.2 and Figure 2b), per head and from the
// same pass as the theory checks (E1, the sparsity of §3.1, shares C17's count in
// check_attention_stats.cpp). E2: a power-law fit (kvo/proofs_check/power_law.hpp) of every token's accumulated
// attention A_{n-1}(j) at the last step. E3: per vocabulary word (token id), the attention its
// occurrences received against the number of distinct words it co-occurs with, by Spearman's rho,
// raw and with the word's frequency (and its exposure, the queries that could see it) held fixed.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "head_data.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/synth.hpp"
#include "kvo/proofs_check/power_law.hpp"
#include "rank_correlation.hpp"

namespace kvo::detail {
namespace {

// Per word type of the trace's token ids: attention received, frequency, exposure, co-occurring types.
struct WordTable {
  std::vector<double> attention, frequency, exposure, cooccurring;
};

WordTable word_table(const std::vector<std::int32_t>& tokens, std::span<const double> acc, int window) {
  const int n = static_cast<int>(acc.size());
  std::map<std::int32_t, size_t> index;
  WordTable w;
  std::vector<std::set<std::int32_t>> neighbours;
  for (int j = 0; j < n; ++j) {
    const auto [it, added] = index.emplace(tokens[static_cast<size_t>(j)], index.size());
    if (added) {
      for (auto* v : {&w.attention, &w.frequency, &w.exposure}) v->push_back(0.0);
      neighbours.emplace_back();
    }
    const size_t x = it->second;
    w.attention[x] += acc[static_cast<size_t>(j)];
    w.frequency[x] += 1.0;
    w.exposure[x] += n - j;
    for (int i = std::max(0, j - window); i <= std::min(n - 1, j + window); ++i)
      if (tokens[static_cast<size_t>(i)] != tokens[static_cast<size_t>(j)])
        neighbours[x].insert(tokens[static_cast<size_t>(i)]);
  }
  for (const auto& s : neighbours) w.cooccurring.push_back(static_cast<double>(s.size()));
  return w;
}

nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

class EmpiricalCheck final : public StepCheck {
 public:
  EmpiricalCheck(const HeadInfo& h, const TraceChecksOptions& o)
      : h_(h),
        o_(o),
        e2_(check_enabled(o, "E2")),
        e3_(check_enabled(o, "E3") && trace_text_missing(*h.trace).empty()) {}

  void step(const HeadStep& s) override {
    if ((e2_ || e3_) && s.i == h_.n - 1) final_.assign(s.acc.begin(), s.acc.end());
  }

  void finish(const HeadSeries&, std::vector<CheckRecord>& out, HeadExtras&) override {
    if (e2_) out.push_back(power_law_record());
    if (e3_) out.push_back(cooccurrence_record());
  }

 private:
  CheckRecord power_law_record() const {
    std::vector<double> positive;
    for (double v : final_)
      if (v > 0) positive.push_back(v);
    PowerLawOptions po;
    po.bootstrap = o_.power_law_bootstrap;
    po.seed = o_.run.seed + 7919ULL * static_cast<std::uint64_t>(h_.layer * 4096 + h_.head);
    try {
      const PowerLawFit f = fit_power_law(positive, po);
      const double p = f.bootstrap ? f.p_value : NAN;
      auto r = head_record(h_, "E2", "accumulated attention", ClaimKind::Finding, f.consistent(), p);
      r.detail = {
          {"verdict", f.verdict()},
          {"alpha", f.alpha},
          {"xmin", f.xmin},
          {"n", f.n},
          {"n_tail", f.n_tail},
          {"ks", f.ks},
          {"p_value", number(p)},
          {"bootstrap", f.bootstrap},
          {"lognormal",
           {{"R", f.lognormal.ratio}, {"p", f.lognormal.p_value}, {"mu", f.lognormal.a}, {"sigma", f.lognormal.b}}},
          {"exponential", {{"R", f.exponential.ratio}, {"p", f.exponential.p_value}, {"lambda", f.exponential.a}}}};
      return r;
    } catch (const Error& e) {
      auto r = head_record(h_, "E2", "accumulated attention", ClaimKind::Finding, false, NAN);
      r.detail = {{"verdict", "no fit"}, {"error", e.what()}};
      return r;
    }
  }

  CheckRecord cooccurrence_record() const {
    const WordTable w = word_table(h_.trace->tokens, final_, o_.cooccurrence_window);
    const double rho = spearman(w.attention, w.cooccurring);
    const double partial = partial_spearman(w.attention, w.cooccurring, {w.frequency});
    const double partial_both = partial_spearman(w.attention, w.cooccurring, {w.frequency, w.exposure});
    auto r = head_record(h_, "E3", "words", ClaimKind::Finding, partial >= 0.5, partial);
    r.detail = {{"rho", number(rho)},
                {"rho_given_frequency", number(partial)},
                {"rho_given_frequency_and_exposure", number(partial_both)},
                {"rho_attention_frequency", number(spearman(w.attention, w.frequency))},
                {"words", w.attention.size()},
                {"window", o_.cooccurrence_window}};
    return r;
  }

  const HeadInfo& h_;
  const TraceChecksOptions& o_;
  bool e2_, e3_;
  std::vector<double> final_;
};

}  // namespace

std::unique_ptr<StepCheck> empirical_check(const HeadInfo& h, const TraceChecksOptions& o) {
  return std::make_unique<EmpiricalCheck>(h, o);
}

}  // namespace kvo::detail

#include "kvo/proofs_check/report.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "kvo/core/error.hpp"

namespace kvo {

std::string to_string(ClaimKind k) {
  switch (k) {
    case ClaimKind::Theorem:
      return "theorem";
    case ClaimKind::Finding:
      return "finding";
    case ClaimKind::Defect:
      return "defect";
  }
  return "?";
}

ClaimKind claim_kind(const std::string& name) {
  for (ClaimKind k : {ClaimKind::Theorem, ClaimKind::Finding, ClaimKind::Defect})
    if (to_string(k) == name) return k;
  throw Error("unknown claim kind '" + name + "'");
}

CheckRecord make_record(const std::string& id, const std::string& variant, ClaimKind kind, bool holds, double metric) {
  CheckRecord r;
  r.id = id;
  r.variant = variant;
  r.kind = kind;
  r.holds = holds;
  r.metric = metric;
  return r;
}

nlohmann::json record_to_json(const CheckRecord& r) {
  return {{"id", r.id},         {"variant", r.variant}, {"kind", to_string(r.kind)},
          {"layer", r.layer},   {"head", r.head},       {"holds", r.holds},
          {"metric", r.metric}, {"step", r.step},       {"detail", r.detail}};
}

CheckRecord record_from_json(const nlohmann::json& j) {
  CheckRecord r;
  try {
    r.id = j.at("id").get<std::string>();
    r.variant = j.at("variant").get<std::string>();
    r.kind = claim_kind(j.at("kind").get<std::string>());
    r.layer = j.at("layer").get<int>();
    r.head = j.at("head").get<int>();
    r.holds = j.at("holds").get<bool>();
    // JSON text writes a non-finite metric as null; the binary unit results keep it.
    r.metric = j.at("metric").is_null() ? NAN : j.at("metric").get<double>();
    r.step = j.at("step").get<long>();
    r.detail = j.at("detail");
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("a check record is malformed: ") + e.what());
  }
  return r;
}

const std::vector<ClaimInfo>& claim_catalogue() {
  static const std::vector<ClaimInfo> c = {
      {"C1",
       "eviction invariants: |S_i| <= k, S_i ⊆ S_{i-1} ∪ {i}, one new element, no re-entry",
       "Def 2.1/D.12, §4.1",
       "violating steps",
       true,
       "invariants_check",
       {"ClaimCanFail.C1_ReadmittedToken"}},
      {"C2",
       "normalisation: D_i = sum_{j in S} exp(q_i.k_j) after the -1 fix; sum_j o_ij = 1",
       "Def 2.2/D.10",
       "max relative error",
       true,
       "normalisation_check",
       {"ClaimCanFail.C2_TokenAttendedTwice"}},
      {"C3",
       "Alg. 1 argmax over v of h(F(G \\ {v})) = argmin õ, for h = id, sqrt, log",
       "Alg. 1/2, Rem. D.14",
       "disagreeing steps",
       true,
       "scores_check",
       {"ClaimCanFail.C3_EvictedTokenIsNotTheArgmin"}},
      {"C4",
       "incremental õ equals recomputation (fp64); fp16 accumulation drift",
       "Rem. D.15",
       "max relative error",
       true,
       "scores_check",
       {"ClaimCanFail.C4_ScoreDriftsFromRecomputation"}},
      {"C5",
       "F_score = h(sum õ) is monotone submodular (Cond. 3, Y ⊂ X)",
       "D.1, D.2, Rem. D.14",
       "violations",
       true,
       "scores_sampled_check",
       {"ClaimCanFail.C5_C12_NegativeScoreBreaksMonotonicity"}},
      {"C6",
       "dynamic submodularity of f_{Z,i} on supersets of Z = S_i",
       "Def 4.1/D.4",
       "violation rate",
       true,
       "small_ground_check",
       {"ClaimCanFail.C6_MixedSignWeightsBreakDiminishingReturns"}},
      {"C7",
       "greedy >= (1-(1-1/k)^k) OPT >= (1-1/e) OPT (brute force)",
       "Thm D.17 [NWF 1978]",
       "min greedy/OPT",
       false,
       "check_static_objective",
       {"ClaimCanFail.C7_C8_C16_C20_C21_C22_NonSubmodularObjective"}},
      {"C8",
       "noisy-oracle greedy >= (1-1/e)OPT - k(2-1/e)eps and >= (1-(1-1/k)^k)(OPT-2k eps)",
       "Cor D.18",
       "min slack / OPT",
       false,
       "check_static_objective",
       {"ClaimCanFail.C7_C8_C16_C20_C21_C22_NonSubmodularObjective"}},
      {"C9",
       "robustness: perturbation eps/(2n) of gains costs at most eps",
       "Lemma D.19",
       "eps_hat / opt",
       true,
       "robustness_check",
       {"ClaimCanFail.C9_EvictionFarFromTheOptimum"}},
      {"C10",
       "UDC1: theta_i = max(0, 1 - f_{S_i,i}(S_i)/f_{S_{i-1},i-1}(S_i))",
       "D.25/D.26",
       "max theta",
       true,
       "udc_check",
       {"ClaimCanFail.C10_AccumulatedScoreDecreases"}},
      {"C11",
       "UDC2 both directions: gamma^def (opt_i vs opt_{i-1}), gamma^proof (opt_i vs opt_{i+1})",
       "D.27, D.28 vs D.29",
       "max gamma^proof",
       true,
       "udc_check",
       {"ClaimCanFail.C11_OptimumJumps"}},
      {"C12",
       "universal monotone: f(X) >= f(Y) for Y ⊂ X",
       "D.23/D.24",
       "violations",
       true,
       "scores_sampled_check",
       {"ClaimCanFail.C5_C12_NegativeScoreBreaksMonotonicity"}},
      {"C13",
       "induction chain links (a)-(d) and the per-step bound prod(1-theta)(1-gamma) opt",
       "Lemma D.29",
       "steps with a failed link",
       true,
       "induction_check",
       {"ClaimCanFail.C13_EvictionLowersTheValue"}},
      {"C14",
       "approximate induction: one-sided eps0 (as published) vs two-sided (repaired)",
       "Lemma D.30",
       "steps below the one-sided bound",
       true,
       "induction_check",
       {"ClaimCanFail.C14_DecisionsStopBeingGreedy"}},
      {"C15",
       "Thm 4.4/D.32: f(S_i) >= (1-1/e)(1-alpha) opt_i - beta; alpha needed at beta = 0",
       "Thm 4.4, D.32",
       "alpha_hat (hypotheses: gamma^proof)",
       true,
       "ratio_check",
       {"ClaimCanFail.C15_CacheOfTheLightestTokens"}},
      {"C16",
       "full-knowledge greedy >= (1-1/e) opt_i",
       "Lemma 3.1/D.31",
       "min greedy/OPT",
       false,
       "check_static_objective",
       {"ClaimCanFail.C7_C8_C16_C20_C21_C22_NonSubmodularObjective"}},
      {"C17",
       "(alpha,tau,k)-goodness, union bound, and attention sparsity > 95% at 1% of the row max",
       "D.33, D.34, §3.1",
       "sparsity",
       false,
       "attention_stats_check",
       {"ClaimCanFail.C17_UniformAttentionIsNotSparse"}},
      {"C18",
       "retained mass controls the output: |o_T - o_full| <= 2(1 - m_i(T)) max|v|",
       "§2.0 [R]",
       "max error / bound",
       true,
       "attention_stats_check",
       {"ClaimCanFail.C18_AttentionRowNotADistribution"}},
      {"C19",
       "offline ordering: nested policy <= OPT_dyn <= sum opt_i; flow = brute force at small n",
       "§3.6 [R]",
       "min competitive ratio",
       false,
       "offline_check",
       {"ClaimCanFail.C19_WrongCertificate", "ClaimCanFail.C19_NestedPolicyThatReadmits"}},
      {"C20",
       "curvature bound: greedy >= (1-e^{-c})/c OPT",
       "§3.2 [Conforti-Cornuejols]",
       "min greedy/bound",
       false,
       "check_static_objective",
       {"ClaimCanFail.C7_C8_C16_C20_C21_C22_NonSubmodularObjective"}},
      {"C21",
       "submodularity ratio: greedy >= (1-e^{-gamma}) OPT; gamma >= 1 iff submodular",
       "§3.3 [Das-Kempe]",
       "min gamma",
       false,
       "check_static_objective",
       {"ClaimCanFail.C7_C8_C16_C20_C21_C22_NonSubmodularObjective"}},
      {"C22",
       "a-posteriori bound: OPT <= f(A) + sum of the k largest gains",
       "§3.4 [Leskovec et al.]",
       "min greedy/bound",
       false,
       "check_static_objective",
       {"ClaimCanFail.C7_C8_C16_C20_C21_C22_NonSubmodularObjective"}},
      {"C23",
       "gradient and Hessian formulas of the softmax loss (sign of Part 5)",
       "Lemmas D.44-D.46",
       "max relative error",
       true,
       "check_loss_formulas",
       {"ClaimCanFail.C23_PerturbedGradient"}},
      {"C24",
       "Hessian PD: lambda_min >= l when w_i^2 >= 20 + l/sigma_min^2; Part 2 sandwich",
       "Lemma D.47",
       "min lambda_min / l",
       false,
       "check_hessian_pd",
       {"ClaimCanFail.C24_WeightsBelowTheHypothesis"}},
      {"C25",
       "Hessian Lipschitz <= n^2 e^{40R^2}; |u(x)-u(y)| <= 2 sqrt(n) R e^{R^2} |x-y|",
       "Lemma D.48",
       "max log10(measured/bound)",
       true,
       "check_lipschitz",
       {"ClaimCanFail.C25_RadiusUnderstated"}},
      {"C26",
       "Newton x - H^{-1} g reaches eps within ceil(log(|x0-x*|/eps)) iterations",
       "Alg. 4, Thm D.49",
       "max iterations / allowed",
       true,
       "check_newton",
       {"ClaimCanFail.C26_WrongHessianSlowsNewton"}},
      {"C27",
       "code-variant invariants: |kept| = min(L, h+r), heavy candidates exclude W_i, prefill top-h",
       "§1.7 [C]",
       "violating steps",
       true,
       "invariants_check",
       {"ClaimCanFail.C27_CacheOneShort"}},
      {"D1",
       "Alg. 1 [V3] 'i < k' leaves the cache one short",
       "Alg. 1",
       "cache size at step k",
       false,
       "algorithm_variants_check",
       {"TraceChecks.AlgorithmOneFillTestLeavesTheCacheOneShort"}},
      {"D2",
       "o_i without the -1 fix puts mass on evicted keys",
       "Def 2.2/D.10",
       "max excess mass",
       true,
       "normalisation_check",
       {}},
      {"D3",
       "scores over K_{S_i} [V1] vs K_{S_{i-1}} [V3]: decisions differ",
       "Alg. 1/2",
       "differing steps",
       true,
       "algorithm_variants_check",
       {}},
      {"D4",
       "accumulation skips steps <= k in Alg. 2",
       "Alg. 2",
       "fraction of steps with a different cache",
       true,
       "algorithm_variants_check",
       {}},
      {"D5",
       "UDC2: definition and use point in opposite directions",
       "D.28 vs D.29/D.30",
       "max gamma^proof - gamma^def",
       true,
       "udc_check",
       {}},
      {"D6",
       "D.30 applies the value hypothesis to f~; a one-sided eps0 breaks the induction",
       "Lemma D.30",
       "shortfall of the one-sided bound",
       true,
       "induction_check",
       {"Counterexamples.OneSidedEpsilonBreaksLemmaD30AndTheRepairHolds"}},
      {"D7",
       "link (a) of D.29 needs the argmax, not monotonicity",
       "Lemma D.29",
       "link (a) failure rate",
       true,
       "induction_check",
       {"Counterexamples.ForcedTokenBreaksLinkA"}},
      {"D8",
       "the base case of the induction is never shown",
       "Lemma D.29/D.31",
       "base-step ratio",
       false,
       "induction_check",
       {}},
      {"D9",
       "sign of D.44 Part 5 and of the Newton step in Alg. 4",
       "Lemma D.44, Alg. 4",
       "relative error of the published form",
       true,
       "check_loss_formulas",
       {"SoftmaxLoss.CorrectedGradientMatchesFiniteDifferencesAndThePublishedSignDoesNot"}},
      {"D10",
       "opt_i of D.27 ranges over unreachable caches: an upper benchmark, not OPT_dyn",
       "D.27",
       "OPT_dyn / sum opt_i",
       false,
       "offline_check",
       {}},
      {"D11",
       "Cor D.18's constant k(2-1/e)eps vs the derivable (1-(1-1/k)^k)(OPT-2k eps)",
       "Cor D.18",
       "paper bound - derived bound (/OPT)",
       true,
       "check_static_objective",
       {}},
      {"E1",
       "attention is over 95% sparse (entries below 1% of their row maximum) in almost all layers",
       "§3.1, Fig. 2a",
       "sparsity",
       false,
       "attention_stats_check",
       {"ClaimCanFail.E1_UniformAttentionIsNotSparse"}},
      {"E2",
       "the tokens' accumulated attention follows a power law (CSN fit: bootstrap p >= 0.1, no "
       "log-normal or exponential significantly better)",
       "§3.2, Fig. 2b",
       "bootstrap p-value",
       false,
       "empirical_check",
       {"ClaimCanFail.E2_ALocalHeadIsNotAPowerLaw"}},
      {"E3",
       "a word's accumulated attention is highly correlated with its co-occurrences (Spearman rho >= 0.5 "
       "with its frequency held fixed)",
       "§3.2, Fig. 2b",
       "rho given frequency",
       false,
       "empirical_check",
       {"ClaimCanFail.E3_AttentionThatIgnoresCooccurrence"}},
      {"E4",
       "masking the heavy hitters drops quality drastically, far more than masking as many random tokens",
       "§3.2, Fig. 2c",
       "loss of anti-h2o - loss of random",
       false,
       "paper_experiment_records",
       {"ClaimCanFail.E4_MaskingHeavyHittersNoWorseThanRandom"},
       true},
      {"E5",
       "local heavy hitters (attention so far) are as effective as global ones (every query, future included)",
       "§4.1, Fig. 2d",
       "loss of h2o - loss of lookahead",
       true,
       "paper_experiment_records",
       {"ClaimCanFail.E5_LookAheadFarBetterThanLocal"},
       true},
      {"E6",
       "the sparse-transformer patterns fall short at a small budget and recover once heavy hitters are added",
       "§5.1, Table 1",
       "loss of the pattern - loss with heavy hitters",
       false,
       "paper_experiment_records",
       {"ClaimCanFail.E6_HeavyHittersDoNotRescueAPattern"},
       true},
      {"E7",
       "H2O stays comparable to the full cache with few-shot prompts (5 and 10 shots)",
       "§5.3, Table 4",
       "loss of h2o",
       true,
       "paper_experiment_records",
       {"ClaimCanFail.E7_FewShotInputsBreakEviction"},
       true},
      {"E8",
       "H2O is compatible with 4-bit quantization: H2O with a quantized KV cache is no worse than either alone",
       "§5.3, Table 5",
       "loss of h2o quantized - the worse of h2o and the quantized full cache",
       true,
       "paper_experiment_records",
       {"ClaimCanFail.E8_QuantizationAndEvictionCompound"},
       true},
      {"E9",
       "heavy hitters alone and recent tokens alone fall short, both together match the full cache, heavy "
       "hitters alone beat recent tokens alone",
       "§5.3, Table 6",
       "loss of h2o (both together)",
       true,
       "paper_experiment_records",
       {"ClaimCanFail.E9_RecentTokensAloneBeatHeavyHitters"},
       true},
      {"E10",
       "H2O increases the diversity of generated text (fewer repeated words) over the full cache",
       "§5.3 Q4, App. C",
       "h2o distinct-2 - full distinct-2",
       false,
       "diversity_record",
       {"ClaimCanFail.E10_EvictionThatRepeatsItself"},
       true},
      // Other papers' claims (docs/checks.md, "Other papers' claims"): the authors' sentence, then
      // what kvoracle computes from it on a trace.
      {"ADA1",
       "a layer's L1 output loss after eviction <= 2C sum_h (1 - kept mass_h), C = max_(h,j) |v_hj|_1, for "
       "uniform and adaptive budgets",
       "Ada-KV §3 (arXiv 2407.11550)",
       "max loss / bound",
       true,
       "adakv_records",
       {"ClaimCanFail.ADA1_AttentionRowNotADistribution"},
       false,
       "adakv",
       "prevailing methods aim to minimize an upper bound of eviction loss, quantified as the L1 distance between "
       "the pre- and post-eviction outputs of multi-head self-attention mechanisms"},
      {"ADA2",
       "the adaptive allocation (the top sum_h k_h scores over the layer's heads) minimises that bound",
       "Ada-KV §3 (arXiv 2407.11550)",
       "max (adaptive bound - uniform bound)",
       true,
       "adakv_records",
       {"ClaimCanFail.ADA2_AllocationThatIsNotTheTopAcrossHeads"},
       false,
       "adakv",
       "This algorithm not only optimizes the loss upper bound in theory"},
      {"ADA3",
       "the adaptive allocation lowers the actual L1 output loss against uniform budgets",
       "Ada-KV abstract, §4 (arXiv 2407.11550)",
       "adaptive loss / uniform loss",
       true,
       "adakv_records",
       {"ClaimCanFail.ADA3_LightTokensCarryTheOutput"},
       false,
       "adakv",
       "but also reduces the eviction loss in practice by aligning with the intrinsic patterns of self-attention "
       "mechanisms"},
      {"SNAP1",
       "the observation window at the end of the prompt picks the prefix keys the later queries attend",
       "SnapKV §3 (arXiv 2404.14469)",
       "share of the later queries' best prefix mass kept",
       false,
       "snapkv_check",
       {"ClaimCanFail.SNAP1_LaterQueriesLookElsewhere"},
       false,
       "snapkv",
       "each attention head in the model consistently focuses on specific prompt attention features during "
       "generation. Meanwhile, this robust pattern can be obtained from an 'observation' window located at the end "
       "of the prompts"},
      {"SINK1",
       "keeping the 4 initial tokens recovers most of the attention a window of k loses",
       "StreamingLLM §3.1 (arXiv 2309.17453)",
       "share of the window's lost mass recovered",
       false,
       "sinks_check",
       {"ClaimCanFail.SINK1_UniformAttentionHasNoSink"},
       false,
       "streamingllm",
       "keeping the KV of initial tokens will largely recover the performance of window attention"},
      {"SCIS1",
       "persistence of importance: the old tokens pivotal at later steps were pivotal before",
       "Scissorhands §3 (arXiv 2305.17118)",
       "persistence ratio",
       false,
       "persistence_check",
       {"ClaimCanFail.SCIS1_ImportanceMovesOn"},
       false,
       "scissorhands",
       "only pivotal tokens, which had a substantial influence at one step, will significantly influence future "
       "generations"},
      {"TOVA1",
       "TOVA's premise: the current query's attention keeps as much of the next query's attention as the "
       "accumulated attention does",
       "TOVA §3 (arXiv 2401.06104)",
       "next-row mass: top-k of a_i / top-k of A_i",
       false,
       "tova_premise_check",
       {"ClaimCanFail.TOVA1_AttentionAlternates"},
       false,
       "tova",
       "TOVA, which is simpler compared to these policies. Our experiments with several long range tasks indicate "
       "that TOVA outperforms all other baseline policies"},
  };
  return c;
}

const std::vector<PaperInfo>& paper_catalogue() {
  static const std::vector<PaperInfo> p = {
      {"h2o", "H2O", "Zhang et al., NeurIPS 2023, arXiv 2306.14048"},
      {"adakv", "Ada-KV", "Feng et al., NeurIPS 2025, arXiv 2407.11550"},
      {"snapkv", "SnapKV", "Li et al., NeurIPS 2024, arXiv 2404.14469"},
      {"streamingllm", "StreamingLLM", "Xiao et al., ICLR 2024, arXiv 2309.17453"},
      {"scissorhands", "Scissorhands", "Liu et al., NeurIPS 2023, arXiv 2305.17118"},
      {"tova", "TOVA", "Oren et al., EMNLP 2024, arXiv 2401.06104"},
  };
  return p;
}

std::string paper_keys() {
  std::string s;
  for (const auto& p : paper_catalogue()) s += (s.empty() ? "" : ", ") + p.key;
  return s;
}

const PaperInfo& paper_info(const std::string& key) {
  for (const auto& p : paper_catalogue())
    if (p.key == key) return p;
  throw Error("unknown paper '" + key + "' (expected " + paper_keys() + " or all)");
}

std::string ClaimInfo::doc() const {
  std::string anchor = id;
  for (char& c : anchor) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return "docs/checks.md#" + anchor;
}

const ClaimInfo& claim_info(const std::string& id) {
  static const std::map<std::string, const ClaimInfo*> index = [] {
    std::map<std::string, const ClaimInfo*> m;
    for (const auto& c : claim_catalogue()) m.emplace(c.id, &c);
    return m;
  }();
  if (const auto it = index.find(id); it != index.end()) return *it->second;
  throw Error("unknown check id '" + id + "' (expected " + trace_check_ids() + " or E4..E10)");
}

namespace {
std::string id_prefix(const std::string& id) { return id.substr(0, id.find_first_of("0123456789")); }
}  // namespace

std::string trace_check_ids() {
  // Runs of one prefix in catalogue order: "C1..C27, D1..D11, E1..E3, ADA1..ADA3, SNAP1, ...".
  std::vector<std::pair<std::string, std::string>> runs;
  for (const auto& c : claim_catalogue()) {
    if (c.closed_loop) continue;
    if (!runs.empty() && id_prefix(runs.back().first) == id_prefix(c.id))
      runs.back().second = c.id;
    else
      runs.emplace_back(c.id, c.id);
  }
  std::string s;
  for (std::size_t x = 0; x < runs.size(); ++x)
    s += (x == 0                 ? ""
          : x + 1 == runs.size() ? " and "
                                 : ", ") +
         runs[x].first + (runs[x].second == runs[x].first ? "" : ".." + runs[x].second);
  return s;
}

void CheckRecords::append(std::vector<CheckRecord> rs) {
  for (auto& r : rs) records_.push_back(std::move(r));
}

namespace {
size_t claim_order(const std::string& id) {
  const auto& c = claim_catalogue();
  for (size_t x = 0; x < c.size(); ++x)
    if (c[x].id == id) return x;
  return c.size();
}
}  // namespace

void CheckRecords::sort() {
  std::stable_sort(records_.begin(), records_.end(), [](const CheckRecord& a, const CheckRecord& b) {
    const size_t ca = claim_order(a.id), cb = claim_order(b.id);
    if (ca != cb) return ca < cb;
    if (a.variant != b.variant) return a.variant < b.variant;
    if (a.layer != b.layer) return a.layer < b.layer;
    return a.head < b.head;
  });
}

long CheckRecords::theorem_failures() const {
  long f = 0;
  for (const auto& r : records_) f += (r.kind == ClaimKind::Theorem && !r.holds) ? 1 : 0;
  return f;
}

std::vector<ClaimSummary> CheckRecords::summaries() const {
  std::vector<ClaimSummary> out;
  std::map<std::pair<std::string, std::string>, size_t> index;
  std::vector<std::vector<double>> metrics;
  for (const auto& c : claim_catalogue()) {
    for (const auto& r : records_) {
      if (r.id != c.id) continue;
      auto key = std::make_pair(r.id, r.variant);
      auto it = index.find(key);
      if (it == index.end()) {
        it = index.emplace(key, out.size()).first;
        ClaimSummary s;
        s.id = r.id;
        s.variant = r.variant;
        s.kind = r.kind;
        s.worst = r.metric;
        out.push_back(s);
        metrics.emplace_back();
      }
      ClaimSummary& s = out[it->second];
      metrics[it->second].push_back(r.metric);
      const bool first = s.records == 0;
      ++s.records;
      s.holding += r.holds ? 1 : 0;
      if (first || (c.higher_is_worse ? r.metric > s.worst : r.metric < s.worst)) {
        s.worst = r.metric;
        std::string w;  // appends only: GCC 12 warns (-Wrestrict) on "literal" + std::string here
        if (r.layer >= 0) {
          w.append("layer ").append(std::to_string(r.layer));
          if (r.head >= 0) w.append(" head ").append(std::to_string(r.head));
        }
        if (r.step >= 0) {
          if (!w.empty()) w.push_back(' ');
          w.append("step ").append(std::to_string(r.step));
        }
        s.where = w.empty() ? "-" : w;
      }
    }
  }
  for (size_t x = 0; x < out.size(); ++x) {
    auto& m = metrics[x];
    std::sort(m.begin(), m.end());
    out[x].median = m.empty() ? 0.0 : m[m.size() / 2];
  }
  return out;
}

nlohmann::json CheckRecords::to_json(const nlohmann::json& meta) const {
  // H2O's claims always; another paper's when it has records (a run of H2O's claims alone lists
  // exactly what it did before other papers were registered).
  std::set<std::string> papers = {"h2o"};
  for (const auto& r : records_) papers.insert(claim_info(r.id).paper);
  nlohmann::json claims = nlohmann::json::array();
  for (const auto& c : claim_catalogue()) {
    if (c.closed_loop || !papers.count(c.paper)) continue;  // the closed loops are in their own JSON
    nlohmann::json j = {{"id", c.id},
                        {"title", c.title},
                        {"source", c.source},
                        {"metric", c.metric},
                        {"higher_is_worse", c.higher_is_worse}};
    if (c.paper != "h2o") j["paper"] = paper_info(c.paper).name, j["statement"] = c.statement;
    claims.push_back(std::move(j));
  }
  nlohmann::json sums = nlohmann::json::array();
  for (const auto& s : summaries())
    sums.push_back({{"id", s.id},
                    {"variant", s.variant},
                    {"kind", to_string(s.kind)},
                    {"records", s.records},
                    {"holding", s.holding},
                    {"worst", s.worst},
                    {"median", s.median},
                    {"where", s.where}});
  nlohmann::json recs = nlohmann::json::array();
  for (const auto& r : records_) recs.push_back(record_to_json(r));
  return {{"format", "kvoracle-report"},
          {"format_version", 1},
          {"meta", meta},
          {"theorem_failures", theorem_failures()},
          {"claims", claims},
          {"summary", sums},
          {"records", recs}};
}

}  // namespace kvo

#include "kvo/studies/eval.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

#include "kvo/core/cache_manager.hpp"
#include "kvo/core/error.hpp"
#include "kvo/model/evicting_decoder.hpp"
#include "kvo/model/recorder.hpp"
#include "kvo/studies/offline_schedule.hpp"
#include "log_probs.hpp"

namespace kvo::studies {

using namespace kvo::model;  // the engine the studies drive
namespace {

// Whether no unit of the model holds fewer than n tokens under this budget (the full cache).
bool keeps_everything(const Budget& budget, int n) { return !budget.has_overrides() && budget.total().resolve(n) >= n; }

}  // namespace

std::string kv_quantized_suffix(const KvQuantization& q) { return "+int" + std::to_string(q.bits); }

long eval_units(const EvalOptions& o) {
  const long variants = o.kv.on() ? 2 : 1;
  return static_cast<long>(o.tokens) *
         (1 + (o.kv.on() ? 1 : 0) + variants * static_cast<long>(o.policies.size() * o.budgets.size()));
}

EvalResult evaluate_policies(const Llama& model, const std::string& text, const EvalOptions& o) {
  const LlamaConfig& c = model.config();
  require(o.tokens >= 2 && o.tokens <= c.context, "eval: tokens must be in [2, " + std::to_string(c.context) + "]");
  require(!o.policies.empty() && !o.budgets.empty(), "eval: at least one policy and one budget");
  o.kv.validate();
  std::vector<int> ids = model.tokenizer().encode(text);
  require(static_cast<int>(ids.size()) >= o.tokens, "eval: the text has " + std::to_string(ids.size()) +
                                                        " tokens, fewer than the " + std::to_string(o.tokens) +
                                                        " asked for");
  ids.resize(static_cast<size_t>(o.tokens));
  const int n = o.tokens;
  for (const PolicyId id : o.policies)
    if (!policy_traits(id).offline) make_policy(o.run.with_policy(id).policy);  // bad parameters fail here
  // The full cache: one batched pass; its next-token distributions are the reference.
  EvalResult res;
  res.tokens = n;
  std::vector<std::vector<double>> full(static_cast<size_t>(n - 1));
  {
    KvCache cache = model.new_cache(n);
    const MatrixRM logits = model.forward(ids, cache, true);
    double nll = 0.0;
    for (int t = 0; t + 1 < n; ++t) {
      full[static_cast<size_t>(t)] = log_softmax(logits.row(t));
      nll -= full[static_cast<size_t>(t)][static_cast<size_t>(ids[static_cast<size_t>(t) + 1])];
      if (o.on_token) o.on_token();
    }
    if (o.on_token) o.on_token();
    res.full_ppl = std::exp(nll / (n - 1));
    res.full_bytes = static_cast<size_t>(n) * c.n_layers * c.n_kv_heads * c.head_dim * 2 * sizeof(float);
  }
  const bool want_oracle =
      std::any_of(o.policies.begin(), o.policies.end(), [](PolicyId id) { return policy_traits(id).offline; });
  Trace trace;
  if (want_oracle) {
    RecordOptions ro;
    ro.tokens = n;
    trace = record_trace(model, text, ro);
  }
  res.budget_scope = o.run.budget_scope;
  // One point: the decoder under a policy and budget, its K/V stored quantized or not.
  const auto decode = [&](EvalPoint& pt, PolicyId id, const Budget& budget, bool quantized) {
    CacheManagerOptions mo = closed_loop_manager(c, o.run, id, budget, n);
    if (policy_traits(id).offline) mo.run.policy.schedule = offline_schedules(id, trace, budget);
    KvEvictionManager mgr(mo);
    EvictingDecoder dec(model, mgr, decoder_slots(mgr));
    if (quantized) dec.set_kv_quantization(o.kv);
    double nll = 0.0, kl = 0.0;
    for (int t = 0; t < n; ++t) {
      const Eigen::RowVectorXf logits = dec.step(ids[static_cast<size_t>(t)]);
      if (t + 1 < n) {
        const std::vector<double> lp = log_softmax(logits);
        const auto& f = full[static_cast<size_t>(t)];
        nll -= lp[static_cast<size_t>(ids[static_cast<size_t>(t) + 1])];
        kl += kl_divergence(f, lp);
      }
      if (o.on_token) o.on_token();
    }
    pt.ppl = std::exp(nll / (n - 1));
    pt.mean_kl = kl / (n - 1);
    pt.peak_bytes = dec.peak_bytes_held();
  };
  const std::string suffix = o.kv.on() ? kv_quantized_suffix(o.kv) : "";
  res.kv_suffix = suffix;
  if (o.kv.on()) {  // the full cache with its K/V quantized
    EvalPoint pt;
    pt.id = PolicyId::Full;
    pt.policy = policy_name(PolicyId::Full) + suffix;
    pt.budget = "100%";
    pt.k = n;
    decode(pt, PolicyId::Full, o.run.budget.with_total(Amount{false, static_cast<double>(n)}), true);
    res.points.push_back(pt);
  }
  for (const PolicyId id : o.policies)
    for (const Amount& b : o.budgets)
      for (const bool quantized : o.kv.on() ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
        EvalPoint pt;
        pt.id = id;
        pt.policy = policy_name(id) + (quantized ? suffix : "");
        pt.budget = b.str();
        pt.k = std::min(b.resolve(n), n);
        const Budget budget = o.run.budget.with_total(b);
        if (!quantized && keeps_everything(budget, n)) {  // the full cache: nothing is ever evicted
          pt.ppl = res.full_ppl;
          pt.peak_bytes = res.full_bytes;
          for (int t = 0; t < n; ++t)
            if (o.on_token) o.on_token();
        } else {
          decode(pt, id, budget, quantized);
        }
        res.points.push_back(pt);
      }
  return res;
}

}  // namespace kvo::studies

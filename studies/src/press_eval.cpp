#include "kvo/studies/press_eval.hpp"

#include <algorithm>

#include "kvo/core/adakv.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/policy_press.hpp"
#include "kvo/core/replay.hpp"
#include "kvo/core/text_list.hpp"
#include "kvo/model/recorder.hpp"
#include "kvo/oracle/prefill_oracle.hpp"
#include "kvo/oracle/shared_prefill.hpp"
#include "log_probs.hpp"

namespace kvo::studies {

using namespace kvo::model;  // the engine the studies drive
namespace {

using UnitSets = std::vector<std::vector<int>>;  // kept prompt positions per (layer, KV head)

// Logits of the continuation `rest` after the prompt's cache is cut to `kept`.
MatrixRM continuation_logits(const Llama& m, const KvCache& prompt, std::span<const int> rest, const UnitSets& kept,
                             int P) {
  KvCache pc = compressed_cache(m, prompt, kept, P, static_cast<int>(rest.size()));
  return m.forward(rest, pc, true);
}

struct PlannedRow {
  PressEvalRow row;
  UnitSets kept;
};

}  // namespace

std::string shared_optimum_row(BudgetScope scope) { return budget_scoped_name("optimum", scope); }

KvCache compressed_cache(const Llama& m, const KvCache& prompt, const std::vector<std::vector<int>>& kept, int P,
                         int room) {
  const LlamaConfig& c = m.config();
  const int hd = c.head_dim, n_kv = c.n_kv_heads;
  require(kept.size() == static_cast<size_t>(c.n_layers * n_kv), "compressed cache: one kept set per (layer, KV head)");
  size_t kmax = 0;
  for (const auto& s : kept) kmax = std::max(kmax, s.size());
  KvCache pc = m.new_cache(static_cast<int>(kmax) + room);
  pc.start.assign(kept.size(), 0);
  for (int l = 0; l < c.n_layers; ++l) {
    for (int kv = 0; kv < n_kv; ++kv) {
      const auto& s = kept[static_cast<size_t>(l * n_kv + kv)];
      const size_t k = s.size();
      pc.start[static_cast<size_t>(l * n_kv + kv)] = static_cast<int>(kmax - k);
      for (size_t x = 0; x < k; ++x) {
        const int row = static_cast<int>(kmax - k + x);
        pc.k[static_cast<size_t>(l)].block(row, kv * hd, 1, hd) =
            prompt.k[static_cast<size_t>(l)].block(s[x], kv * hd, 1, hd);
        pc.v[static_cast<size_t>(l)].block(row, kv * hd, 1, hd) =
            prompt.v[static_cast<size_t>(l)].block(s[x], kv * hd, 1, hd);
      }
    }
  }
  pc.length = static_cast<int>(kmax);
  pc.position_shift = P - static_cast<int>(kmax);
  return pc;
}

long press_eval_rows(const PressEvalOptions& o) {
  return static_cast<long>(o.presses.size() * (1 + o.alpha_safeguard.size()) +
                           o.policies.size() * o.policy_ratios.size() +
                           (1 + o.reference_scopes.size()) * o.reference_ratios.size());
}

PressEvalResult evaluate_presses(const Llama& model, const std::string& text, const PressEvalOptions& o) {
  const LlamaConfig& c = model.config();
  const int n = o.tokens, P = o.prompt_len;
  require(n >= 3 && n <= c.context, "prefill evaluation: tokens must be in [3, " + std::to_string(c.context) + "]");
  require(P >= 1 && P <= n - 2, "prefill evaluation: the prompt must be in [1, " + std::to_string(n - 2) +
                                    "] tokens so that a continuation of 2 or more follows, got " + std::to_string(P));
  require(!o.presses.empty() || !o.reference_ratios.empty(), "prefill evaluation: no press and no reference to run");
  for (const auto* ratios : {&o.reference_ratios, &o.policy_ratios})
    for (double r : *ratios)
      require(r >= 0 && r < 1, "prefill evaluation: compression ratio " + std::to_string(r) + " is outside [0, 1)");
  std::vector<int> ids = model.tokenizer().encode(text);
  require(static_cast<int>(ids.size()) >= n, "prefill evaluation: the text has " + std::to_string(ids.size()) +
                                                 " tokens, fewer than the " + std::to_string(n) + " asked for");
  ids.resize(static_cast<size_t>(n));
  // The text's trace by this model: what the presses score and the optimum reads.
  RecordOptions ro;
  ro.tokens = n;
  ro.prompt_len = P;
  const Trace tr = record_trace(model, text, ro);
  const int L = c.n_layers, n_kv = c.n_kv_heads, units = L * n_kv;
  std::vector<PrefillUnit> unit;
  for (int l = 0; l < L; ++l)
    for (int kv = 0; kv < n_kv; ++kv) unit.push_back(prefill_unit(tr, l, kv, P));
  // Every row's kept sets, before any decoding (a press the prompt cannot serve fails here).
  std::vector<PlannedRow> plan;
  for (double alpha : o.alpha_safeguard) adakv_safeguard(1, alpha);  // refused before any work
  for (const PressOptions& po : o.presses) {
    PlannedRow pr;
    pr.row.press = po.id;
    pr.row.name = prefill_set_label({PrefillSetKind::Press, po.id, PolicyId::H2O});
    pr.row.compression_ratio = po.compression_ratio;
    std::vector<PressResult> layers;
    for (int l = 0; l < L; ++l) {
      layers.push_back(run_press(press_layer_of(tr, l, P), po));
      for (const auto& s : layers.back().kept) pr.kept.push_back(s);
    }
    plan.push_back(pr);
    // kvpress's AdaKVPress around the same press: its scores, the layer's heads sharing H n_kept.
    for (double alpha : o.alpha_safeguard) {
      pr.row.set = PressEvalSet::AdaKV;
      pr.row.alpha_safeguard = alpha;
      pr.row.name = "adakv(" + press_name(po.id) + ", " + join_numbers({alpha}) + ")";
      pr.kept.clear();
      for (const PressResult& r : layers)
        for (auto& s : adakv_kept(r.scores, press_n_kept(P, po.compression_ratio), alpha))
          pr.kept.push_back(std::move(s));
      plan.push_back(pr);
    }
  }
  for (const PolicyId id : o.policies)
    for (double ratio : o.policy_ratios)
      if (const std::string why = policy_press_refusal(id, ratio); !why.empty())
        throw Error("prefill evaluation: " + why);
  for (const PolicyId id : o.policies)
    for (double ratio : o.policy_ratios) {
      PlannedRow pr;
      pr.row.set = PressEvalSet::Policy;
      pr.row.policy = id;
      pr.row.name = prefill_set_label({PrefillSetKind::Policy, PressId::SnapKV, id});
      pr.row.compression_ratio = ratio;
      pr.kept = policy_prefill_kept(tr, o.run, id, P, press_n_kept(P, ratio));
      plan.push_back(std::move(pr));
    }
  // The mass optimum in each budget scope (head: each unit's k heaviest keys; a shared scope: each
  // unit's heaviest keys at the counts its exact allocation of the same total gives it), then the
  // output bound's minimiser, per ratio.
  for (double ratio : o.reference_ratios) {
    const int k = press_n_kept(P, ratio);
    PlannedRow pr;
    pr.row.set = PressEvalSet::MassOptimum;
    pr.row.compression_ratio = ratio;
    for (BudgetScope scope : o.reference_scopes) {
      pr.row.scope = scope;
      pr.row.name = shared_optimum_row(scope);
      pr.kept = shared_prefill_sets(unit, n_kv, scope, k);
      plan.push_back(pr);
    }
  }
  for (double ratio : o.reference_ratios) {
    PlannedRow pr;
    pr.row.set = PressEvalSet::OutputBoundOptimum;
    pr.row.name = "optimum_output_bound";
    pr.row.compression_ratio = ratio;
    for (const PrefillUnit& u : unit) pr.kept.push_back(solve_output_bound(u, press_n_kept(P, ratio)).set);
    plan.push_back(std::move(pr));
  }
  // Retained mass and output error per unit: one pass over the following queries per unit.
  const double queries = n - P;
  std::vector<double> fraction(plan.size(), 0.0);  // mean over the units of the mass over the optimum's
  std::vector<double> kept_mass(plan.size(), 0.0);
  double prompt_mass = 0.0;
  for (const PrefillUnit& u : unit) prompt_mass += u.prompt_mass;
  for (int x = 0; x < units; ++x) {
    const PrefillUnit& u = unit[static_cast<size_t>(x)];
    std::vector<std::vector<int>> sets;
    for (const PlannedRow& pr : plan) sets.push_back(pr.kept[static_cast<size_t>(x)]);
    const std::vector<double> e = output_errors(tr, u.layer, u.kv_head, P, sets);
    for (size_t r = 0; r < plan.size(); ++r) {
      PressEvalRow& row = plan[r].row;
      const auto& s = sets[r];
      const double opt = solve_prefill(u, static_cast<int>(s.size())).value, value = prefill_value(u, s);
      fraction[r] += (opt > 0 ? value / opt : 1.0) / units;
      kept_mass[r] += value;
      row.output_error += e[r] / queries / units;
      row.mean_k += static_cast<double>(s.size()) / units;
    }
  }
  for (size_t r = 0; r < plan.size(); ++r) {
    plan[r].row.mass_fraction = fraction[r];
    plan[r].row.mass_share = prompt_mass > 0 ? kept_mass[r] / prompt_mass : 1.0;
  }
  // The full prefill, once; its last row predicts the first continuation token for every row.
  PressEvalResult res;
  res.tokens = n;
  res.prompt_len = P;
  const size_t row_bytes = static_cast<size_t>(c.head_dim) * 2 * sizeof(float);
  res.full_bytes = static_cast<size_t>(n - 1) * units * row_bytes;  // every token fed
  KvCache prompt = model.new_cache(P);
  const MatrixRM prompt_logits = model.forward(std::span<const int>(ids).first(static_cast<size_t>(P)), prompt, true);
  const std::vector<double> first = log_softmax(prompt_logits.row(P - 1));
  const std::span<const int> rest =
      std::span<const int>(ids).subspan(static_cast<size_t>(P), static_cast<size_t>(n - P - 1));
  UnitSets whole(static_cast<size_t>(units), std::vector<int>(static_cast<size_t>(P)));
  for (auto& s : whole)
    for (int j = 0; j < P; ++j) s[static_cast<size_t>(j)] = j;
  const MatrixRM full_logits = continuation_logits(model, prompt, rest, whole, P);
  std::vector<std::vector<double>> full{first};
  for (int t = 0; t + 1 < n - P; ++t) full.push_back(log_softmax(full_logits.row(t)));
  auto nll_of = [&](const std::vector<std::vector<double>>& lp) {
    double s = 0.0;
    for (int t = 0; t < n - P; ++t)
      s -= lp[static_cast<size_t>(t)][static_cast<size_t>(ids[static_cast<size_t>(P + t)])];
    return s / (n - P);
  };
  res.full_nll = nll_of(full);
  for (PlannedRow& pr : plan) {
    const MatrixRM logits = continuation_logits(model, prompt, rest, pr.kept, P);
    std::vector<std::vector<double>> lp{first};
    double kl = 0.0;  // the first prediction is the full cache's: KL 0
    for (int t = 0; t + 1 < n - P; ++t) {
      lp.push_back(log_softmax(logits.row(t)));
      kl += kl_divergence(full[static_cast<size_t>(t) + 1], lp.back());
    }
    pr.row.nll = nll_of(lp);
    pr.row.mean_kl = kl / (n - P);
    size_t rows = 0;
    for (const auto& s : pr.kept) rows += s.size() + static_cast<size_t>(n - P - 1);
    pr.row.kv_bytes = rows * row_bytes;
    res.rows.push_back(pr.row);
    if (o.on_row) o.on_row();
  }
  return res;
}

}  // namespace kvo::studies

#include "kvo/core/replay_lockstep.hpp"

#include <atomic>
#include <barrier>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/parallel.hpp"
#include "kvo/core/policy_registry.hpp"
#include "replay_units.hpp"

namespace kvo {
namespace {

using namespace replay_detail;

// One (layer, KV head): its query heads' views and this step's rows, shared by every replay.
struct LockstepUnit {
  std::vector<HeadView> views;
  std::vector<std::vector<double>> ahead, probs, acc;  // per query head: kLockstepAhead logit rows, a_i, A_i
  std::vector<HeadRow> rows;
};

// One replay: a stepper per (layer, KV head), the settlers of its groups, its end steps.
struct LockstepRun {
  std::vector<std::unique_ptr<UnitStepper>> steppers;  // by unit index
  std::vector<GroupSettler> settlers;
  std::vector<std::vector<int>> ends;
};

constexpr int kLockstepAhead = 4;  // queries whose logits are computed together (they share reads of K)

}  // namespace

std::vector<std::vector<int>> end_steps_of(const Trace& tr, const ReplayResult& result) {
  const int n = tr.n_tokens, g = tr.group_size();
  std::vector<std::vector<int>> ends(static_cast<size_t>(tr.n_layers) * static_cast<size_t>(tr.n_kv_heads),
                                     std::vector<int>(static_cast<size_t>(n), n - 1));
  require(result.gqa != GqaMode::PerQueryHead, "internal: end steps are per (layer, KV head)");
  for (const HeadReplay& h : result.heads) {
    if (h.head % g != 0) continue;  // the group's first query head: they share the cache
    std::vector<int>& end = ends[static_cast<size_t>(h.layer * tr.n_kv_heads + h.head / g)];
    for (int i = 0; i < n; ++i)
      for (int j : h.steps[static_cast<size_t>(i)].evicted) end[static_cast<size_t>(j)] = i - 1;
  }
  return ends;
}

UnitEndSteps replay_end_steps(const Trace& tr, const std::vector<ReplayOptions>& options, int threads,
                              const std::function<void(int step)>& on_step) {
  const int n = tr.n_tokens, H = tr.n_kv_heads;
  const size_t U = static_cast<size_t>(tr.n_layers) * static_cast<size_t>(H);
  std::vector<ReplayOptions> runs_options;
  for (const ReplayOptions& given : options) {
    ReplayOptions o = prepared(tr, given);
    require(o.run.gqa != GqaMode::PerQueryHead, "internal: a lockstep replay's units are (layer, KV head)");
    require(o.run.layers.empty() && o.run.heads.empty(), "internal: a lockstep replay runs every layer and head");
    const auto probe = make_policy(o.run.policy);
    require(!needs_dense(o.run.policy),
            "internal: a lockstep replay has no dense attention for policy " + probe->name());
    require(probe->nested(),
            "internal: a lockstep replay records end steps, which policy " + probe->name() + " (re-admitting) has not");
    runs_options.push_back(std::move(o));
  }
  std::vector<LockstepUnit> units(U);
  for (size_t u = 0; u < U; ++u) {
    LockstepUnit& s = units[u];
    const int layer = static_cast<int>(u) / H, kv = static_cast<int>(u) % H, g = tr.group_size();
    for (int h = kv * g; h < (kv + 1) * g; ++h) s.views.push_back(HeadView(tr, layer, h).with_key_tiles());
    s.ahead.assign(s.views.size(), std::vector<double>(static_cast<size_t>(kLockstepAhead) * static_cast<size_t>(n)));
    s.probs.assign(s.views.size(), std::vector<double>(static_cast<size_t>(n)));
    s.acc.assign(s.views.size(), std::vector<double>(static_cast<size_t>(n), 0.0));
    s.rows.resize(s.views.size());
  }
  std::vector<LockstepRun> runs(runs_options.size());
  std::vector<std::pair<size_t, size_t>> groups;  // (run, settler) of every group of every run
  for (size_t r = 0; r < runs.size(); ++r) {
    const ReplayOptions& o = runs_options[r];
    LockstepRun& run = runs[r];
    run.steppers.resize(U);
    run.ends.assign(U, std::vector<int>(static_cast<size_t>(n), n - 1));
    for (const Unit& g : make_units(tr, o)) {
      std::vector<EvictionPolicy*> policies;
      for (const CacheUnit& cu : g.members) {
        const size_t u = static_cast<size_t>(cu.layer) * static_cast<size_t>(H) + static_cast<size_t>(cu.budget_head);
        ResolvedBudget budget;
        run.steppers[u] = make_stepper(o, cu, units[u].views, n, nullptr, &budget);
        policies.push_back(&run.steppers[u]->policy());
      }
      run.settlers.emplace_back(o, g, std::move(policies), n);
      groups.emplace_back(r, run.settlers.size() - 1);
    }
  }
  // Each step in three phases, every worker taking items of a phase until none is left, a barrier
  // between phases: (1) per unit, its rows once and every run's observe; (2) per group of every
  // run, its settlement; (3) per unit, every run's record, whose evictions end tokens.
  const int workers = worker_count(threads, static_cast<int>(U));
  std::atomic<int> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex mu;
  int step = 0, phase = 0;
  const auto fail = [&] {
    std::lock_guard<std::mutex> lock(mu);
    if (!error) error = std::current_exception();
    failed = true;
  };
  std::barrier sync(workers, [&]() noexcept {
    next = 0;
    if (++phase % 3 != 0) return;
    try {
      if (on_step && !failed) on_step(step);
    } catch (...) {
      fail();
    }
    ++step;
  });
  std::vector<std::vector<StepRecord>> recs(U);
  const auto observe = [&](int i, size_t u) {
    LockstepUnit& s = units[u];
    const size_t len = static_cast<size_t>(i) + 1;
    for (size_t x = 0; x < s.views.size(); ++x) {
      if (i % kLockstepAhead == 0) {
        std::vector<int> queries;
        for (int q = i; q < std::min(n, i + kLockstepAhead); ++q) queries.push_back(q);
        s.views[x].prefix_logits(queries, s.ahead[x].data(), static_cast<size_t>(n));
      }
      const std::span<const double> logits(s.ahead[x].data() + static_cast<size_t>(i % kLockstepAhead) * n, len);
      softmax(logits, std::span<double>(s.probs[x].data(), len));
      for (size_t j = 0; j < len; ++j) s.acc[x][j] += s.probs[x][j];
      s.rows[x] = {logits, std::span<const double>(s.probs[x].data(), len),
                   std::span<const double>(s.acc[x].data(), len)};
    }
    for (LockstepRun& run : runs) run.steppers[u]->observe(i, s.rows);
  };
  const auto record = [&](int i, size_t u) {
    recs[u].resize(units[u].rows.size());
    for (LockstepRun& run : runs) {
      run.steppers[u]->record(i, units[u].rows, recs[u]);
      for (int j : recs[u].front().evicted) run.ends[u][static_cast<size_t>(j)] = i - 1;
    }
  };
  const int counts[3] = {static_cast<int>(U), static_cast<int>(groups.size()), static_cast<int>(U)};
  const auto run_phase = [&](int p, int i, size_t t) {
    if (p == 0) observe(i, t);
    if (p == 1) runs[groups[t].first].settlers[groups[t].second].settle(i);
    if (p == 2) record(i, t);
  };
  const auto worker = [&] {
    for (int i = 0; i < n; ++i) {
      for (int p = 0; p < 3; ++p) {
        for (int t = next++; t < counts[p] && !failed; t = next++) {
          try {
            run_phase(p, i, static_cast<size_t>(t));
          } catch (...) {
            fail();
          }
        }
        sync.arrive_and_wait();
      }
      if (failed) return;  // every worker sees it after the same barrier
    }
  };
  std::vector<std::thread> pool;
  for (int w = 1; w < workers; ++w) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  UnitEndSteps out;
  for (LockstepRun& run : runs) out.push_back(std::move(run.ends));
  return out;
}

}  // namespace kvo

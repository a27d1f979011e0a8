#include "kvo/scaleout/unit_runner.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>

#include "channel.hpp"
#include "kvo/core/error.hpp"
#include "kvo/scaleout/checkpoint.hpp"
#include "kvo/scaleout/team.hpp"

namespace kvo::scaleout {
namespace {

using namespace std::chrono_literals;
using detail::Message;

// Threads computing units from a queue; finished units wait in an outbox for the main thread,
// which alone talks to the other ranks (MPI_THREAD_FUNNELED).
class Pool {
 public:
  struct Done {
    int unit = 0;
    std::string result, error;  // error: non-empty when the unit threw
  };
  Pool(int threads, const UnitWork& work) : work_(work) {
    for (int t = 0; t < std::max(1, threads); ++t) threads_.emplace_back([this] { loop(); });
  }
  ~Pool() {
    {
      std::lock_guard lock(mu_);
      closed_ = true;
      todo_.clear();
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void push(int unit) {
    {
      std::lock_guard lock(mu_);
      todo_.push_back(unit);
    }
    cv_.notify_all();
  }
  // Finished units, waiting up to `timeout` for the first.
  std::vector<Done> take(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    done_cv_.wait_for(lock, timeout, [&] { return !done_.empty(); });
    std::vector<Done> out(std::make_move_iterator(done_.begin()), std::make_move_iterator(done_.end()));
    done_.clear();
    return out;
  }

 private:
  void loop() {
    for (;;) {
      int unit = 0;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return closed_ || !todo_.empty(); });
        if (todo_.empty()) return;
        unit = todo_.front();
        todo_.pop_front();
      }
      Done d{unit, {}, {}};
      try {
        d.result = work_(unit);
      } catch (const std::exception& e) {
        d.error = e.what();
        if (d.error.empty()) d.error = "unknown error";
      }
      {
        std::lock_guard lock(mu_);
        done_.push_back(std::move(d));
      }
      done_cv_.notify_all();
    }
  }
  const UnitWork& work_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::deque<int> todo_;
  std::vector<Done> done_;
  bool closed_ = false;
  std::vector<std::thread> threads_;
};

std::uint64_t fingerprint(const UnitPlan& plan) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  auto mix = [&](const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xffu) * 1099511628211ull;
  };
  mix(plan.section);
  for (const auto& n : plan.names) mix(n);
  return h ^ plan.names.size();
}

// Test hooks (docs/scale-out.md): KVO_TEST_KILL_AFTER=N kills rank KVO_TEST_KILL_RANK (default 0)
// by SIGKILL once it has finished N units (rank 0: stored them in the checkpoint); and
// KVO_TEST_FAIL_UNIT=U makes unit U throw on whichever rank computes it.
long env_long(const char* name, long fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtol(v, nullptr, 10) : fallback;
}
void maybe_kill(long finished) {
  const long after = env_long("KVO_TEST_KILL_AFTER", -1);
  if (after >= 0 && finished >= after && Team::world().rank() == env_long("KVO_TEST_KILL_RANK", 0)) {
    ::kill(::getpid(), SIGKILL);
    ::pause();
  }
}

std::string fail_text(int rank, const UnitPlan& plan, int unit, const std::string& what) {
  std::string where = plan.names[static_cast<size_t>(unit)];
  return (rank > 0 ? "rank " + std::to_string(rank) + ", " : std::string()) + where + ": " + what;
}

std::vector<std::string> run_root(const UnitPlan& plan, const UnitWork& work, const UnitRunOptions& o,
                                  std::uint64_t print) {
  const Team& team = Team::world();
  const int n = static_cast<int>(plan.names.size());
  std::vector<std::string> results(static_cast<size_t>(n));
  std::vector<char> have(static_cast<size_t>(n), 0);
  std::optional<std::string> failure;
  long finished = 0;
  auto tick = [&] {
    if (o.on_done) o.on_done();
  };
  if (o.checkpoint)
    for (int u = 0; u < n; ++u)
      if (auto r = o.checkpoint->load(plan.section, u)) {
        results[static_cast<size_t>(u)] = std::move(*r);
        have[static_cast<size_t>(u)] = 1;
        tick();
      }
  std::vector<int> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return plan.cost[static_cast<size_t>(a)] > plan.cost[static_cast<size_t>(b)]; });
  std::deque<int> queue;
  for (int u : order)
    if (!have[static_cast<size_t>(u)]) queue.push_back(u);
  long remaining = static_cast<long>(queue.size());

  auto finish = [&](int u, std::string bytes) {
    if (failure || have[static_cast<size_t>(u)]) return;
    try {
      if (o.checkpoint) o.checkpoint->store(plan.section, u, bytes);
    } catch (const std::exception& e) {
      failure = e.what();
      return;
    }
    results[static_cast<size_t>(u)] = std::move(bytes);
    have[static_cast<size_t>(u)] = 1;
    --remaining;
    tick();
    maybe_kill(++finished);
  };

  struct Worker {
    bool ready = false, stopped = false;
    int waiting = 0;  // slots asking for a unit
  };
  std::vector<Worker> workers(static_cast<size_t>(team.size()));
  auto serve = [&](int w) {
    Worker& x = workers[static_cast<size_t>(w)];
    while (!failure && x.waiting > 0 && !queue.empty()) {
      detail::send(w, detail::kAssign, detail::pack_int(queue.front()));
      queue.pop_front();
      --x.waiting;
    }
  };
  auto handle = [&](Message& m) {
    Worker& x = workers[static_cast<size_t>(m.source)];
    switch (m.tag) {
      case detail::kRequest:
        if (static_cast<std::uint64_t>(detail::unpack_int(m.body, 8)) != print) {
          failure = "rank " + std::to_string(m.source) +
                    " planned other work units than rank 0: the ranks read different traces or arguments";
        }
        x.ready = true;
        x.waiting = static_cast<int>(detail::unpack_int(m.body, 0));
        break;
      case detail::kResult:
        ++x.waiting;
        finish(static_cast<int>(detail::unpack_int(m.body)), m.body.substr(8));
        break;
      case detail::kFail:
        if (!failure)
          failure = fail_text(m.source, plan, static_cast<int>(detail::unpack_int(m.body)), m.body.substr(8));
        break;
      case detail::kStopped:
        x.stopped = true;
        break;
      default:
        if (!failure)
          failure = "internal: unexpected message " + std::to_string(m.tag) + " from rank " + std::to_string(m.source);
    }
    serve(m.source);
  };

  {
    Pool pool(o.threads, work);
    int local = 0;  // units in rank 0's own pool
    const auto wait = team.distributed() ? 1ms : 200ms;
    for (;;) {
      while (auto m = detail::poll()) handle(*m);
      while (!failure && local < std::max(1, o.threads) && !queue.empty()) {
        pool.push(queue.front());
        queue.pop_front();
        ++local;
      }
      if (failure) break;
      bool all_ready = true;
      for (int w = 1; w < team.size(); ++w) all_ready = all_ready && workers[static_cast<size_t>(w)].ready;
      if (remaining == 0 && all_ready) break;
      for (auto& d : pool.take(wait)) {
        --local;
        if (!d.error.empty()) {
          if (!failure) failure = fail_text(0, plan, d.unit, d.error);
        } else {
          finish(d.unit, std::move(d.result));
        }
      }
    }
    if (failure) {
      // Every worker stops; rank 0 drains what they still send until each acknowledges.
      for (int w = 1; w < team.size(); ++w) detail::send(w, detail::kStop, *failure);
      for (;;) {
        bool all = true;
        for (int w = 1; w < team.size(); ++w) all = all && workers[static_cast<size_t>(w)].stopped;
        if (all) break;
        if (auto m = detail::poll()) {
          if (m->tag == detail::kStopped) workers[static_cast<size_t>(m->source)].stopped = true;
        } else {
          std::this_thread::sleep_for(1ms);
        }
      }
    } else {
      for (int w = 1; w < team.size(); ++w) detail::send(w, detail::kDone, {});
    }
  }  // the pool's threads finish their units in flight here
  if (failure) throw TeamError(*failure);
  return results;
}

void run_worker(const UnitWork& work, const UnitRunOptions& o, std::uint64_t print) {
  const int threads = std::max(1, o.threads);
  detail::send(0, detail::kRequest, detail::pack_int(threads) + detail::pack_int(static_cast<std::int64_t>(print)));
  std::optional<std::string> stop;
  long finished = 0;
  {
    Pool pool(threads, work);
    bool done = false;
    while (!done && !stop) {
      while (auto m = detail::poll()) {
        if (m->tag == detail::kAssign) {
          pool.push(static_cast<int>(detail::unpack_int(m->body)));
        } else if (m->tag == detail::kDone) {
          done = true;
        } else if (m->tag == detail::kStop) {
          stop = m->body;
          detail::send(0, detail::kStopped, {});
          break;
        }
      }
      if (done || stop) break;
      for (auto& d : pool.take(1ms)) {
        if (!d.error.empty()) {
          detail::send(0, detail::kFail, detail::pack_int(d.unit) + d.error);
        } else {
          detail::send(0, detail::kResult, detail::pack_int(d.unit) + d.result);
          maybe_kill(++finished);
        }
      }
    }
  }
  if (stop) throw TeamError(*stop);
}

}  // namespace

std::vector<std::string> run_units(const UnitPlan& plan, const UnitWork& work, const UnitRunOptions& options) {
  require(plan.cost.size() == plan.names.size(), "internal: a unit plan needs one cost per unit");
  const long fail_unit = env_long("KVO_TEST_FAIL_UNIT", -1);
  const UnitWork guarded = fail_unit < 0 ? work : UnitWork([&](int u) -> std::string {
    if (u == fail_unit) throw Error("injected failure (KVO_TEST_FAIL_UNIT)");
    return work(u);
  });
  const std::uint64_t print = fingerprint(plan);
  if (Team::world().root()) return run_root(plan, guarded, options, print);
  run_worker(guarded, options, print);
  return {};
}

}  // namespace kvo::scaleout

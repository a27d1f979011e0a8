#include "kvo/core/contract_group.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

#include "kvo/core/error.hpp"
#include "kvo/core/page_shape.hpp"
#include "kvo/core/policy_registry.hpp"

namespace kvo {
namespace {

struct Candidate {
  double score;
  int token;  // or page
  size_t set;
  bool operator<(const Candidate& o) const { return std::tie(score, token, set) < std::tie(o.score, o.token, o.set); }
};

// The `count` lowest candidates, in order.
std::vector<Candidate> lowest(std::vector<Candidate> cand, long count) {
  count = std::min<long>(count, static_cast<long>(cand.size()));
  std::partial_sort(cand.begin(), cand.begin() + count, cand.end());
  cand.resize(static_cast<size_t>(count));
  return cand;
}

}  // namespace

RunConfig run_under_contract(RunConfig run, const EvictionContract& c) {
  require(policy_traits(run.policy.id).prefill_score,
          "policy " + policy_name(run.policy.id) + " has no per-token score to evict by under a contract (" +
              policy_names_where([](const PolicyTraits& t) { return t.prefill_score; }) + " have one)");
  run.budget = Budget(Amount{false, static_cast<double>(c.budget)},
                      Amount{false, static_cast<double>(std::max(0, c.recent - c.delay))});
  run.budget_scope = BudgetScope::Head;
  run.prompt_len = 0;
  return run;
}

ContractGroup::ContractGroup(std::vector<EvictionPolicy*> units, std::span<const ContractUnit> keys,
                             EvictionContract contract, int n)
    : c_(contract), n_(n) {
  c_.validate(n);
  require(!units.empty() && keys.size() == units.size(), "internal: a contract group needs each unit's layer and head");
  sets_ = c_.sets_of(keys);
  for (const auto& set : sets_) {
    set_units_.emplace_back();
    for (size_t u : set) set_units_.back().push_back(keys[u]);
  }
  groups_ = c_.budget_groups_of(keys, sets_);
  admitted_.assign(groups_.size(), 0);
  for (EvictionPolicy* p : units) {
    auto* nested = dynamic_cast<NestedPolicy*>(p);
    require(nested != nullptr, "policy " + p->name() + " is not nested; it cannot obey a contract");
    units_.push_back(nested);
  }
  compress_after_.assign(static_cast<size_t>(n), 0);
  for (int c : c_.compression_steps(n)) compress_after_[static_cast<size_t>(c)] = 1;
  pending_.resize(sets_.size());
  is_pending_.assign(sets_.size(), std::vector<char>(static_cast<size_t>(n), 0));
}

const std::vector<int>& ContractGroup::held(size_t set) const { return units_[sets_.at(set).front()]->cache(); }

size_t ContractGroup::widest_budget_group() const {
  size_t widest = 1;
  for (const auto& g : groups_) widest = std::max(widest, g.size());
  return widest;
}

void ContractGroup::set_steer(EvictionSteer steer) {
  require(!c_.admission_only && c_.page_size == 1,
          "an eviction steer replaces single tokens; this contract evicts whole pages or admits only");
  steer_ = std::move(steer);
}

void ContractGroup::evict(size_t set, std::vector<int> tokens) {
  if (tokens.empty()) return;
  std::sort(tokens.begin(), tokens.end());
  for (size_t u : sets_[set]) units_[u]->evict(tokens);
}

void ContractGroup::settle(int i) {
  for (size_t x = 0; x < sets_.size(); ++x) {  // delayed evictions that fall due
    std::vector<int> due;
    std::erase_if(pending_[x], [&](const std::pair<int, int>& p) {
      if (p.first != i) return false;
      due.push_back(p.second);
      is_pending_[x][static_cast<size_t>(p.second)] = 0;
      return true;
    });
    evict(x, std::move(due));
  }
  if (!c_.admission_only && c_.compresses() && !compress_after_[static_cast<size_t>(i)]) return;
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (c_.admission_only)
      settle_admission(i, groups_[g], admitted_[g]);
    else if (c_.page_size > 1)
      settle_pages(i, groups_[g]);
    else
      settle_tokens(i, groups_[g]);
  }
}

std::vector<double> ContractGroup::set_scores(size_t set) const {
  std::vector<double> score(static_cast<size_t>(n_), 0.0);
  for (size_t u : sets_[set]) {
    const std::vector<double> su = units_[u]->eviction_scores();
    require(!su.empty(), "policy " + units_[u]->name() + " has no per-token score; it cannot obey a contract");
    for (int j : held(set)) score[static_cast<size_t>(j)] += su[static_cast<size_t>(j)];
  }
  return score;
}

void ContractGroup::settle_tokens(int i, const std::vector<size_t>& group) {
  const int s = c_.sinks, d = c_.delay;
  const long capacity = static_cast<long>(group.size()) * (c_.budget - d);
  long live = 0;
  for (size_t x : group) live += static_cast<long>(held(x).size() - pending_[x].size());
  const long excess = live - capacity;
  if (excess <= 0) return;
  // Candidates: past the sinks, out of the window by the time the eviction takes effect, not
  // already decided; scored by the sum of the set's units' scores.
  const int newest = i + d - c_.recent;
  std::vector<Candidate> cand;
  std::vector<std::vector<double>> scores(sets_.size());
  for (size_t x : group) {
    scores[x] = set_scores(x);
    const std::vector<double>& score = scores[x];
    for (int j : held(x))
      if (j >= s && j <= newest && !is_pending_[x][static_cast<size_t>(j)] &&
          !std::isinf(score[static_cast<size_t>(j)]))
        cand.push_back({score[static_cast<size_t>(j)], j, x});
  }
  require(static_cast<long>(cand.size()) >= excess, "internal: a contract group has fewer candidates than its excess");
  std::vector<std::vector<int>> chosen(sets_.size());
  for (const Candidate& c : lowest(cand, excess)) chosen[c.set].push_back(c.token);
  if (steer_) {
    for (size_t x : group) {
      if (chosen[x].empty()) continue;
      std::vector<int> candidates;
      for (const Candidate& c : cand)
        if (c.set == x) candidates.push_back(c.token);
      std::sort(candidates.begin(), candidates.end());
      std::sort(chosen[x].begin(), chosen[x].end());
      const size_t count = chosen[x].size();
      steer_(EvictionChoice{0, i, set_units_[x], candidates, scores[x]}, chosen[x]);
      std::sort(chosen[x].begin(), chosen[x].end());
      require(chosen[x].size() == count && std::adjacent_find(chosen[x].begin(), chosen[x].end()) == chosen[x].end(),
              "eviction steer at step " + std::to_string(i) + ": it must name " + std::to_string(count) +
                  " distinct tokens");
      for (int j : chosen[x])
        require(std::binary_search(candidates.begin(), candidates.end(), j),
                "eviction steer at step " + std::to_string(i) + ": token " + std::to_string(j) +
                    " is not one the contract could evict (held, past the sinks, outside the window)");
    }
  }
  for (size_t x : group) {
    if (d == 0) {
      evict(x, std::move(chosen[x]));
      continue;
    }
    for (int j : chosen[x]) {
      pending_[x].emplace_back(i + d, j);
      is_pending_[x][static_cast<size_t>(j)] = 1;
    }
  }
}

void ContractGroup::settle_pages(int i, const std::vector<size_t>& group) {
  const int s = c_.sinks, b = c_.page_size;
  if (i < s || (i - s) % b != 0) return;  // pages are evicted when a new one is allocated
  const PageShape shape = page_shape(c_.budget - s, c_.recent, b);
  const int current = (i - s) / b;
  long held_pages = 0;
  std::vector<Candidate> cand;
  std::vector<std::vector<std::vector<int>>> page_tokens(sets_.size());
  for (size_t x : group) {
    const std::vector<double> score = set_scores(x);
    auto& pages = page_tokens[x];
    pages.assign(static_cast<size_t>(current) + 1, {});
    for (int j : held(x))
      if (j >= s) pages[static_cast<size_t>((j - s) / b)].push_back(j);
    for (int p = 0; p <= current; ++p) {
      if (pages[static_cast<size_t>(p)].empty()) continue;
      ++held_pages;
      if (p > current - shape.recent) continue;  // among the newest R pages
      double sum = 0.0;
      for (int j : pages[static_cast<size_t>(p)]) sum += score[static_cast<size_t>(j)];
      cand.push_back({sum, p, x});
    }
  }
  const long excess = held_pages - static_cast<long>(group.size()) * shape.pages;
  if (excess <= 0) return;
  require(static_cast<long>(cand.size()) >= excess, "internal: a contract group has fewer pages than its excess");
  std::vector<std::vector<int>> now(sets_.size());
  for (const Candidate& c : lowest(std::move(cand), excess)) {
    const auto& tokens = page_tokens[c.set][static_cast<size_t>(c.token)];
    now[c.set].insert(now[c.set].end(), tokens.begin(), tokens.end());
  }
  for (size_t x : group) evict(x, std::move(now[x]));
}

void ContractGroup::settle_admission(int i, const std::vector<size_t>& group, long& admitted) {
  const int s = c_.sinks, b = c_.page_size, r = std::max(c_.recent, c_.delay);
  const long sets = static_cast<long>(group.size());
  if (b > 1) {
    if (i < s || (i - s) % b != 0) return;
    const PageShape shape = page_shape(c_.budget - s, r, b);
    const int leaving = (i - s) / b - shape.recent;  // the page that just left the newest R
    if (leaving < 0) return;
    for (size_t x : group) {
      if (admitted < sets * (shape.pages - shape.recent)) {
        ++admitted;
        continue;
      }
      std::vector<int> tokens;
      for (int j : held(x))
        if (j >= s + leaving * b && j < s + (leaving + 1) * b) tokens.push_back(j);
      evict(x, std::move(tokens));
    }
    return;
  }
  const int leaving = i - r;  // the token that just left the window
  if (leaving < s) return;
  for (size_t x : group) {
    if (admitted < sets * (c_.budget - s - r)) {
      ++admitted;
      continue;
    }
    evict(x, {leaving});
  }
}

}  // namespace kvo

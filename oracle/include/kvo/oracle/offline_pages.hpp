// Irreversible eviction of whole pages during decoding (a paged KV cache, docs/allocation.md,
// "Pages in decoding"): the token problem folded into one of pages, which the offline solvers
// solve exactly (alone or with a shared capacity).
#pragma once
#include <vector>

#include "kvo/core/page_shape.hpp"
#include "kvo/oracle/offline_oracle.hpp"

namespace kvo {

// The problem over page steps s = 0 .. ceil(n / b) - 1 (the steps that write page s): the reward of
// holding page p during page step s is the attention the queries of that step pay its tokens,
//   W(s, p) = sum_{t in step s} sum_{j in page p, j <= t} w(t, j),
// with budget C and window R. Exact: a page is only ever evicted to make room for a new one (the
// rewards are nonnegative, so evicting later never loses), and between allocations the held set
// is fixed, so every schedule of whole-page evictions is a nested schedule of this problem.
OfflineProblem fold_into_pages(const OfflineProblem& tokens, const PageShape& shape);

// Tokens a unit holds after the last step when `page_end` (the page problem's ends) is its schedule.
int tokens_held_at_end(const std::vector<int>& page_end, int n, int page_size);

}  // namespace kvo

// Whole pages of a paged KV cache: how many pages a token budget holds and how many its recent
// window spans (the page optima, oracle/offline_pages.hpp, and engines' contracts read it).
#pragma once

namespace kvo {

// A unit's cache in pages of b aligned positions: page p holds tokens [p b, (p + 1) b) and is
// allocated at step p b, when its first token arrives. The cache holds at most floor(k / b) pages,
// the one being written included, and never evicts its newest R pages: the most pages the last r
// tokens can span, 1 + ceil((r - 1) / b) (1 for r = 0). So it always holds its last r tokens and
// at most k, and every page schedule is a token schedule of the same k and r: pages never gain.
struct PageShape {
  int page_size = 1;  // b
  int pages = 1;      // C = floor(k / b)
  int recent = 1;     // R
};

// The shape of a token budget k and window r in pages of b; kvo::Error when b is not a positive
// power of two, exceeds k, or the window's R pages exceed the C pages of k.
PageShape page_shape(int budget, int recent, int page_size);

}  // namespace kvo

#include "kvo/core/page_shape.hpp"

#include <bit>
#include <string>

#include "kvo/core/error.hpp"

namespace kvo {

PageShape page_shape(int budget, int recent, int page_size) {
  const std::string b = std::to_string(page_size);
  require(page_size >= 1 && std::has_single_bit(static_cast<unsigned>(page_size)),
          "page size " + b + " is not a positive power of two");
  require(page_size <= budget,
          "page size " + b + " exceeds the per-unit budget k = " + std::to_string(budget) + ": no whole page fits");
  PageShape s;
  s.page_size = page_size;
  s.pages = budget / page_size;
  s.recent = recent == 0 ? 1 : 1 + (recent - 1 + page_size - 1) / page_size;
  require(s.recent <= s.pages, "the recent window r = " + std::to_string(recent) + " can span " +
                                   std::to_string(s.recent) + " pages of " + b + ", but k = " + std::to_string(budget) +
                                   " holds only " + std::to_string(s.pages));
  return s;
}

}  // namespace kvo

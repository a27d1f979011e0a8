#include "kvo/oracle/offline_pages.hpp"

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "kvo/core/error.hpp"
#include "kvo/oracle/weight_rows.hpp"

namespace kvo {

OfflineProblem fold_into_pages(const OfflineProblem& tokens, const PageShape& shape) {
  const DenseWeightRows rows(tokens.w);
  const PagedWeightRows paged(rows, shape.page_size);
  const int q = paged.n();
  OfflineProblem pages;
  pages.w = Eigen::MatrixXd::Zero(q, q);
  pages.budget = shape.pages;
  pages.recent = shape.recent;
  std::vector<double> row(static_cast<size_t>(q));
  for (int s = 0; s < q; ++s) {
    paged.row(s, std::span<double>(row.data(), static_cast<size_t>(s) + 1));
    for (int p = 0; p <= s; ++p) pages.w(s, p) = row[static_cast<size_t>(p)];
  }
  return pages;
}

int tokens_held_at_end(const std::vector<int>& page_end, int n, int page_size) {
  const int last = static_cast<int>(page_end.size()) - 1;
  int held = 0;
  for (int p = 0; p <= last; ++p)
    if (page_end[static_cast<size_t>(p)] == last) held += std::min(page_size, n - p * page_size);
  return held;
}

}  // namespace kvo

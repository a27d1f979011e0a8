// The paper's closed-loop experiments (E4-E6, E9) as `kvoracle eval` and `tasks run` print them.
#pragma once
#include <ostream>
#include <vector>

#include "kvo/proofs_check/report.hpp"

namespace kvo::cli {

// One line per record (claim, budget, whether the paper's statement holds, its metric and the rows'
// values); nothing when there is no record.
void print_paper_experiments(const std::vector<CheckRecord>& records, std::ostream& os);

}  // namespace kvo::cli

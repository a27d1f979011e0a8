// Internal: the score functions of the press table (kvo/core/press.hpp), one per press, in fp64.
#pragma once
#include <vector>

#include "kvo/core/press.hpp"

namespace kvo::press_scores {

// [H_kv][P] scores of one layer's prompt; higher is kept.
std::vector<std::vector<double>> compute(const PressLayer& at, const PressOptions& options);

}  // namespace kvo::press_scores

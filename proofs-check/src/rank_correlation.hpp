// Internal: Spearman's rank correlation and partial rank correlations, for the co-occurrence check
// (E3): Pearson's r of average ranks, and of the rank residuals once the controls' ranks (and a
// constant) are regressed out by least squares.
#pragma once
#include <span>
#include <vector>

namespace kvo::detail {

std::vector<double> average_ranks(std::span<const double> v);           // 1-based, ties share their mean rank
double spearman(std::span<const double> a, std::span<const double> b);  // NaN when a or b is constant
double partial_spearman(std::span<const double> a, std::span<const double> b,
                        const std::vector<std::vector<double>>& controls);

}  // namespace kvo::detail

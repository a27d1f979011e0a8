// Constructed instances showing defects of the published lemmas (docs/theory.md §2.12): D6, a
// one-sided eps0 in Lemma D.30 lets the conclusion fail while every stated hypothesis holds;
// D7, monotonicity does not give link (a) of Lemma D.29 once a window forces the new token in.
#pragma once
#include "kvo/proofs_check/report.hpp"

namespace kvo {

CheckRecord one_sided_eps_instance();
CheckRecord forced_token_instance();

}  // namespace kvo

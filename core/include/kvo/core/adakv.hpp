// kvpress's AdaKVPress (kvpress 0.5.5) on one layer's press scores: the layer's KV heads share its
// budget of H n_kept keys. Each head first keeps its n_safe best keys (the safeguard), and the rest
// of the budget goes to the highest remaining scores across the heads.
#pragma once
#include <vector>

namespace kvo {

// kvpress's n_safe: int(n_kept * alpha_safeguard), at least 1 when alpha > 0 and n_kept > 0.
// kvo::Error for an alpha outside [0, 1].
int adakv_safeguard(int n_kept, double alpha_safeguard);

// The positions each KV head keeps (ascending), given the press's scores [H][P] (higher is kept)
// and kvpress's per-head count n_kept. Ties: within a head the earlier position wins the
// safeguard; across heads the lower head, then the earlier position, wins a shared slot (kvpress
// leaves both to torch.topk's order). kvo::Error for ragged scores or n_kept outside [0, P].
std::vector<std::vector<int>> adakv_kept(const std::vector<std::vector<double>>& scores, int n_kept,
                                         double alpha_safeguard);

}  // namespace kvo

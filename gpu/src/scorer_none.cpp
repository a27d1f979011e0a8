// Built without CUDA: the device back end of the scorer says why it cannot run.
#include "kvo/core/error.hpp"
#include "kvo/gpu/device.hpp"
#include "kvo/gpu/scorer.hpp"

namespace kvo {

ScorerResult run_scorer_cuda(const Trace&, const ScorerOptions&) {
  std::string why;
  gpu::device_count(&why);
  throw Error("no CUDA device: " + why);
}

}  // namespace kvo

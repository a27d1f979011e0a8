// Built without CUDA: the device back end of the scorer says why it cannot run.
#include "kvo/core/error.hpp"
#include "kvo/gpu/device.hpp"
#include "scorer_jobs.hpp"

namespace kvo {

ScorerResult run_scorer_cuda_jobs(const Trace&, const std::vector<ScorerJob>&, int, bool) {
  std::string why;
  gpu::device_count(&why);
  throw Error("no CUDA device: " + why);
}

}  // namespace kvo

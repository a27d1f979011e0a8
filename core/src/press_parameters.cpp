#include "kvo/core/press_parameters.hpp"

namespace kvo {

const Schema<PressOptions>& press_parameters_schema() {
  using P = PressOptions;
  static const Schema<PressOptions> schema(
      "press parameters",
      {
          member(&P::window_size, {.name = "window_size", .help = "snapkv, pyramidkv: last queries scored and kept"}),
          member(&P::kernel_size, {.name = "kernel_size", .help = "snapkv, pyramidkv: pooling kernel (odd)"}),
          member(&P::beta, {.name = "beta", .help = "pyramidkv: pyramid steepness"}),
          member(&P::n_sink, {.name = "n_sink", .help = "streaming_llm, lagkv, cur: first tokens kept"}),
          member(&P::lag_size, {.name = "lag_size", .help = "lagkv: partition length"}),
          member(&P::local_window_size, {.name = "local_window_size", .help = "cur: local normalisation window"}),
          member(&P::chunk_size, {.name = "chunk_size", .help = "non_causal_attn: tile of the non-causal attention"}),
          member(
              &P::seed,
              {.name = "seed", .help = "random: torch.manual_seed of RandomPress(seed=...)", .flag = "--press-seed"}),
      });
  return schema;
}

}  // namespace kvo

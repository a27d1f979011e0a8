// kvoracle synth: writes a seeded synthetic heavy-hitter trace.
#include <iostream>

#include "commands.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/synth.hpp"
#include "kvo/core/trace_io.hpp"
#include "options.hpp"

namespace kvo::cli {

Runner add_synth(CLI::App& app, const Global&) {
  auto* cmd =
      app.add_subcommand("synth", "write a seeded synthetic heavy-hitter trace (Zipf importance, sinks, recency)");
  auto o = std::make_shared<SynthOptions>();
  auto out = std::make_shared<std::string>();
  auto dtype = std::make_shared<std::string>("f32");
  cmd->add_option("--out,-o", *out, "output trace (.safetensors)")->required();
  cmd->add_option("--layers", o->layers, "layers")->capture_default_str();
  cmd->add_option("--heads", o->heads, "query heads")->capture_default_str();
  cmd->add_option("--kv-heads", o->kv_heads, "KV heads (grouped-query attention)")->capture_default_str();
  cmd->add_option("--tokens,-n", o->tokens, "sequence length")->capture_default_str();
  cmd->add_option("--head-dim", o->head_dim, "head dimension")->capture_default_str();
  cmd->add_option("--prompt-len", o->prompt_len, "prompt length recorded in the metadata")->capture_default_str();
  cmd->add_option("--sinks", o->sinks, "attention-sink tokens at the start")->capture_default_str();
  cmd->add_option("--zipf", o->zipf, "Zipf exponent of key importance")->capture_default_str();
  cmd->add_option("--importance", o->importance, "logit of the most important key")->capture_default_str();
  cmd->add_option("--recency", o->recency, "logit boost of recent keys")->capture_default_str();
  cmd->add_option("--noise", o->noise, "standard deviation of random logits")->capture_default_str();
  cmd->add_option("--seed", o->seed, "random seed")->capture_default_str();
  add_trace_dtype_option(cmd, *dtype);
  return [=] {
    const Trace tr = synthesize(*o);
    write_trace(*out, tr, trace_dtype(*dtype));
    std::cout << "wrote " << *out << ": " << tr.n_layers << " layers, " << tr.n_heads << " heads (" << tr.n_kv_heads
              << " KV), n = " << tr.n_tokens << ", d = " << tr.head_dim << ", seed " << o->seed << '\n';
    return 0;
  };
}

}  // namespace kvo::cli

// kvoracle synth: writes a seeded synthetic heavy-hitter trace.
#include <iostream>

#include "commands.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/synth.hpp"
#include "kvo/core/trace_io.hpp"
#include "options.hpp"
#include "schema_flags.hpp"

namespace kvo::cli {

Runner add_synth(CLI::App& app, const Global&) {
  auto* cmd =
      app.add_subcommand("synth", "write a seeded synthetic heavy-hitter trace (Zipf importance, sinks, recency)");
  auto o = std::make_shared<SynthOptions>();
  auto flags = std::make_shared<SchemaFlags>();
  auto out = std::make_shared<std::string>();
  auto dtype = std::make_shared<std::string>("f32");
  cmd->add_option("--out,-o", *out, "output trace (.safetensors)")->required();
  flags->add(cmd, synth_options_schema(), *o);  // the one schema of synth's options
  add_trace_dtype_option(cmd, *dtype);
  return [=] {
    flags->apply(synth_options_schema(), *o);
    const Trace tr = synthesize(*o);
    write_trace(*out, tr, trace_dtype(*dtype));
    std::cout << "wrote " << *out << ": " << tr.n_layers << " layers, " << tr.n_heads << " heads (" << tr.n_kv_heads
              << " KV), n = " << tr.n_tokens << ", d = " << tr.head_dim << ", seed " << o->seed << '\n';
    return 0;
  };
}

}  // namespace kvo::cli

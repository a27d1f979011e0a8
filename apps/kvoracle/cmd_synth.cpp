// kvoracle synth: writes a seeded synthetic heavy-hitter trace.
#include <iostream>
#include <variant>

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
  for (const SynthOptionEntry& e : synth_option_table())  // the one table of synth's options
    std::visit(
        [&](auto field) {
          std::string flags(e.flag);
          if (e.name == "tokens") flags += ",-n";
          cmd->add_option(flags, (*o).*field, std::string(e.help))->capture_default_str();
        },
        e.field);
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

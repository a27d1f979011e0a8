// kvoracle record / generate / perplexity: the real model (SmolLM2-135M-Instruct) in our C++.
#include <filesystem>
#include <iostream>

#include "commands.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/progress.hpp"
#include "kvo/core/text_list.hpp"
#include "kvo/core/trace_io.hpp"
#include "kvo/model/generate.hpp"
#include "kvo/model/llama.hpp"
#include "kvo/model/perplexity.hpp"
#include "kvo/model/recorder.hpp"
#include "model_options.hpp"
#include "options.hpp"
#include "schema_flags.hpp"

namespace kvo::cli {
Runner add_record(CLI::App& app, const Global& g) {
  auto* cmd = app.add_subcommand("record", "run the model over a text with full attention and write the trace");
  struct Args {
    std::string text, out, model, dtype = "f32";
    RequestFlags<model::RecordOptions> request;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--text,-t", a->text, "UTF-8 text file")->required()->check(CLI::ExistingFile);
  cmd->add_option("--out,-o", a->out, "output trace (.safetensors)")->required();
  a->request.add(cmd);
  add_trace_dtype_option(cmd, a->dtype);
  add_model_option(cmd, a->model);
  return [a, &g] {
    model::RecordOptions o = a->request.request();
    o.text_source = std::filesystem::path(a->text).filename().string();
    o.validate();  // before the model loads
    const model::Llama m = load_model(a->model);
    Progress bar("record", o.tokens, !g.quiet);
    long last = 0;
    o.progress = [&](int done, int) {
      bar.tick(done - last);
      last = done;
    };
    const Trace tr = model::record_trace(m, read_text(a->text), o);
    bar.finish();
    write_trace(a->out, tr, trace_dtype(a->dtype));
    std::cout << "wrote " << a->out << ": " << m.config().name << ", " << tr.n_layers << " layers x " << tr.n_heads
              << " heads (" << tr.n_kv_heads << " KV), n = " << tr.n_tokens << ", d = " << tr.head_dim << '\n';
    return 0;
  };
}

Runner add_generate(CLI::App& app, const Global&) {
  auto* cmd = app.add_subcommand("generate", "greedy continuation of a prompt with the model (full cache)");
  struct Args {
    std::string prompt, model;
    RequestFlags<model::GenerateRequest> request;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("prompt", a->prompt, "prompt text")->required();
  a->request.add(cmd);
  add_model_option(cmd, a->model);
  return [a] {
    const model::GenerateRequest req = a->request.request();
    req.validate();
    const model::Llama m = load_model(a->model);
    const std::vector<int> ids = m.tokenizer().encode(a->prompt);
    std::cout << a->prompt << model::generate(m, ids, req).text << '\n';
    return 0;
  };
}

Runner add_perplexity(CLI::App& app, const Global&) {
  auto* cmd = app.add_subcommand("perplexity", "teacher-forced perplexity of a text under full attention");
  struct Args {
    std::string text, model;
    int tokens = model::kPerplexityTokens;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--text,-t", a->text, "UTF-8 text file")->required()->check(CLI::ExistingFile);
  cmd->add_option("--tokens,-n", a->tokens, "the text's first n tokens (0: all)")->capture_default_str();
  add_model_option(cmd, a->model);
  return [a] {
    const model::Llama m = load_model(a->model);
    const model::PerplexityResult r = model::perplexity(m, read_text(a->text), a->tokens);
    std::cout << "perplexity " << r.perplexity << " (mean NLL " << r.mean_nll << " nats over " << r.predictions
              << " next-token predictions) on the first " << r.tokens << " tokens of " << a->text << '\n';
    return 0;
  };
}

}  // namespace kvo::cli

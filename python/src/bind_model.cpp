// kvoracle._core: the real model in kvoracle's C++ (SmolLM2-135M-Instruct from its GGUF file): its
// tokenizer, and the library calls behind `kvoracle generate`, `record`, `perplexity`, `eval` and
// `eval prefill`.
#include "bindings_support.hpp"
#include "kvo/core/press_parameters.hpp"
#include "kvo/model/eval_run.hpp"
#include "kvo/model/generate.hpp"
#include "kvo/model/llama.hpp"
#include "kvo/model/model_path.hpp"
#include "kvo/model/perplexity.hpp"
#include "kvo/model/press_eval_run.hpp"
#include "kvo/model/recorder.hpp"
#include "kvo/model/tokenizer.hpp"

namespace kvo::python {

namespace {

// The result's JSON form without the CLI's file name.
py::object without_text(nlohmann::json j) {
  j.erase("text");
  return json_to_python(j);
}

}  // namespace

void bind_model(py::module_& m) {
  m.def("default_model_path", &model::default_model_path,
        "where the model is looked for: $KVO_MODEL, else $KVO_MODEL_DIR/<file>, else ~/.cache/kvoracle/<file>");
  py::class_<model::Llama>(m, "Model",
                           "SmolLM2-135M-Instruct (or another Llama GGUF) in kvoracle's C++: tokenizer and greedy "
                           "generation (docs/model.md)")
      .def(py::init([](const std::optional<std::string>& path) {
             const std::string p = path.value_or(model::default_model_path());
             py::gil_scoped_release release;
             return std::make_unique<model::Llama>(p);
           }),
           py::arg("path") = py::none(), "load a GGUF file (default: default_model_path())")
      .def_property_readonly("path", &model::Llama::path)
      .def(
          "tokenize",
          [](const model::Llama& self, const std::string& text, bool parse_special) {
            return self.tokenizer().encode(text, parse_special);
          },
          py::arg("text"), py::arg("parse_special") = false,
          "token ids of `text` (parse_special: read <|im_start|> and the like as special tokens)")
      .def(
          "detokenize",
          [](const model::Llama& self, const std::vector<int>& ids) { return self.tokenizer().decode(ids); },
          py::arg("ids"))
      .def(
          "generate",
          [](const model::Llama& self, const py::object& prompt, int max_tokens, bool stop_at_eos) {
            const std::vector<int> ids = py::isinstance<py::str>(prompt)
                                             ? self.tokenizer().encode(prompt.cast<std::string>())
                                             : prompt.cast<std::vector<int>>();
            model::GenerateRequest req;
            req.max_tokens = max_tokens;
            req.stop_at_eos = stop_at_eos;
            model::GenerateResult r;
            {
              py::gil_scoped_release release;
              r = model::generate(self, ids, req);
            }
            return py::dict(py::arg("ids") = r.ids, py::arg("text") = r.text);
          },
          py::arg("prompt"), py::arg("max_tokens") = model::GenerateRequest{}.max_tokens,
          py::arg("stop_at_eos") = model::GenerateRequest{}.stop_at_eos,
          "greedy continuation (argmax, ties to the smallest id) of a prompt given as text or token ids, with the "
          "full KV cache: {'ids': generated ids, 'text': their decoding} (kvoracle generate)")
      .def(
          "record",
          [](const model::Llama& self, const std::string& text, int tokens, std::vector<int> layers, int prompt_len,
             std::string text_source) {
            model::RecordOptions o;
            o.tokens = tokens;
            o.layers = std::move(layers);
            o.prompt_len = prompt_len;
            o.text_source = std::move(text_source);
            py::gil_scoped_release release;
            return model::record_trace(self, text, o);
          },
          py::arg("text"), py::arg("tokens") = model::RecordOptions{}.tokens, py::arg("layers") = std::vector<int>{},
          py::arg("prompt_len") = 0, py::arg("text_source") = "",
          "the text's first `tokens` tokens through the model with full attention: a Trace of every chosen layer's "
          "q, k, v (kvoracle record; write it with write_trace)")
      .def(
          "perplexity",
          [](const model::Llama& self, const std::string& text, int tokens) {
            model::PerplexityResult r;
            {
              py::gil_scoped_release release;
              r = model::perplexity(self, text, tokens);
            }
            return py::dict(py::arg("tokens") = r.tokens, py::arg("predictions") = r.predictions,
                            py::arg("mean_nll") = r.mean_nll, py::arg("perplexity") = r.perplexity);
          },
          py::arg("text"), py::arg("tokens") = model::kPerplexityTokens,
          "teacher-forced perplexity of the text's first `tokens` tokens (0: all) under full attention (kvoracle "
          "perplexity)")
      .def(
          "eval",
          [](const model::Llama& self, const std::string& text, const std::optional<std::vector<std::string>>& policies,
             const std::optional<py::list>& budgets, int tokens, const py::kwargs& kwargs) {
            model::EvalRequest req;
            req.tokens = tokens;
            if (policies) req.policies = parse_policy_names(*policies);
            if (budgets) {  // ratios ("20%", 0.2) or token counts (64), as the CLI's --budgets items
              req.budgets.clear();
              for (const auto& b : *budgets) req.budgets.push_back(py::str(b));
            }
            req.run = run_options(kwargs, "eval");
            model::EvalResult r;
            {
              py::gil_scoped_release release;
              r = model::run_eval(self, text, req);
            }
            return without_text(model::eval_result_json(r, ""));
          },
          py::arg("text"), py::arg("policies") = py::none(), py::arg("budgets") = py::none(),
          py::arg("tokens") = model::EvalRequest{}.tokens,
          ("eviction policies in closed loop with real eviction, teacher-forced over the text's first `tokens` tokens, "
           "against the full cache (kvoracle eval): {tokens, full_ppl, full_bytes, points: [{policy, budget, k, ppl, "
           "mean_kl, peak_bytes}]}. policies and budgets default to the CLI's.\n" +
           run_options_doc())
              .c_str())
      .def(
          "eval_prefill",
          [](const model::Llama& self, const std::string& text, int prompt_len, int tokens, const std::string& presses,
             std::vector<double> ratios, const std::vector<std::string>& policies, const py::dict& press,
             const py::kwargs& kwargs) {
            model::PressEvalRequest req;
            req.tokens = tokens;
            req.prompt_len = prompt_len;
            req.presses = presses;
            req.ratios = std::move(ratios);
            req.press = press_parameters(press, "eval_prefill");
            req.policies = parse_policy_names(policies);
            req.run = run_options(kwargs, "eval_prefill");
            model::PressEvalResult r;
            {
              py::gil_scoped_release release;
              r = model::run_press_eval(self, text, req);
            }
            return without_text(model::press_eval_result_json(r, ""));
          },
          py::arg("text"), py::arg("prompt_len"), py::arg("tokens") = model::PressEvalRequest{}.tokens,
          py::arg("presses") = model::PressEvalRequest{}.presses, py::arg("ratios") = model::PressEvalRequest{}.ratios,
          py::arg("policies") = std::vector<std::string>{}, py::arg("press") = py::dict(),
          ("kvpress's protocol in closed loop (kvoracle eval prefill): the first prompt_len tokens compressed once by "
           "each press at each ratio (and by kvoracle's `policies`, and to the prefill optima's sets), the rest "
           "teacher-forced: {tokens, prompt_len, full_nll, full_bytes, rows: [{set, compression_ratio, mean_k, "
           "mass_fraction, output_error, nll, mean_kl, kv_bytes}]}. `press`: a dict of press parameters; the policies' "
           "parameters are keyword arguments.\n" +
           press_parameters_doc() + "\n" + run_options_doc())
              .c_str());
}

}  // namespace kvo::python

// kvoracle._core: the real model in kvoracle's C++ (SmolLM2-135M-Instruct from its GGUF file): its
// tokenizer, and the library calls behind `kvoracle generate`, `record`, `perplexity`, `eval`,
// `eval prefill`, `tasks generate`, `tasks run` and `tasks report`.
#include "bindings_support.hpp"
#include "kvo/core/press_parameters.hpp"
#include "kvo/model/generate.hpp"
#include "kvo/model/llama.hpp"
#include "kvo/model/model_path.hpp"
#include "kvo/model/perplexity.hpp"
#include "kvo/model/recorder.hpp"
#include "kvo/model/tokenizer.hpp"
#include "kvo/studies/diversity.hpp"
#include "kvo/studies/eval_run.hpp"
#include "kvo/studies/press_eval_run.hpp"
#include "kvo/studies/task_io.hpp"
#include "kvo/studies/task_options.hpp"

namespace kvo::python {

namespace {

// The result's JSON form without the CLI's file name.
py::object without_text(nlohmann::json j) {
  j.erase("text");
  return json_to_python(j);
}

// The options of the task option table among a call's keyword arguments (a list may be a Python
// list or "a,b"; a bool is true or false); the others go to `rest` (run options), or are refused.
studies::TaskOptions task_options(const py::kwargs& kwargs, studies::TaskOptionUse use, const char* call,
                                  py::kwargs* rest) {
  studies::TaskOptions o;
  for (const auto& [key, value] : kwargs) {
    const std::string name = py::str(key);
    const studies::TaskOptionEntry* e = studies::find_task_option(name);
    if (e == nullptr || (use == studies::TaskOptionUse::Suite && e->use == studies::TaskOptionUse::Run)) {
      require(rest != nullptr,
              std::string(call) + ": unknown option '" + name + "' (options: " + studies::task_option_names(use) + ")");
      (*rest)[key] = value;
      continue;
    }
    if (value.is_none()) continue;
    std::string text;
    if (py::isinstance<py::bool_>(value)) {
      text = value.cast<bool>() ? "true" : "false";
    } else if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
      for (const auto& x : value) {
        if (!text.empty()) text.append(",");
        text.append(py::str(x).cast<std::string>());
      }
      if (text.empty() && name == "policies") text = "none";
    } else {
      text = py::str(value).cast<std::string>();
    }
    e->set(o, text);
  }
  return o;
}

// "Options (keyword arguments, the CLI's tasks flags): tasks=passkey,niah,multikey: ...".
std::string task_options_doc(studies::TaskOptionUse use) {
  const studies::TaskOptions defaults;
  std::string s = "Task options (keyword arguments, the CLI's tasks flags; docs/tasks.md):";
  for (const auto& e : studies::task_option_table())
    if (use == studies::TaskOptionUse::Run || e.use == use)
      s += "\n  " + std::string(e.name) + "=" + e.get(defaults) + ": " + std::string(e.help);
  return s;
}

}  // namespace

void bind_model(py::module_& m) {
  m.def(
      "task_report",
      [](const py::object& result) {
        const studies::TaskEvalResult r = py::isinstance<py::str>(result)
                                              ? studies::read_task_result(result.cast<std::string>())
                                              : studies::task_result_from_json(python_to_json(result), "task_report");
        return json_to_python(studies::task_result_json(r));
      },
      py::arg("result"),
      "the cells of task outcomes again (kvoracle tasks report): `result` is what Model.run_tasks returned (its "
      "outcomes may be several runs' concatenated) or the path of a `tasks run --json`; returns the same dict "
      "with `cells` and `cells_by_depth` computed from the outcomes");
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
      .def_property_readonly(
          "eos", [](const model::Llama& self) { return self.tokenizer().eos(); },
          "the end-of-sequence token id (greedy answers stop there)")
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
             const std::optional<py::list>& budgets, int tokens, int kv_bits, int kv_group, const py::kwargs& kwargs) {
            studies::EvalRequest req;
            req.tokens = tokens;
            req.kv_bits = kv_bits;
            req.kv_group = kv_group;
            if (policies) req.policies = parse_policy_names(*policies);
            if (budgets) {  // ratios ("20%", 0.2) or token counts (64), as the CLI's --budgets items
              req.budgets.clear();
              for (const auto& b : *budgets) req.budgets.push_back(py::str(b));
            }
            req.run = run_options(kwargs, "eval");
            studies::EvalResult r;
            {
              py::gil_scoped_release release;
              r = studies::run_eval(self, text, req);
            }
            return without_text(studies::eval_result_json(r, ""));
          },
          py::arg("text"), py::arg("policies") = py::none(), py::arg("budgets") = py::none(),
          py::arg("tokens") = studies::EvalRequest{}.tokens, py::arg("kv_bits") = studies::EvalRequest{}.kv_bits,
          py::arg("kv_group") = studies::EvalRequest{}.kv_group,
          ("eviction policies in closed loop with real eviction, teacher-forced over the text's first `tokens` tokens, "
           "against the full cache (kvoracle eval): {tokens, full_ppl, full_bytes, points: [{policy, budget, k, ppl, "
           "mean_kl, peak_bytes}], paper_experiments: [finding records]}. policies and budgets default to the CLI's; "
           "kv_bits > 0 adds every point with its K/V quantized (rows <policy>+int<bits>, and full+int<bits>).\n" +
           run_options_doc())
              .c_str())
      .def(
          "diversity",
          [](const model::Llama& self, const std::string& text, const std::vector<std::string>& policies,
             std::vector<double> budgets, int prompts, int prompt_tokens, int new_tokens, const py::kwargs& kwargs) {
            studies::DiversityRequest req;
            req.policies = parse_policy_names(policies);
            req.budgets = std::move(budgets);
            req.prompts = prompts;
            req.prompt_tokens = prompt_tokens;
            req.new_tokens = new_tokens;
            require(!req.policies.empty(), "diversity: at least one policy");
            req.run = run_options(kwargs, "diversity").build(req.policies.front());
            studies::DiversityResult r;
            {
              py::gil_scoped_release release;
              r = studies::continuation_diversity(self, text, req);
            }
            return json_to_python(studies::diversity_result_json(r));
          },
          py::arg("text"), py::arg("policies") = policy_name_list(studies::DiversityRequest{}.policies),
          py::arg("budgets") = studies::DiversityRequest{}.budgets,
          py::arg("prompts") = studies::DiversityRequest{}.prompts,
          py::arg("prompt_tokens") = studies::DiversityRequest{}.prompt_tokens,
          py::arg("new_tokens") = studies::DiversityRequest{}.new_tokens,
          ("greedy continuations of prompts cut from the text, full cache against each policy and budget (kvoracle "
           "eval diversity): {prompts, prompt_tokens, new_tokens, full, rows: [{row, budget, words, distinct1, "
           "distinct2, distinct3, repetition4, continuations}], paper_experiments: [E10 records]}.\n" +
           run_options_doc())
              .c_str())
      .def(
          "eval_prefill",
          [](const model::Llama& self, const std::string& text, int prompt_len, int tokens, const std::string& presses,
             std::vector<double> ratios, const std::vector<std::string>& policies, const py::dict& press,
             const std::string& scopes, std::vector<double> alpha_safeguard, const py::kwargs& kwargs) {
            studies::PressEvalRequest req;
            req.scopes = parse_budget_scopes(scopes);
            req.alpha_safeguard = std::move(alpha_safeguard);
            req.tokens = tokens;
            req.prompt_len = prompt_len;
            req.presses = presses;
            req.ratios = std::move(ratios);
            req.press = press_parameters(press, "eval_prefill");
            req.policies = parse_policy_names(policies);
            req.run = run_options(kwargs, "eval_prefill");
            studies::PressEvalResult r;
            {
              py::gil_scoped_release release;
              r = studies::run_press_eval(self, text, req);
            }
            return without_text(studies::press_eval_result_json(r, ""));
          },
          py::arg("text"), py::arg("prompt_len"), py::arg("tokens") = studies::PressEvalRequest{}.tokens,
          py::arg("presses") = studies::PressEvalRequest{}.presses,
          py::arg("ratios") = studies::PressEvalRequest{}.ratios, py::arg("policies") = std::vector<std::string>{},
          py::arg("press") = py::dict(), py::arg("scopes") = "head", py::arg("alpha_safeguard") = std::vector<double>{},
          ("kvpress's protocol in closed loop (kvoracle eval prefill): the first prompt_len tokens compressed once by "
           "each press at each ratio (and under AdaKV at each alpha_safeguard, and by kvoracle's `policies`, and to "
           "the prefill optima's sets in each budget scope of `scopes`), the rest teacher-forced: {tokens, "
           "prompt_len, full_nll, full_bytes, rows: [{set, compression_ratio, mean_k, mass_fraction, mass_share, "
           "output_error, nll, mean_kl, kv_bytes}]}. `press`: a dict of press parameters; the policies' "
           "parameters are keyword arguments.\n" +
           press_parameters_doc() + "\n" + run_options_doc())
              .c_str())
      .def(
          "generate_tasks",
          [](const model::Llama& self, const py::kwargs& kwargs) {
            studies::TaskOptions o = task_options(kwargs, studies::TaskOptionUse::Suite, "generate_tasks", nullptr);
            o.suite.max_positions = self.config().context;
            nlohmann::json rows = nlohmann::json::array();
            for (const auto& t : studies::generate_tasks(self.tokenizer(), o.suite))
              rows.push_back(studies::task_instance_json(t));
            return json_to_python(rows);
          },
          ("a seeded long-context task suite (kvoracle tasks generate): a list of instances, each a dict in kvpress's "
           "dataset columns (context, question, answer_prefix, answer, max_new_tokens) plus id, task, length, depth, "
           "rule and needles.\n" +
           task_options_doc(studies::TaskOptionUse::Suite))
              .c_str())
      .def(
          "task_tokens",
          [](const model::Llama& self, const py::dict& instance, bool question_first, const std::string& format) {
            const studies::TaskInstance in = studies::task_instance_from_json(python_to_json(instance), "instance");
            const studies::TaskTokens t =
                studies::task_tokens(self.tokenizer(), in, question_first, studies::parse_prompt_format(format));
            py::dict out;
            out["context"] = t.context;
            out["question"] = t.question;
            out["needle_shift"] = t.needle_shift;
            return out;
          },
          py::arg("instance"), py::arg("question_first") = false, py::arg("format") = "plain",
          "the token ids tasks run feeds for one instance (a dict in kvpress's columns): {context, question, "
          "needle_shift}; the question block holds the question and the answer prefix, and with question_first "
          "the context opens with the question too (needle_shift: where the context's own tokens start)")
      .def(
          "run_tasks",
          [](const model::Llama& self, const std::optional<py::list>& instances, const py::dict& press,
             const py::kwargs& kwargs) {
            py::kwargs rest;
            studies::TaskOptions o = task_options(kwargs, studies::TaskOptionUse::Run, "run_tasks", &rest);
            o.suite.max_positions = self.config().context;
            studies::TaskEvalRequest& req = o.run;
            req.press = press_parameters(press, "run_tasks");
            req.run = run_options(rest, "run_tasks")
                          .build(req.policies.empty() ? PolicyId::H2O : req.policies.front(), nullptr,
                                 SharedBudgets::Allowed);
            req.validate();
            std::vector<studies::TaskInstance> inst;
            if (instances) {
              const auto rows = nlohmann::json::parse(
                  py::str(py::module_::import("json").attr("dumps")(*instances)).cast<std::string>());
              for (size_t i = 0; i < rows.size(); ++i)
                inst.push_back(studies::task_instance_from_json(rows[i], "instance " + std::to_string(i)));
            } else {
              inst = studies::generate_tasks(self.tokenizer(), o.suite);
            }
            studies::TaskEvalResult r;
            {
              py::gil_scoped_release release;
              r = studies::evaluate_tasks(self, inst, req);
            }
            return json_to_python(studies::task_result_json(r));
          },
          py::arg("instances") = py::none(), py::arg("press") = py::dict(),
          ("answer task instances (dicts in kvpress's columns, e.g. from generate_tasks; None: the suite the suite "
           "options generate) with the full cache and under every policy (and press, protocol='prefill') at every "
           "budget (kvoracle tasks run): {protocol, outcomes: [{instance, task, length, depth, input_tokens, row, "
           "budget, kept, score, answer, needles_held, mass_of_optimum}], cells, cells_by_depth: [{task, length, "
           "depth, "
           "row, budget, count, accuracy, low, high, model_fails, needles_held, mass_of_optimum}]}. `press`: a dict of "
           "press parameters; the policies' parameters "
           "are keyword arguments.\n" +
           task_options_doc(studies::TaskOptionUse::Run) + "\n" + press_parameters_doc() + "\n" + run_options_doc())
              .c_str());
}

}  // namespace kvo::python

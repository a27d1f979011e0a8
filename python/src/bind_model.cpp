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
#include "kvo/studies/ceiling_share.hpp"
#include "kvo/studies/diversity.hpp"
#include "kvo/studies/eval_run.hpp"
#include "kvo/studies/hypothesis_search.hpp"
#include "kvo/studies/paired_power.hpp"
#include "kvo/studies/press_eval_run.hpp"
#include "kvo/studies/task_io.hpp"
#include "kvo/studies/task_options.hpp"
#include "kvo/studies/text_search.hpp"
#include "kvo/studies/worst_case.hpp"
#include "schema_kwargs.hpp"

namespace kvo::python {

namespace {

// The result's JSON form without the CLI's file name.
py::object without_text(nlohmann::json j) {
  j.erase("text");
  return json_to_python(j);
}

// generate_tasks takes the suite's options alone; run_tasks every task option.
bool suite_option(const Field<studies::TaskOptions>& f) { return f.info.use == studies::kSuiteUse; }

// A worst-case search (kvoracle search ...): keyword arguments from the request's schema, the
// search run without the GIL, the result's JSON with its report.
template <class Request, class Search>
void bind_search(py::module_& m, const char* name, const std::string& command, Search search, const std::string& doc) {
  m.def(
      name,
      [name, search](const py::kwargs& kwargs) {
        Request req;
        apply_kwargs(Request::schema(), req, kwargs, name);
        decltype(search(req)) r;
        {
          py::gil_scoped_release release;
          r = search(req);
        }
        return with_report(json_to_python(r.to_json()), r.report());
      },
      (doc + "\n" +
       kwargs_doc(Request::schema(), Request{}, "Options (keyword arguments, the CLI's `" + command + "` flags)"))
          .c_str());
}

}  // namespace

void bind_model(py::module_& m) {
  m.def(
      "task_report",
      [](const py::object& result) {
        const studies::TaskEvalResult r = py::isinstance<py::str>(result)
                                              ? studies::read_task_result(result.cast<std::string>())
                                              : studies::task_result_from_json(python_to_json(result), "task_report");
        return with_report(json_to_python(studies::task_result_json(r)), studies::task_report(r));
      },
      py::arg("result"),
      "the cells of task outcomes again (kvoracle tasks report): `result` is what Model.run_tasks returned (its "
      "outcomes may be several runs' concatenated) or the path of a `tasks run --json`; returns the same dict "
      "with `cells` and `cells_by_depth` computed from the outcomes");
  m.def(
      "ceiling_share",
      [](const py::list& records, const std::string& ceiling, int resamples, std::uint64_t seed) {
        std::vector<studies::CeilingRecord> rs;
        for (const py::handle& h : records) {
          const auto d = py::cast<py::dict>(h);
          for (const char* key : {"press", "compression_ratio", "instance", "score"})
            if (!d.contains(key))
              throw Error(std::string("ceiling_share: a record has no '") + key +
                          "' (records: press, compression_ratio, instance, score)");
          rs.push_back({py::str(d["press"]).cast<std::string>(), d["compression_ratio"].cast<double>(),
                        py::str(d["instance"]).cast<std::string>(), d["score"].cast<double>()});
        }
        const studies::CeilingShareResult r =
            studies::ceiling_share(rs, {.ceiling = ceiling, .resamples = resamples, .seed = seed});
        return with_report(json_to_python(r.to_json()), r.report());
      },
      py::arg("records"), py::arg("ceiling") = "kvoracle_optimum", py::arg("resamples") = 2000, py::arg("seed") = 0,
      "each press's per-instance scores against the ceiling's on the same instances, per compression ratio: mean "
      "score, the ceiling's, the share of the ceiling reached (95% seeded bootstrap intervals) and a paired sign-flip "
      "p-value; records: dicts {press, compression_ratio, instance, score}; the report has a table and "
      "ceiling-share.svg");
  m.def(
      "paired_power",
      [](const py::kwargs& kwargs) {
        studies::PairedPowerRequest req;
        apply_kwargs(studies::PairedPowerRequest::schema(), req, kwargs, "paired_power");
        const studies::PairedPowerResult r = studies::paired_power(req);
        return with_report(json_to_python(r.to_json()), r.report());
      },
      ("how many instances a paired comparison of two rows needs to find a difference in accuracy significant "
       "(exact sign test; kvoracle tasks power): per discordance, the instances needed and the power reached.\n" +
       kwargs_doc(studies::PairedPowerRequest::schema(), studies::PairedPowerRequest{},
                  "Options (keyword arguments, the CLI's `tasks power` flags; docs/tasks.md)"))
          .c_str());
  bind_search<studies::AttentionSearchRequest>(
      m, "search_attention", "search attention",
      [](const studies::AttentionSearchRequest& r) { return studies::search_attention(r); },
      "a seeded search over softmax(q.k/sqrt(d)) with bounded norms for the instance on which each policy keeps "
      "the least of the exact offline optimum (kvoracle search attention; docs/worst-cases.md): per policy the "
      "worst ratio, its curve against evaluations and, with out=, the saved instance re-verified.");
  bind_search<studies::HypothesisSearchRequest>(
      m, "search_hypotheses", "search hypotheses",
      [](const studies::HypothesisSearchRequest& r) { return studies::search_hypotheses(r); },
      "a seeded search over causal attention with bounded logits, kept to the traces on which H2O's Theorem 4.4 "
      "has its hypotheses, for the one on which each policy comes closest to the bound (1 - alpha)(1 - 1/e) "
      "(kvoracle search hypotheses; docs/worst-cases.md).");
  m.def(
      "score_answer",
      [](const py::dict& instance, const std::string& answer) {
        return studies::score_answer(studies::task_instance_from_json(python_to_json(instance), "instance"), answer);
      },
      py::arg("instance"), py::arg("answer"),
      "the score in [0, 1] of a generated answer under the instance's rule (a dict in kvpress's columns), as tasks "
      "run scores it");
  m.def(
      "task_request",
      [](const py::kwargs& kwargs) {
        studies::TaskOptions o;
        apply_kwargs(studies::task_options_schema(), o, kwargs, "run_tasks",
                     [](const Field<studies::TaskOptions>& f) { return !suite_option(f); });
        const studies::TaskEvalRequest r = o.eval_request();  // validated: every rule of tasks run
        std::vector<std::string> policies, offline, presses;
        for (PolicyId id : r.policies) {
          policies.push_back(policy_name(id));
          if (policy_traits(id).offline) offline.push_back(policy_name(id));
        }
        for (PressId id : r.presses) presses.push_back(std::string(press_name(id)));
        std::vector<std::string> scope_names;
        for (BudgetScope scope : r.optimum_scopes) scope_names.push_back(budget_scope_name(scope));
        return py::dict(
            py::arg("protocol") = std::string(studies::to_string(r.protocol)), py::arg("policies") = policies,
            py::arg("offline") = offline, py::arg("presses") = presses, py::arg("budgets") = r.budgets,
            py::arg("rows") = studies::task_row_names(r), py::arg("question_first") = r.question_first,
            py::arg("format") = std::string(studies::to_string(r.format)),
            py::arg("budget_scope") = std::string(budget_scope_name(r.run.budget_scope)),
            py::arg("optimum") = r.optimum, py::arg("topk") = r.topk, py::arg("optimum_scopes") = scope_names);
      },
      "a tasks run request from run_tasks' keywords, validated by the library as `tasks run` validates it: "
      "{protocol, policies, offline, presses, budgets, rows, question_first, format, budget_scope, optimum, topk, "
      "optimum_scopes}");
  m.def(
      "task_request_fields",
      []() {
        const studies::TaskOptions defaults;
        py::list out;
        for (const Field<studies::TaskOptions>& f : studies::task_options_schema().fields()) {
          if (suite_option(f) || !f.set) continue;
          out.append(py::dict(py::arg("name") = f.info.name, py::arg("flag") = f.flag(), py::arg("help") = f.info.help,
                              py::arg("kind") = f.kind, py::arg("list") = f.list,
                              py::arg("switch") = f.info.switch_text,
                              py::arg("default") = f.get ? f.get(defaults) : std::string{}));
        }
        return out;
      },
      "the fields of a tasks run request (task_request's keywords) as {name, flag, help, kind, list, switch, default} "
      "(switch: the text a value-less flag sets, as --no-optimum sets false): what command-line adapters of "
      "run_tasks offer, from the library's one schema");
  py::class_<studies::MassOfOptimum>(
      m, "MassOfOptimum",
      "a task outcome's mass_of_optimum, as tasks run computes it, built once per instance from `trace` (the full "
      "cache's recording of the whole instance) and its context's length; calling it with kept context positions "
      "(one list per (layer, KV head), layer-major) and a row's budget k gives the attention mass the question's "
      "and answer's queries give them, as a share of the most k of them can hold, mean over units")
      .def(py::init([](const Trace& full, int context) {
             py::gil_scoped_release release;
             return studies::MassOfOptimum(full, context);
           }),
           py::arg("trace"), py::arg("context"))
      .def(
          "__call__",
          [](const studies::MassOfOptimum& self, const std::vector<std::vector<int>>& kept, int k) {
            py::gil_scoped_release release;
            return self(kept, k);
          },
          py::arg("kept"), py::arg("k"))
      .def(
          "add",
          [](studies::MassOfOptimum& self, const Trace& full) {
            py::gil_scoped_release release;
            self.add(full);
          },
          py::arg("trace"),
          "another full-cache run of the same context (a further question): its queries' weights add to every "
          "unit's, so the optimum and the masses are those of every run together")
      .def(
          "optimum_sets",
          [](const studies::MassOfOptimum& self, const std::string& scope, int k) {
            const std::vector<BudgetScope> scopes = parse_budget_scopes(scope);
            if (scopes.size() != 1) throw Error("optimum_sets: give one budget scope, not '" + scope + "'");
            py::gil_scoped_release release;
            return self.optimum_sets(scopes.front(), k);
          },
          py::arg("scope"), py::arg("k"),
          "the exact prefill optimum's kept context positions, one list per (layer, KV head), layer-major, at "
          "per-unit budget k: scope 'head' (each unit keeps k), or 'layer', 'layerwise', 'model' (a budget of the "
          "same total shared by a layer's or the model's units; counts differ per unit)");
  m.def(
      "task_texts",
      [](const py::dict& instance, bool question_first) {
        const studies::TaskTexts t =
            studies::task_texts(studies::task_instance_from_json(python_to_json(instance), "instance"), question_first);
        return py::dict(py::arg("context") = t.context, py::arg("question") = t.question,
                        py::arg("needle_piece") = t.needle_piece);
      },
      py::arg("instance"), py::arg("question_first") = false,
      "the plain format's texts tasks run encodes, each on its own: {context: [pieces], question, needle_piece} "
      "(the few-shot examples, the question when it opens the context, the context; then the question block)");
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
          [](const model::Llama& self, const py::object& prompt, const py::kwargs& kwargs) {
            const std::vector<int> ids = py::isinstance<py::str>(prompt)
                                             ? self.tokenizer().encode(prompt.cast<std::string>())
                                             : prompt.cast<std::vector<int>>();
            model::GenerateRequest req;
            apply_kwargs(model::GenerateRequest::schema(), req, kwargs, "generate");
            model::GenerateResult r;
            {
              py::gil_scoped_release release;
              r = model::generate(self, ids, req);
            }
            return py::dict(py::arg("ids") = r.ids, py::arg("text") = r.text);
          },
          py::arg("prompt"),
          ("greedy continuation (argmax, ties to the smallest id) of a prompt given as text or token ids, with the "
           "full KV cache: {'ids': generated ids, 'text': their decoding} (kvoracle generate).\n" +
           kwargs_doc(model::GenerateRequest::schema(), model::GenerateRequest{}, "Options (keyword arguments)"))
              .c_str())
      .def(
          "record",
          [](const model::Llama& self, const std::string& text, const py::kwargs& kwargs) {
            model::RecordOptions o;
            apply_kwargs(model::RecordOptions::schema(), o, kwargs, "record");
            py::gil_scoped_release release;
            return model::record_trace(self, text, o);
          },
          py::arg("text"),
          ("the text's first `tokens` tokens through the model with full attention: a Trace of every chosen layer's "
           "q, k, v (kvoracle record; write it with write_trace).\n" +
           kwargs_doc(model::RecordOptions::schema(), model::RecordOptions{}, "Options (keyword arguments)"))
              .c_str())
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
          [](const model::Llama& self, const std::string& text, const py::kwargs& kwargs) {
            studies::EvalRequest req;
            apply_kwargs(studies::EvalRequest::schema(), req, kwargs, "eval");
            studies::EvalResult r;
            {
              py::gil_scoped_release release;
              r = studies::run_eval(self, text, req);
            }
            return with_report(without_text(studies::eval_result_json(r, "")), studies::eval_report(r, "the text"));
          },
          py::arg("text"),
          ("eviction policies in closed loop with real eviction, teacher-forced over the text's first `tokens` tokens, "
           "against the full cache (kvoracle eval): {tokens, full_ppl, full_bytes, points: [{policy, budget, k, ppl, "
           "mean_kl, peak_bytes}], paper_experiments: [finding records]}. kv_bits > 0 adds every point with its K/V "
           "quantized (rows <policy>+int<bits>, and full+int<bits>).\n" +
           kwargs_doc(studies::EvalRequest::schema(), studies::EvalRequest{},
                      "Options (keyword arguments, the CLI's flags)"))
              .c_str())
      .def(
          "diversity",
          [](const model::Llama& self, const std::string& text, const py::kwargs& kwargs) {
            studies::DiversityRequest req;
            apply_kwargs(studies::DiversityRequest::schema(), req, kwargs, "diversity");
            studies::DiversityResult r;
            {
              py::gil_scoped_release release;
              r = studies::continuation_diversity(self, text, req);
            }
            return with_report(json_to_python(studies::diversity_result_json(r)),
                               studies::diversity_report(r, "the text"));
          },
          py::arg("text"),
          ("greedy continuations of prompts cut from the text, full cache against each policy and budget (kvoracle "
           "eval diversity): {prompts, prompt_tokens, new_tokens, full, rows: [{row, budget, words, distinct1, "
           "distinct2, distinct3, repetition4, continuations}], paper_experiments: [E10 records]}.\n" +
           kwargs_doc(studies::DiversityRequest::schema(), studies::DiversityRequest{},
                      "Options (keyword arguments, the CLI's flags)"))
              .c_str())
      .def(
          "search_text",
          [](const model::Llama& self, const py::kwargs& kwargs) {
            studies::TextSearchRequest req;
            apply_kwargs(studies::TextSearchRequest::schema(), req, kwargs, "search_text");
            studies::TextSearchResult r;
            {
              py::gil_scoped_release release;
              r = studies::search_text(self, req);
            }
            return with_report(json_to_python(r.to_json()), r.report());
          },
          ("a seeded search over the words of a task instance's haystack (replacements and insertions of its own "
           "words, the needle's sentence kept) for the text on which a policy keeps the least of OPT_dyn or loses "
           "the most task score (kvoracle search text; docs/worst-cases.md): the unaltered and the worst text "
           "measured both ways, the edits, the curve and, with out=, the saved instance and trace re-verified.\n" +
           kwargs_doc(studies::TextSearchRequest::schema(), studies::TextSearchRequest{},
                      "Options (keyword arguments, the CLI's `search text` flags)"))
              .c_str())
      .def(
          "eval_prefill",
          [](const model::Llama& self, const std::string& text, int prompt_len, const py::kwargs& kwargs) {
            studies::PressEvalRequest req;
            req.prompt_len = prompt_len;
            apply_kwargs(studies::PressEvalRequest::schema(), req, kwargs, "eval_prefill", not_named("prompt_len"));
            studies::PressEvalResult r;
            {
              py::gil_scoped_release release;
              r = studies::run_press_eval(self, text, req);
            }
            return with_report(without_text(studies::press_eval_result_json(r, "")),
                               studies::press_eval_report(r, "the text"));
          },
          py::arg("text"), py::arg("prompt_len"),
          ("kvpress's protocol in closed loop (kvoracle eval prefill): the first prompt_len tokens compressed once by "
           "each press at each ratio (and under AdaKV at each alpha_safeguard, and by kvoracle's `policies`, and to "
           "the prefill optima's sets in each budget scope of `scopes`), the rest teacher-forced: {tokens, "
           "prompt_len, full_nll, full_bytes, rows: [{set, compression_ratio, mean_k, mass_fraction, mass_share, "
           "output_error, nll, mean_kl, kv_bytes}]}.\n" +
           kwargs_doc(studies::PressEvalRequest::schema(), studies::PressEvalRequest{},
                      "Options (keyword arguments, the CLI's flags; press_seed is kvpress's seed)",
                      not_named("prompt_len")))
              .c_str())
      .def(
          "generate_tasks",
          [](const model::Llama& self, const py::kwargs& kwargs) {
            studies::TaskOptions o;
            apply_kwargs(studies::task_options_schema(), o, kwargs, "generate_tasks", suite_option);
            o.suite.max_positions = self.config().context;
            nlohmann::json rows = nlohmann::json::array();
            for (const auto& t : studies::generate_tasks(self.tokenizer(), o.suite))
              rows.push_back(studies::task_instance_json(t));
            return json_to_python(rows);
          },
          ("a seeded long-context task suite (kvoracle tasks generate): a list of instances, each a dict in kvpress's "
           "dataset columns (context, question, answer_prefix, answer, max_new_tokens) plus id, task, length, depth, "
           "rule and needles.\n" +
           kwargs_doc(studies::task_options_schema(), studies::TaskOptions{},
                      "Suite options (keyword arguments, the CLI's tasks flags; docs/tasks.md)", suite_option))
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
          [](const model::Llama& self, const std::optional<py::list>& instances, const py::kwargs& kwargs) {
            studies::TaskOptions o;
            apply_kwargs(studies::task_options_schema(), o, kwargs, "run_tasks");
            o.suite.max_positions = self.config().context;
            const studies::TaskEvalRequest req = o.eval_request();
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
            return with_report(json_to_python(studies::task_result_json(r)), studies::task_report(r));
          },
          py::arg("instances") = py::none(),
          ("answer task instances (dicts in kvpress's columns, e.g. from generate_tasks; None: the suite the suite "
           "options generate) with the full cache and under every policy (and press, protocol='prefill') at every "
           "budget (kvoracle tasks run): {protocol, outcomes: [{instance, task, length, depth, input_tokens, row, "
           "budget, kept, score, answer, needles_held, mass_of_optimum}], cells, cells_by_depth: [{task, length, "
           "depth, "
           "row, budget, count, accuracy, low, high, model_fails, needles_held, mass_of_optimum}]}.\n" +
           kwargs_doc(studies::task_options_schema(), studies::TaskOptions{},
                      "Options (keyword arguments, the CLI's tasks run flags; press_seed is kvpress's seed)"))
              .c_str());
}

}  // namespace kvo::python

// kvoracle._core: the real model in kvoracle's C++ (SmolLM2-135M-Instruct from its GGUF file): its
// tokenizer and greedy generation with the full cache, the library call behind `kvoracle generate`.
#include "bindings_support.hpp"
#include "kvo/model/generate.hpp"
#include "kvo/model/llama.hpp"
#include "kvo/model/model_path.hpp"
#include "kvo/model/tokenizer.hpp"

namespace kvo::python {

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
          "full KV cache: {'ids': generated ids, 'text': their decoding} (kvoracle generate)");
}

}  // namespace kvo::python

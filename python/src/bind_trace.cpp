// kvoracle._core: the Trace class and trace files.
#include <cmath>
#include <optional>

#include "bindings_support.hpp"
#include "kvo/core/synth.hpp"
#include "kvo/core/trace_io.hpp"
#include "schema_kwargs.hpp"

namespace kvo::python {

void bind_trace(py::module_& m) {
  py::class_<Trace>(m, "Trace")
      .def_readonly("n_layers", &Trace::n_layers)
      .def_readonly("n_heads", &Trace::n_heads)
      .def_readonly("n_kv_heads", &Trace::n_kv_heads)
      .def_readonly("n_tokens", &Trace::n_tokens)
      .def_readonly("head_dim", &Trace::head_dim)
      .def_readonly("attn_scale", &Trace::attn_scale)
      .def_readonly("prompt_len", &Trace::prompt_len)
      .def_readwrite("metadata", &Trace::metadata)
      .def_readonly("tokens", &Trace::tokens)
      .def(
          "q", [](const Trace& t, int l) { return layer_tensor(t.q, l, t.n_heads, t.n_tokens, t.head_dim); },
          "post-RoPE queries of a layer [H, n, d]", py::arg("layer"))
      .def(
          "k", [](const Trace& t, int l) { return layer_tensor(t.k, l, t.n_kv_heads, t.n_tokens, t.head_dim); },
          "keys of a layer [H_kv, n, d]", py::arg("layer"))
      .def(
          "v", [](const Trace& t, int l) { return layer_tensor(t.v, l, t.n_kv_heads, t.n_tokens, t.head_dim); },
          "values of a layer [H_kv, n, d]", py::arg("layer"))
      .def(
          "attn", [](const Trace& t, int l) { return layer_tensor(t.attn, l, t.n_heads, t.n_tokens, t.n_tokens); },
          "dense causal attention of a layer [H, n, n]", py::arg("layer"))
      .def_static(
          "from_arrays",
          [](const std::vector<FloatArray>& q, const std::vector<FloatArray>& k, const std::vector<FloatArray>& v,
             std::optional<double> attn_scale, int prompt_len) {
            require(!q.empty() && q.size() == k.size() && (v.empty() || v.size() == q.size()),
                    "from_arrays: q, k (and v) need one array per layer");
            Trace t;
            t.resize_layers(static_cast<int>(q.size()));
            require(q[0].ndim() == 3 && k[0].ndim() == 3, "from_arrays: arrays must be [heads, n, d]");
            t.n_heads = static_cast<int>(q[0].shape(0));
            t.n_tokens = static_cast<int>(q[0].shape(1));
            t.head_dim = static_cast<int>(q[0].shape(2));
            t.n_kv_heads = static_cast<int>(k[0].shape(0));
            // A transformer's logits are q.k / sqrt(d); pre-scaled queries say attn_scale=1.0.
            t.attn_scale = attn_scale.value_or(1.0 / std::sqrt(static_cast<double>(t.head_dim)));
            t.prompt_len = prompt_len;
            for (size_t l = 0; l < q.size(); ++l) {
              const int li = static_cast<int>(l);
              t.q[l] = from_array(q[l], "q", li, {t.n_heads, t.n_tokens, t.head_dim});
              t.k[l] = from_array(k[l], "k", li, {t.n_kv_heads, t.n_tokens, t.head_dim});
              if (!v.empty()) t.v[l] = from_array(v[l], "v", li, {t.n_kv_heads, t.n_tokens, t.head_dim});
            }
            t.validate();
            return t;
          },
          py::arg("q"), py::arg("k"), py::arg("v") = std::vector<FloatArray>{}, py::arg("attn_scale") = py::none(),
          py::arg("prompt_len") = 0,
          "a trace from per-layer arrays q [H, n, d], k and v [H_kv, n, d] (post-RoPE); logits are "
          "attn_scale * q.k, and attn_scale defaults to 1/sqrt(d), a transformer's scaled dot product (1.0 for "
          "queries already scaled)");

  m.def("read_trace", static_cast<Trace (*)(const std::string&)>(&read_trace), py::arg("path"),
        "read a kvoracle trace (.safetensors)");
  m.def(
      "write_trace",
      [](const std::string& path, const Trace& t, const std::string& dtype) {
        require(dtype == "f32" || dtype == "f16" || dtype == "bf16", "dtype must be f32, f16 or bf16");
        write_trace(path, t, dtype == "f16" ? DType::F16 : dtype == "bf16" ? DType::BF16 : DType::F32);
      },
      py::arg("path"), py::arg("trace"), py::arg("dtype") = "f32");
  m.def(
      "synthesize",
      [](const py::kwargs& kwargs) {
        SynthOptions o;
        apply_kwargs(synth_options_schema(), o, kwargs, "synthesize");
        py::gil_scoped_release release;
        return synthesize(o);
      },
      ("a seeded synthetic heavy-hitter trace (kvoracle synth): Zipf key importance, attention sinks and a recency "
       "bias.\n" +
       kwargs_doc(synth_options_schema(), SynthOptions{}, "Options (keyword arguments, the CLI's synth flags)"))
          .c_str());
}

}  // namespace kvo::python

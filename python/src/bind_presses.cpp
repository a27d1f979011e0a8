// kvoracle._core: kvpress's presses computed by kvoracle (scores and kept sets), kvoracle's
// policies as prefill presses, the name rule for both, and the exact prefill optimum, on a Trace.
#include <algorithm>

#include "bindings_support.hpp"
#include "kvo/core/adakv.hpp"
#include "kvo/core/policy_press.hpp"
#include "kvo/core/press.hpp"
#include "kvo/oracle/prefill_oracle.hpp"

namespace kvo::python {
namespace {

std::string policy_press_refusal_by_name(const std::string& policy, double compression_ratio) {
  return policy_press_refusal(parse_policy(policy), compression_ratio);
}

}  // namespace

void bind_presses(py::module_& m) {
  m.def(
      "press_names",
      [] {
        py::list out;
        for (const PressEntry& e : press_table())
          out.append(py::make_tuple(std::string(e.name), std::string(e.kvpress_class)));
        return out;
      },
      "(registry key, kvpress class) of every press kvoracle computes");
  m.def(
      "press_parameters",
      [](const std::string& press) {
        // The table's `reads` column, "window_size, kernel_size" or "n_sink (num_sinks), ...": the
        // keyword arguments run_press takes for this press.
        const std::string reads(press_entry(parse_press(press)).reads);
        py::list out;
        for (const auto& item : split_list(reads, "press parameters")) out.append(item.substr(0, item.find(' ')));
        return out;
      },
      py::arg("press"), "the parameters run_press reads for this press (kvpress's names)");
  m.def(
      "prefill_set",
      [](const std::string& name) {
        const PrefillSetName s = parse_prefill_set(name);
        const char* kind = s.kind == PrefillSetKind::Press    ? "press"
                           : s.kind == PrefillSetKind::Policy ? "policy"
                                                              : "optimum";
        const std::string bare = s.kind == PrefillSetKind::Press    ? press_name(s.press)
                                 : s.kind == PrefillSetKind::Policy ? policy_name(s.policy)
                                                                    : "optimum";
        return py::dict(py::arg("kind") = kind, py::arg("name") = bare, py::arg("label") = prefill_set_label(s));
      },
      py::arg("name"),
      "what a name means as a prefill set: kind (press, policy, optimum), bare name and label; a name a press "
      "and a policy share (tova, random) must be written press:NAME or policy:NAME");
  m.def("policy_press_refusal", &policy_press_refusal_by_name, py::arg("policy"), py::arg("compression_ratio"),
        "why this policy cannot cut a prompt to kvpress's count at this ratio, or '' when it can");
  m.def(
      "policy_prefill_kept",
      [](const Trace& tr, const std::string& policy, int prompt_len, int k, const py::kwargs& kwargs) {
        RunOptions ro = run_options(kwargs, "policy_prefill_kept");
        ro.budget = "1";  // the prompt is cut to k below; the budget is not read
        ro.prompt_len = prompt_len;
        const RunConfig base = ro.build(parse_policy(policy));
        std::vector<std::vector<int>> kept;
        {
          py::gil_scoped_release release;
          kept = policy_prefill_kept(tr, base, base.policy.id, prompt_len, k);
        }
        py::list out;
        for (const auto& s : kept) out.append(to_array(s));
        return out;
      },
      py::arg("trace"), py::arg("policy"), py::arg("prompt_len"), py::arg("k"),
      ("per (layer, KV head), layer-major: the k prompt positions the policy holds after the prompt (kvpress's "
       "protocol; KvoraclePress and eval --prefill). The policy's parameters are run options.\n" +
       run_options_doc())
          .c_str());
  m.def(
      "policy_prefill_scores",
      [](const Trace& tr, const std::string& policy, int prompt_len, int k, const py::kwargs& kwargs) {
        RunOptions ro = run_options(kwargs, "policy_prefill_scores");
        ro.budget = "1";  // the cut's k is set below; the budget is not read
        ro.prompt_len = prompt_len;
        const RunConfig base = ro.build(parse_policy(policy));
        std::vector<std::vector<double>> scores;
        {
          py::gil_scoped_release release;
          scores = policy_prefill_scores(tr, base, base.policy.id, prompt_len, k);
        }
        py::array_t<double> out({static_cast<py::ssize_t>(scores.size()), static_cast<py::ssize_t>(prompt_len)});
        for (size_t u = 0; u < scores.size(); ++u)
          std::copy(scores[u].begin(), scores[u].end(), out.mutable_data(static_cast<py::ssize_t>(u), 0));
        return out;
      },
      py::arg("trace"), py::arg("policy"), py::arg("prompt_len"), py::arg("k"),
      ("per (layer, KV head), layer-major, [units, prompt_len]: the score whose top-k is the policy's cut to k "
       "(policy_prefill_kept), for a policy whose eviction follows a per-token score (policies()' prefill_score: "
       "h2o, tova, scissorhands); its recent window at +inf. The policy's parameters are run options.\n" +
       run_options_doc())
          .c_str());
  m.def(
      "press_queries_read",
      [](const std::string& press, int prompt_len, const py::kwargs& kwargs) {
        PressOptions o = press_parameters(kwargs, "press_queries_read");
        o.id = parse_press(press);
        return press_queries_read(o, prompt_len);
      },
      py::arg("press"), py::arg("prompt_len"),
      "how many of the last prompt queries the press's score reads (0: none; prompt_len: all), with its "
      "parameters as run_press takes them");
  m.def(
      "run_press",
      [](const Trace& tr, int layer, int prompt_len, const std::string& press, double compression_ratio,
         const py::kwargs& kwargs) {
        PressOptions o = press_parameters(kwargs, "run_press");
        o.id = parse_press(press);
        o.compression_ratio = compression_ratio;
        PressResult r;
        {
          py::gil_scoped_release release;
          r = run_press(press_layer_of(tr, layer, prompt_len), o);
        }
        const py::ssize_t heads = static_cast<py::ssize_t>(r.scores.size());
        py::array_t<double> scores({heads, static_cast<py::ssize_t>(prompt_len)});
        for (py::ssize_t h = 0; h < heads; ++h)
          std::copy(r.scores[static_cast<size_t>(h)].begin(), r.scores[static_cast<size_t>(h)].end(),
                    scores.mutable_data(h, 0));
        py::list kept;
        for (const auto& k : r.kept) kept.append(to_array(k));
        return py::dict(py::arg("scores") = scores, py::arg("kept") = kept, py::arg("n_kept") = r.n_kept);
      },
      py::arg("trace"), py::arg("layer"), py::arg("prompt_len"), py::arg("press"), py::arg("compression_ratio") = 0.5,
      "a kvpress press on one layer of the trace's first prompt_len tokens: scores [H_kv, P] and kept positions");
  m.def(
      "adakv_kept",
      [](const Trace& tr, int layer, int prompt_len, const std::string& press, double compression_ratio,
         double alpha_safeguard, const py::kwargs& kwargs) {
        PressOptions o = press_parameters(kwargs, "adakv_kept");
        o.id = parse_press(press);
        o.compression_ratio = compression_ratio;
        std::vector<std::vector<int>> kept;
        {
          py::gil_scoped_release release;
          const PressResult r = run_press(press_layer_of(tr, layer, prompt_len), o);
          kept = adakv_kept(r.scores, press_n_kept(prompt_len, compression_ratio), alpha_safeguard);
        }
        py::list out;
        for (const auto& k : kept) out.append(to_array(k));
        return out;
      },
      py::arg("trace"), py::arg("layer"), py::arg("prompt_len"), py::arg("press"), py::arg("compression_ratio") = 0.5,
      py::arg("alpha_safeguard") = 0.2,
      "kvpress's AdaKVPress around a press on one layer of the trace's first prompt_len tokens: the positions each KV "
      "head keeps (its count varies; the layer keeps H n_kept)");
  m.def(
      "prefill_optimum",
      [](const Trace& tr, int layer, int kv_head, int prompt_len, int k) {
        PrefillUnit u;
        PrefillOptimum o;
        {
          py::gil_scoped_release release;
          u = prefill_unit(tr, layer, kv_head, prompt_len);
          o = solve_prefill(u, k);
        }
        return py::dict(
            py::arg("set") = to_array(o.set), py::arg("value") = o.value, py::arg("upper") = o.upper,
            py::arg("weights") = py::array_t<double>(static_cast<py::ssize_t>(u.weight.size()), u.weight.data()),
            py::arg("prompt_mass") = u.prompt_mass, py::arg("decoded_mass") = u.decoded_mass,
            py::arg("bound_weights") =
                py::array_t<double>(static_cast<py::ssize_t>(u.bound_weight.size()), u.bound_weight.data()),
            py::arg("bound_total") = u.bound_total);
      },
      py::arg("trace"), py::arg("layer"), py::arg("kv_head"), py::arg("prompt_len"), py::arg("k"),
      "the k prompt keys of one (layer, KV head) that keep the most attention mass of the queries after the prompt; "
      "bound_weights: the output bound's u_j (empty without values)");
  m.def(
      "output_errors",
      [](const Trace& tr, int layer, int kv_head, int prompt_len, const std::vector<std::vector<int>>& sets) {
        py::gil_scoped_release release;
        return output_errors(tr, layer, kv_head, prompt_len, sets);
      },
      py::arg("trace"), py::arg("layer"), py::arg("kv_head"), py::arg("prompt_len"), py::arg("sets"),
      "E(S) per kept set (ascending prompt positions): sum over the following queries of |o_t(S) - o_t(full)|, "
      "mean over the KV head's group");
}

}  // namespace kvo::python

// kvoracle._core: trace I/O, policies, replay, the oracles, the checks and the decoder-facing
// eviction manager on numpy arrays (pybind11). Errors arrive as ValueError with kvoracle's
// one-line message.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "kvo/checks/trace_checks.hpp"
#include "kvo/core/cache_manager.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/facility_location.hpp"
#include "kvo/core/greedy.hpp"
#include "kvo/core/modular_concave.hpp"
#include "kvo/core/replay.hpp"
#include "kvo/core/trace_io.hpp"
#include "kvo/gpu/scorer.hpp"
#include "kvo/oracle/dynamic_oracle.hpp"
#include "kvo/oracle/static_oracle.hpp"

namespace py = pybind11;
using namespace kvo;

namespace {

using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;
using DoubleArray = py::array_t<double, py::array::c_style | py::array::forcecast>;
using IntArray = py::array_t<int, py::array::c_style | py::array::forcecast>;
using FortranArray = py::array_t<double, py::array::f_style | py::array::forcecast>;

py::array_t<float> layer_tensor(const std::vector<std::vector<float>>& per_layer, int layer, int a, int b, int c) {
  require(layer >= 0 && layer < static_cast<int>(per_layer.size()),
          "layer " + std::to_string(layer) + " is not in the trace");
  const auto& v = per_layer[static_cast<size_t>(layer)];
  require(!v.empty(), "this tensor is absent in layer " + std::to_string(layer));
  py::array_t<float> out({a, b, c});
  std::copy(v.begin(), v.end(), out.mutable_data());
  return out;
}

std::vector<float> from_array(const FloatArray& a, const std::string& what, int layer, std::vector<py::ssize_t> shape) {
  require(a.ndim() == 3, what + " of layer " + std::to_string(layer) + " must be a 3-d array");
  for (int x = 0; x < 3; ++x)
    require(a.shape(x) == shape[static_cast<size_t>(x)],
            what + " of layer " + std::to_string(layer) + " has the wrong shape");
  return std::vector<float>(a.data(), a.data() + a.size());
}

// Column-major input (numpy makes the F-ordered copy when needed): one plain copy into Eigen.
Eigen::MatrixXd to_matrix(const FortranArray& a) {
  require(a.ndim() == 2, "expected a 2-d array");
  return Eigen::Map<const Eigen::MatrixXd>(a.data(), a.shape(0), a.shape(1));
}

// Facility location over the caller's float64 array: read in place when it is Fortran-ordered, or
// C-ordered and exactly symmetric; a C-ordered asymmetric one is transposed once in C++ (cache
// blocked: about 0.7 s for 800 MB here, numpy's strided copy 0.7-1.4 s); anything else
// is converted to a Fortran-ordered float64 array by numpy first. Holds that array while in use.
class SimilarityView {
 public:
  explicit SimilarityView(const py::array& a) {
    require(a.ndim() == 2, "similarity must be a 2-d array");
    const int rows = static_cast<int>(a.shape(0)), cols = static_cast<int>(a.shape(1));
    const bool c_only = (a.flags() & py::array::c_style) && !(a.flags() & py::array::f_style);
    if (py::isinstance<py::array_t<double>>(a) && c_only) {
      array_ = a;
      f_.emplace(FacilityLocation::RowMajor{}, static_cast<const double*>(array_.data()), rows, cols);
    } else {
      array_ = FortranArray::ensure(a);
      require(static_cast<bool>(array_), "similarity must be convertible to a float64 array");
      f_.emplace(static_cast<const double*>(array_.data()), rows, cols);
    }
  }
  const FacilityLocation& get() const { return *f_; }

 private:
  py::array array_;
  std::optional<FacilityLocation> f_;
};

py::array_t<int> to_array(const std::vector<int>& v) {
  py::array_t<int> out(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), out.mutable_data());
  return out;
}

// The module's one way to a run configuration (the same parsers as the CLI's option table).
RunConfig run_config(const std::string& policy, const std::string& budget, const std::string& recent = "",
                     const std::vector<std::string>& overrides = {}, int prompt_len = 0, std::uint64_t seed = 0,
                     std::vector<int> layers = {}, const std::string& gqa = "query") {
  RunConfig c;
  c.policy = PolicySpec::named(policy);
  c.budget = Budget::parse(budget, recent, overrides);
  c.gqa = parse_gqa(gqa);
  c.prompt_len = prompt_len;
  c.seed = seed;
  c.layers = std::move(layers);
  return c;
}

py::object json_to_python(const nlohmann::json& j) { return py::module_::import("json").attr("loads")(j.dump()); }

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "kvoracle: greedy KV-cache eviction against exact oracles on attention traces";
  py::register_exception<Error>(m, "KvoError", PyExc_ValueError);

  py::class_<Trace>(m, "Trace")
      .def_readonly("n_layers", &Trace::n_layers)
      .def_readonly("n_heads", &Trace::n_heads)
      .def_readonly("n_kv_heads", &Trace::n_kv_heads)
      .def_readonly("n_tokens", &Trace::n_tokens)
      .def_readonly("head_dim", &Trace::head_dim)
      .def_readonly("attn_scale", &Trace::attn_scale)
      .def_readonly("prompt_len", &Trace::prompt_len)
      .def_readonly("metadata", &Trace::metadata)
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
             double attn_scale, int prompt_len) {
            require(!q.empty() && q.size() == k.size() && (v.empty() || v.size() == q.size()),
                    "from_arrays: q, k (and v) need one array per layer");
            Trace t;
            t.resize_layers(static_cast<int>(q.size()));
            require(q[0].ndim() == 3 && k[0].ndim() == 3, "from_arrays: arrays must be [heads, n, d]");
            t.n_heads = static_cast<int>(q[0].shape(0));
            t.n_tokens = static_cast<int>(q[0].shape(1));
            t.head_dim = static_cast<int>(q[0].shape(2));
            t.n_kv_heads = static_cast<int>(k[0].shape(0));
            t.attn_scale = attn_scale;
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
          py::arg("q"), py::arg("k"), py::arg("v") = std::vector<FloatArray>{}, py::arg("attn_scale") = 1.0,
          py::arg("prompt_len") = 0, "a trace from per-layer arrays q [H, n, d], k and v [H_kv, n, d]");

  m.def("read_trace", static_cast<Trace (*)(const std::string&)>(&read_trace), py::arg("path"),
        "read a kvoracle trace (.safetensors)");
  m.def(
      "write_trace",
      [](const std::string& path, const Trace& t, const std::string& dtype) {
        require(dtype == "f32" || dtype == "f16" || dtype == "bf16", "dtype must be f32, f16 or bf16");
        write_trace(path, t, dtype == "f16" ? DType::F16 : dtype == "bf16" ? DType::BF16 : DType::F32);
      },
      py::arg("path"), py::arg("trace"), py::arg("dtype") = "f32");

  m.def("policies", [] {
    py::list out;
    for (const auto& p : policy_table())
      out.append(py::dict(py::arg("name") = std::string(p.name), py::arg("summary") = std::string(p.summary),
                          py::arg("nested") = p.traits.nested, py::arg("decoder") = p.traits.decoder,
                          py::arg("scorer") = p.traits.scorer != ScorerVariant::None,
                          py::arg("seeded") = p.traits.seeded));
    return out;
  });

  m.def(
      "replay",
      [](const Trace& t, const std::string& policy, const std::string& budget, const std::string& recent,
         const std::string& gqa, int prompt_len, std::uint64_t seed, std::vector<int> layers,
         std::vector<std::string> overrides) {
        ReplayOptions o;
        o.run = run_config(policy, budget, recent, overrides, prompt_len, seed, std::move(layers), gqa);
        ReplayResult r;
        {
          py::gil_scoped_release release;
          r = replay(t, o);
        }
        py::list heads;
        for (const auto& h : r.heads) {
          py::list kept, evicted;
          py::array_t<double> mass(static_cast<py::ssize_t>(h.steps.size()));
          for (size_t i = 0; i < h.steps.size(); ++i) {
            kept.append(to_array(h.steps[i].kept));
            evicted.append(to_array(h.steps[i].evicted));
            mass.mutable_at(static_cast<py::ssize_t>(i)) = h.steps[i].retained_mass;
          }
          heads.append(py::dict(py::arg("layer") = h.layer, py::arg("head") = h.head, py::arg("k") = h.budget.total,
                                py::arg("kept") = kept, py::arg("evicted") = evicted, py::arg("retained_mass") = mass,
                                py::arg("mean_retained_mass") = h.mean_retained_mass));
        }
        return heads;
      },
      py::arg("trace"), py::arg("policy") = policy_name(PolicyId::H2O), py::arg("budget") = "20%",
      py::arg("recent") = "", py::arg("gqa") = "query", py::arg("prompt_len") = 0, py::arg("seed") = 0,
      py::arg("layers") = std::vector<int>{}, py::arg("budget_overrides") = std::vector<std::string>{},
      "replay a policy over every head: per head the kept and evicted positions per step");

  m.def(
      "score",
      [](const Trace& t, const std::string& policy, std::vector<std::string> budgets, int prompt_len, int threads,
         const std::string& device) {
        require(!budgets.empty(), "score needs at least one budget");
        ScorerOptions o;
        o.run = run_config(policy, budgets.front(), "", {}, prompt_len);
        for (const auto& b : budgets) o.totals.push_back(Amount::parse(b));
        o.threads = threads;
        o.device = parse_scorer_device(device);
        ScorerResult r;
        {
          py::gil_scoped_release release;
          r = run_scorer(t, o);
        }
        py::list units;
        for (const auto& u : r.units) {
          py::array_t<double> sc(static_cast<py::ssize_t>(u.score.size()));
          std::copy(u.score.begin(), u.score.end(), sc.mutable_data());
          units.append(py::dict(py::arg("layer") = u.layer, py::arg("head") = u.head,
                                py::arg("budget") = budgets[static_cast<size_t>(u.budget_index)],
                                py::arg("k") = u.budget.total, py::arg("evict_step") = to_array(u.evict_step),
                                py::arg("score") = sc));
        }
        return py::dict(py::arg("device") = r.device, py::arg("units") = units);
      },
      py::arg("trace"), py::arg("policy") = policy_name(PolicyId::H2O),
      py::arg("budgets") = std::vector<std::string>{"20%"}, py::arg("prompt_len") = 0, py::arg("threads") = 0,
      py::arg("device") = "cpu",
      "the greedy scorer (h2o, h2o-paper) over every head and several budgets in one pass: per unit the step each "
      "token left the cache (-1: kept) and its final score");

  m.def(
      "topk_optimum",
      [](const DoubleArray& w, int k, const std::string& h) {
        std::vector<double> weights(w.data(), w.data() + w.size());
        const auto s = solve_topk(ModularConcave(weights, parse_concave(h)), k);
        return py::dict(py::arg("set") = to_array(s.set), py::arg("value") = s.value);
      },
      py::arg("weights"), py::arg("k"), py::arg("h") = "id", "max over |S| <= k of h(sum_{j in S} w_j)");
  m.def(
      "facility_location_optimum",
      [](const py::array& sim, int k, long long node_limit) {
        BranchAndBoundOptions bo;
        bo.node_limit = node_limit;
        const auto s = solve_static(SimilarityView(sim).get(), k, bo);
        return py::dict(py::arg("set") = to_array(s.set), py::arg("value") = s.value, py::arg("upper") = s.upper,
                        py::arg("exact") = s.exact, py::arg("method") = s.method);
      },
      py::arg("similarity"), py::arg("k"), py::arg("node_limit") = 2000000,
      "exact max of sum_r max_{j in S} sim[r, j] over |S| <= k (brute force or branch and bound)");
  m.def(
      "greedy_facility_location",
      [](const py::array& sim, int k, const std::string& method) {
        const SimilarityView view(sim);
        const FacilityLocation& f = view.get();
        GreedyOptions go;
        go.budget = k;
        const GreedyResult g = method == "naive" ? naive_greedy(f, go)
                               : method == "lazy"
                                   ? lazy_greedy(f, go)
                                   : (require(method == "stochastic", "method must be naive, lazy or stochastic"),
                                      stochastic_greedy(f, go));
        return py::dict(py::arg("picks") = to_array(g.picks), py::arg("value") = g.value,
                        py::arg("upper_bound") = g.upper_bound);
      },
      py::arg("similarity"), py::arg("k"), py::arg("method") = "lazy");
  m.def(
      "dynamic_optimum",
      [](const FortranArray& w, int k, int recent) {
        DynamicProblem p;
        p.w = to_matrix(w);
        p.budget = k;
        p.recent = recent;
        DynamicSolution s;
        {
          py::gil_scoped_release release;
          s = solve_dynamic(p);
        }
        py::list schedule;
        for (const auto& c : s.schedule()) schedule.append(to_array(c));
        return py::dict(py::arg("value") = s.value, py::arg("upper") = s.upper,
                        py::arg("certificate") = dual_bound(p, s.end, s.price), py::arg("end") = to_array(s.end),
                        py::arg("schedule") = schedule);
      },
      py::arg("w"), py::arg("k"), py::arg("recent") = 0,
      "exact offline optimum of nested eviction: max sum_i sum_{j in S_i} w[i, j], S_i ⊆ S_{i-1} ∪ {i}, |S_i| <= k");

  m.def(
      "verify",
      [](const Trace& t, const std::string& budget, std::vector<std::string> policies, std::vector<std::string> checks,
         int prompt_len, std::uint64_t seed, std::vector<double> sweep) {
        TraceChecksOptions o;
        if (!policies.empty()) {
          o.policies.clear();
          for (const auto& p : policies) o.policies.push_back(parse_policy(p));
        }
        o.run = run_config(policy_name(o.policies.front()), budget, "", {}, prompt_len, seed);
        for (auto& c : checks) o.checks.insert(c);
        o.sweep = std::move(sweep);
        TraceChecksResult r;
        {
          py::gil_scoped_release release;
          r = run_trace_checks(t, o);
        }
        return json_to_python(r.report.to_json({{"budget", r.budget}}));
      },
      py::arg("trace"), py::arg("budget") = "20%", py::arg("policies") = std::vector<std::string>{},
      py::arg("checks") = std::vector<std::string>{}, py::arg("prompt_len") = 0, py::arg("seed") = 0,
      py::arg("sweep") = std::vector<double>{},
      "run the claim checks C1-C27 / D1-D11; returns report.json as a dict (docs/report-format.md)");

  py::class_<KvEvictionManager>(m, "KvEvictionManager")
      .def(py::init([](const std::string& policy, const std::string& budget, int n_layers, int n_kv_heads, int batch,
                       int max_len, int prompt_len, const std::string& recent, std::vector<std::string> overrides,
                       std::uint64_t seed) {
             CacheManagerOptions o;
             o.run = run_config(policy, budget, recent, overrides, prompt_len, seed);
             o.n_layers = n_layers;
             o.n_kv_heads = n_kv_heads;
             o.batch = batch;
             o.max_len = max_len;
             return std::make_unique<KvEvictionManager>(o);
           }),
           py::arg("policy"), py::arg("budget"), py::arg("n_layers"), py::arg("n_kv_heads"), py::arg("batch") = 1,
           py::arg("max_len"), py::arg("prompt_len") = 0, py::arg("recent") = "",
           py::arg("budget_overrides") = std::vector<std::string>{}, py::arg("seed") = 0)
      .def(
          "step",
          [](KvEvictionManager& mgr, int seq, int layer, int kv_head, int pos, const IntArray& positions,
             const DoubleArray& probs) {
            std::vector<int> p(positions.data(), positions.data() + positions.size());
            std::vector<double> w(probs.data(), probs.data() + probs.size());
            return to_array(mgr.step(seq, layer, kv_head, pos, p, w));
          },
          py::arg("seq"), py::arg("layer"), py::arg("kv_head"), py::arg("pos"), py::arg("positions"), py::arg("probs"),
          "register step pos (positions held incl. pos, ascending; the group's attention over them); "
          "returns the positions to evict now")
      .def(
          "held",
          [](const KvEvictionManager& mgr, int seq, int layer, int kv) { return to_array(mgr.held(seq, layer, kv)); },
          py::arg("seq"), py::arg("layer"), py::arg("kv_head"))
      .def(
          "budget", [](const KvEvictionManager& mgr, int layer, int kv) { return mgr.budget(layer, kv).total; },
          py::arg("layer"), py::arg("kv_head"));
}

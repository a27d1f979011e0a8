// kvoracle._core: the decoder-facing eviction manager.
#include "bindings_support.hpp"
#include "kvo/core/cache_manager.hpp"
#include "kvo/model/evicting_decoder.hpp"
#include "kvo/studies/offline_schedule.hpp"

namespace kvo::python {

void bind_manager(py::module_& m) {
  py::class_<KvEvictionManager>(m, "KvEvictionManager")
      .def(py::init([](const std::string& policy, const std::string& budget, int n_layers, int n_kv_heads, int batch,
                       int max_len, const Trace* schedule_trace, const py::kwargs& kwargs) {
             require(!kwargs.contains("budget"), "KvEvictionManager: budget is given twice");
             RunOptions ro = run_options(kwargs, "KvEvictionManager");
             ro.budget = budget;
             CacheManagerOptions o;
             const PolicyId id = parse_policy(policy);
             o.run = ro.build(id, nullptr, SharedBudgets::Allowed);
             if (schedule_trace != nullptr) {
               require(policy_traits(id).offline,
                       "KvEvictionManager: schedule_trace is read by the offline "
                       "policies (oracle, lookahead) only, not by " +
                           policy);
               py::gil_scoped_release release;  // a long solve: other Python threads run meanwhile
               o.run.policy.schedule = studies::offline_schedules(id, *schedule_trace, o.run.budget);
             }
             o.n_layers = n_layers;
             o.n_kv_heads = n_kv_heads;
             o.batch = batch;
             o.max_len = max_len;
             return std::make_unique<KvEvictionManager>(o);
           }),
           py::arg("policy"), py::arg("budget"), py::arg("n_layers"), py::arg("n_kv_heads"), py::arg("batch") = 1,
           py::arg("max_len"), py::arg("schedule_trace") = nullptr,
           ("a policy with a budget per (sequence, layer, KV head), or shared by a layer's or the model's KV heads "
            "(budget_scope); prompt_len (default 0) and the policy's parameters are run options. schedule_trace: "
            "for the offline policies (oracle, lookahead), the full cache's trace of the whole sequence, whose "
            "schedule they follow (as eval and tasks run drive them).\n" +
            run_options_doc())
               .c_str())
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
          "returns the positions to evict now (under a shared budget_scope: once the group's last unit stepped pos)")
      .def(
          "take_evicted",
          [](KvEvictionManager& mgr, int seq, int layer, int kv) { return to_array(mgr.take_evicted(seq, layer, kv)); },
          py::arg("seq"), py::arg("layer"), py::arg("kv_head"),
          "positions a shared budget evicted from this unit while another unit stepped; drop them before its next "
          "step (always empty under per-head budgets)")
      .def("max_held", &KvEvictionManager::max_held, py::arg("layer"), py::arg("kv_head"),
           "the most positions the unit can hold after a step: its budget, or its shared group's")
      .def_property_readonly("budget_scope",
                             [](const KvEvictionManager& mgr) { return budget_scope_name(mgr.budget_scope()); })
      .def(
          "held",
          [](const KvEvictionManager& mgr, int seq, int layer, int kv) { return to_array(mgr.held(seq, layer, kv)); },
          py::arg("seq"), py::arg("layer"), py::arg("kv_head"))
      .def(
          "budget", [](const KvEvictionManager& mgr, int layer, int kv) { return mgr.budget(layer, kv).total; },
          py::arg("layer"), py::arg("kv_head"));
  // The engine's eviction pools without its model: EvictingCache feeds each layer's q, k, v.
  py::class_<model::EvictingDecoder>(
      m, "EvictingPools",
      "kvoracle's evicting attention (the engine's EvictingDecoder) for another implementation's layers: per "
      "(layer, KV head) a pool of `slots` rows; attend_layer(layer, pos0, q, k, v) adds T tokens' keys and values "
      "one step at a time, each step's queries attending the rows held, the manager evicting, exactly as the engine "
      "decodes token by token (KV heads on threads)")
      .def(py::init([](KvEvictionManager& manager, int n_layers, int n_kv_heads, int head_dim, int group, float scale,
                       int slots, int seq) {
             if (slots <= 0) slots = model::decoder_slots(manager);
             return std::make_unique<model::EvictingDecoder>(model::PoolShape{.n_layers = n_layers,
                                                                              .n_kv_heads = n_kv_heads,
                                                                              .head_dim = head_dim,
                                                                              .group = group,
                                                                              .scale = scale},
                                                             manager, slots, seq);
           }),
           py::arg("manager"), py::arg("n_layers"), py::arg("n_kv_heads"), py::arg("head_dim"), py::arg("group"),
           py::arg("scale"), py::arg("slots") = 0, py::arg("seq") = 0, py::keep_alive<1, 2>(),
           "slots 0: what the manager needs (model::decoder_slots: its largest unit budget, or its prompt_len, plus "
           "the new token)")
      .def(
          "attend_layer",
          [](model::EvictingDecoder& d, int layer, int pos0, const FloatArray& q, const FloatArray& k,
             const FloatArray& v) {
            const model::PoolShape s = d.shape();
            const py::ssize_t kv_width = static_cast<py::ssize_t>(s.n_kv_heads) * s.head_dim;
            require(q.ndim() == 2 && k.ndim() == 2 && v.ndim() == 2 && q.shape(0) == k.shape(0) &&
                        k.shape(0) == v.shape(0) && k.shape(1) == kv_width && v.shape(1) == kv_width &&
                        q.shape(1) == kv_width * s.group,
                    "EvictingPools.attend_layer: q [T, " + std::to_string(kv_width * s.group) + "], k and v [T, " +
                        std::to_string(kv_width) + "], one row per token");
            require(layer >= 0 && layer < s.n_layers, "EvictingPools.attend_layer: layer " + std::to_string(layer) +
                                                          " outside [0, " + std::to_string(s.n_layers) + ")");
            const auto rows = q.shape(0);
            using model::MatrixRM;
            using Map = Eigen::Map<const MatrixRM>;
            const MatrixRM qm = Map(q.data(), rows, q.shape(1)), km = Map(k.data(), rows, k.shape(1)),
                           vm = Map(v.data(), rows, v.shape(1));
            MatrixRM out = MatrixRM::Zero(rows, q.shape(1));
            {
              py::gil_scoped_release release;
              d.attend_layer(layer, pos0, qm, km, vm, out);
            }
            py::array_t<float> result({rows, static_cast<py::ssize_t>(q.shape(1))});
            std::copy(out.data(), out.data() + out.size(), result.mutable_data());
            return result;
          },
          py::arg("layer"), py::arg("pos0"), py::arg("q"), py::arg("k"), py::arg("v"),
          "T tokens at positions pos0.. of one layer: returns the attention outputs [T, H*d]")
      .def(
          "held", [](const model::EvictingDecoder& d, int layer, int kv) { return to_array(d.held(layer, kv)); },
          py::arg("layer"), py::arg("kv_head"), "positions the pool holds, ascending")
      .def("set_eviction_log", &model::EvictingDecoder::set_eviction_log, py::arg("on"))
      .def(
          "evictions",
          [](const model::EvictingDecoder& d, int layer, int kv) {
            py::list out;
            for (const auto& e : d.evictions(layer, kv)) out.append(py::make_tuple(e.step, e.gone));
            return out;
          },
          py::arg("layer"), py::arg("kv_head"), "(step, [positions]) of every eviction, with the log on")
      .def("bytes_held", &model::EvictingDecoder::bytes_held, "float32 K and V bytes of the rows held");
}

}  // namespace kvo::python

// kvoracle._core: the decoder-facing eviction manager.
#include "bindings_support.hpp"
#include "kvo/core/cache_manager.hpp"
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
}

}  // namespace kvo::python

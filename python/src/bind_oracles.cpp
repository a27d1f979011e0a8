// kvoracle._core: the exact optima (top-k, facility location, the offline optimum) and greedy.
#include "bindings_support.hpp"
#include "kvo/core/greedy.hpp"
#include "kvo/core/modular_concave.hpp"
#include "kvo/oracle/offline_oracle.hpp"
#include "kvo/oracle/static_oracle.hpp"

namespace kvo::python {

void bind_oracles(py::module_& m) {
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
      "offline_optimum",
      [](const FortranArray& w, int k, int recent) {
        OfflineProblem p;
        p.w = to_matrix(w);
        p.budget = k;
        p.recent = recent;
        OfflineSolution s;
        {
          py::gil_scoped_release release;
          s = solve_offline(p);
        }
        py::list schedule;
        for (const auto& c : s.schedule()) schedule.append(to_array(c));
        return py::dict(py::arg("value") = s.value, py::arg("upper") = s.upper,
                        py::arg("certificate") = dual_bound(p, s.end, s.price), py::arg("end") = to_array(s.end),
                        py::arg("schedule") = schedule);
      },
      py::arg("w"), py::arg("k"), py::arg("recent") = 0,
      "exact offline optimum of nested eviction: max sum_i sum_{j in S_i} w[i, j], S_i ⊆ S_{i-1} ∪ {i}, |S_i| <= k");
}

}  // namespace kvo::python

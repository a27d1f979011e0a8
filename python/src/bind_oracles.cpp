// kvoracle._core: the exact optima (top-k, facility location, the offline optimum) and greedy.
#include "bindings_support.hpp"
#include "kvo/core/greedy.hpp"
#include "kvo/core/modular_concave.hpp"
#include "kvo/oracle/allocation_run.hpp"
#include "kvo/oracle/contract_run.hpp"
#include "kvo/oracle/offline_oracle.hpp"
#include "kvo/oracle/offline_run.hpp"
#include "kvo/oracle/prefill_run.hpp"
#include "kvo/oracle/shared_decoding.hpp"
#include "kvo/oracle/shared_prefill.hpp"
#include "kvo/oracle/static_oracle.hpp"
#include "kvo/oracle/static_run.hpp"
#include "schema_kwargs.hpp"

namespace kvo::python {

void bind_oracles(py::module_& m) {
  m.def(
      "engine_fields",
      [](const std::string& engine) {
        for (const EngineEntry& e : engine_table())
          if (e.name == engine) {
            std::vector<std::string> names;
            for (const EngineField& f : e.fields()) names.push_back(f.name);
            return names;
          }
        throw Error("unknown engine '" + engine + "'");
      },
      py::arg("engine"), "the fields an engine's contract document takes (docs/engines.md)");
  m.def(
      "contract_oracle",
      [](const Trace& t, const py::kwargs& kwargs) {
        ContractRequest req;
        py::kwargs rest;
        for (const auto& [key, value] : kwargs) {
          if (py::str(key).cast<std::string>() != "contract") {
            rest[key] = value;
            continue;
          }
          // A document (a dict), a file's path or JSON text, or a list of them.
          const auto one = [](const py::handle& c) {
            return py::isinstance<py::dict>(c) ? python_to_json(c).dump() : py::str(c).cast<std::string>();
          };
          if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value))
            for (const py::handle& c : value) req.contracts.push_back(one(c));
          else
            req.contracts.push_back(one(value));
        }
        apply_kwargs(ContractRequest::schema(), req, rest, "contract_oracle");
        std::optional<ContractResult> r;
        {
          py::gil_scoped_release release;
          r = run_contract(t, req);
        }
        return with_report(json_to_python(r->to_json()), r->report());
      },
      py::arg("trace"),
      ("the exact optimum under an engine's eviction contract, its price against per-head sets and each policy "
       "obeying it (kvoracle oracle contract); contract= a dict, a JSON file's path or JSON text, or a list of "
       "them (docs/engines.md); "
       "the --json file's content.\n" +
       kwargs_doc(ContractRequest::schema(), ContractRequest{},
                  "Contract options (keyword arguments, the CLI's `oracle contract` flags; docs/engines.md)"))
          .c_str());
  m.def(
      "allocation_oracle",
      [](const Trace& t, const py::kwargs& kwargs) {
        AllocationRequest req;
        apply_kwargs(AllocationRequest::schema(), req, kwargs, "allocation_oracle");
        std::optional<AllocationResult> r;
        {
          py::gil_scoped_release release;
          r = run_allocation(t, req);
        }
        // an in-memory trace: no file name in the JSON form
        return with_report(json_to_python(r->to_json(req, "")), r->report(req, "the trace"));
      },
      py::arg("trace"),
      ("the exact optima when KV heads and layers share one budget, against per-head budgets of the same total "
       "(kvoracle oracle allocation): prefill compression, decoding eviction (protocol=...) or periodic compression "
       "(protocol='decoding', interval=..., target=...); the --json file's "
       "content.\n" +
       kwargs_doc(AllocationRequest::schema(), AllocationRequest{},
                  "Allocation options (keyword arguments, the CLI's `oracle allocation` flags; docs/allocation.md)"))
          .c_str());
  m.def(
      "static_oracle",
      [](const Trace& t, const py::kwargs& kwargs) {
        StaticOracleRequest req;
        apply_kwargs(StaticOracleRequest::schema(), req, kwargs, "static_oracle");
        StaticOracleResult r;
        {
          py::gil_scoped_release release;
          r = run_static_oracle(t, req);
        }
        return with_report(json_to_python(nlohmann::json(r.records())), r.report("the trace"));
      },
      py::arg("trace"),
      ("the exact static optimum of every chosen head at every N-th step (kvoracle oracle static): one record per "
       "solve (layer, head, step, objective, value, upper, exact, method, set). objective: dense-acc (default), mass "
       "or fl.\n" +
       kwargs_doc(StaticOracleRequest::schema(), StaticOracleRequest{}, "Options (keyword arguments, the CLI's flags)"))
          .c_str());
  m.def(
      "prefill_oracle",
      [](const Trace& t, int prompt_len, const py::kwargs& kwargs) {
        PrefillOracleRequest req;
        req.prompt_len = prompt_len;
        apply_kwargs(PrefillOracleRequest::schema(), req, kwargs, "prefill_oracle", not_named("prompt_len"));
        PrefillOracleResult r;
        {
          py::gil_scoped_release release;
          r = run_prefill_oracle(t, req);
        }
        py::list summary;
        for (const auto& s : r.summary)
          summary.append(py::dict(
              py::arg("press") = press_name(s.press), py::arg("compression_ratio") = s.compression_ratio,
              py::arg("units") = s.units, py::arg("mean_k") = s.mean_k, py::arg("fraction_of_optimum") = s.fraction,
              py::arg("worst_fraction") = s.worst, py::arg("where") = s.where, py::arg("overlap") = s.overlap,
              py::arg("prompt_share") = s.share, py::arg("optimum_prompt_share") = s.optimum_share,
              py::arg("output_error") = r.fidelity ? py::object(py::float_(s.output_error)) : py::none()));
        return with_report(py::dict(py::arg("prompt_len") = r.prompt_len, py::arg("following_queries") = r.following,
                                    py::arg("output_fidelity") = r.fidelity, py::arg("summary") = summary,
                                    py::arg("records") = json_to_python(r.records())),
                           r.report(req, "the trace"));
      },
      py::arg("trace"), py::arg("prompt_len"),
      ("the exact prefill optimum against kvpress's presses on every chosen layer and KV head (kvoracle oracle "
       "prefill): per (press, ratio) means in `summary`, one record per unit in `records`.\n" +
       kwargs_doc(PrefillOracleRequest::schema(), PrefillOracleRequest{},
                  "Options (keyword arguments, the CLI's flags)", not_named("prompt_len")))
          .c_str());
  m.def(
      "offline_oracle",
      [](const py::object& trace, const py::kwargs& kwargs) {
        OfflineOracleRequest req;
        py::dict rest;
        apply_kwargs(OfflineOracleRequest::schema(), req, kwargs, "offline_oracle", {}, &rest);
        const int threads = team_threads(rest, "offline_oracle", OfflineOracleRequest::schema().names());
        // A Trace object, or a trace file's path (the CLI's argument, and its name in the result).
        const bool is_trace = py::isinstance<Trace>(trace);
        const std::string name = is_trace ? "the trace" : py::str(trace).cast<std::string>();
        std::optional<OfflineOracleResult> r;
        {
          const Trace read = is_trace ? Trace{} : read_trace(name);
          const Trace& t = is_trace ? trace.cast<const Trace&>() : read;
          py::gil_scoped_release release;
          r = run_offline_oracle(t, req, WorkTeam(threads), name);
        }
        nlohmann::json j = r->to_json();
        j["summary"] = r->summary_json();
        return with_report(json_to_python(j), r->report());
      },
      py::arg("trace"),
      ("the exact offline optimum OPT_dyn on every head of a trace (a Trace or a file's path) and each policy's "
       "competitive ratio (kvoracle oracle offline): the --json file's fields (trace, forced_window, heads) and "
       "`summary`, the table the CLI prints. threads=0: all cores.\n" +
       kwargs_doc(OfflineOracleRequest::schema(), OfflineOracleRequest{},
                  "Options (keyword arguments, the CLI's flags)"))
          .c_str());
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

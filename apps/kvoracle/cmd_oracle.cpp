// kvoracle oracle: the exact static optimum max_{|S| <= k, S ⊆ [i]} f_i(S) per step and head.
#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cmd_allocation.hpp"
#include "cmd_contract.hpp"
#include "cmd_oracle_prefill.hpp"
#include "commands.hpp"
#include "distributed.hpp"
#include "kvo/core/atomic_file.hpp"
#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/facility_location.hpp"
#include "kvo/core/parallel.hpp"
#include "kvo/core/progress.hpp"
#include "kvo/core/text_list.hpp"
#include "kvo/core/trace_io.hpp"
#include "kvo/oracle/offline_run.hpp"
#include "kvo/oracle/static_run.hpp"
#include "options.hpp"
#include "schema_flags.hpp"

namespace kvo::cli {
namespace {

struct OfflineArgs {
  std::string trace, json, checkpoint;
  RequestFlags<OfflineOracleRequest> request;
};

// The heads go to every MPI rank under mpirun/srun; --checkpoint makes the run resumable. The JSON's
// temporary is made before any work (a path that cannot be written fails first) and renamed over
// the target when the run has finished.
int run_offline(const OfflineArgs& a, const Global& g, const CLI::App* cmd) {
  const OfflineOracleRequest req = a.request.request();
  req.validate();
  const auto checkpoint = open_checkpoint(a.checkpoint, cmd, {"trace", "--json", "--checkpoint"}, {a.trace});
  const scaleout::RankTeam team(g.threads, !g.quiet, checkpoint.get());
  Trace tr;
  team.together([&] { tr = read_trace(a.trace); });  // every rank reads; an error all ranks hit is printed once
  std::unique_ptr<AtomicFile> json;
  if (!a.json.empty() && team.leader()) json = std::make_unique<AtomicFile>(a.json);
  const std::optional<OfflineOracleResult> result = run_offline_oracle(tr, req, team, a.trace);
  if (!result) return 0;  // another rank: rank 0 holds the result
  const OfflineOracleResult& r = *result;
  if (json) {
    json->stream() << r.to_json().dump(1) << '\n';
    json->commit();
  }
  std::cout << r.report().text();
  if (json) std::cout << "results: " << a.json << '\n';
  return r.violations ? 1 : 0;
}

}  // namespace

namespace {

struct StaticArgs {
  std::string trace, out;
  RequestFlags<StaticOracleRequest> request;
};

void add_trace(CLI::App* c, std::string& trace) {
  c->add_option("trace", trace, "trace file (.safetensors)")->required()->check(CLI::ExistingFile);
}

// The one-command form of `oracle` (TRACE [--offline | --prefill P]) is gone: one line naming the
// mode that replaces what was typed.
[[noreturn]] void refuse_old_oracle_form(const std::vector<std::string>& typed) {
  const auto has = [&](const char* flag) { return std::find(typed.begin(), typed.end(), flag) != typed.end(); };
  if (has("--offline") || has("--dynamic"))
    throw Error("`oracle TRACE --offline` is now `kvoracle oracle offline TRACE ...`");
  if (has("--prefill"))
    throw Error("`oracle TRACE --prefill P` is now `kvoracle oracle prefill TRACE --prompt-len P ...`");
  throw Error(
      "`oracle TRACE` is now `kvoracle oracle static TRACE ...` (modes: static, offline, prefill, allocation, "
      "contract)");
}

int run_static(const StaticArgs& a, const Global& g) {
  StaticOracleRequest req = a.request.request();
  req.threads = g.threads;
  req.validate();
  const Trace tr = read_trace(a.trace);
  const RunConfig run = req.run.build(PolicyId::Full, &tr);  // the heads, for the bar's size
  Progress bar("oracle", static_cast<long>(run.chosen_layers(tr.n_layers).size() * run.chosen_heads(tr.n_heads).size()),
               !g.quiet);
  req.on_head = [&] { bar.tick(); };
  const StaticOracleResult res = run_static_oracle(tr, req);
  bar.finish();
  if (!a.out.empty()) {
    AtomicFile f(a.out);
    for (const auto& rec : res.records()) f.stream() << rec.dump() << '\n';
    f.commit();
  }
  std::cout << res.report(a.trace).text();
  if (!a.out.empty()) std::cout << "per-step optima: " << a.out << '\n';
  return 0;
}

}  // namespace

Runner add_oracle(CLI::App& app, const Global& g) {
  auto* cmd = app.add_subcommand(
      "oracle",
      "exact optima: `oracle static` per step and head, `oracle offline` over the whole sequence with each policy's "
      "competitive ratio, `oracle prefill` of compressing a prompt once against kvpress's presses, `oracle allocation` "
      "of the same with budgets shared across heads and layers, `oracle contract` under an engine's eviction contract");
  cmd->require_subcommand(0, 1);

  auto st = std::make_shared<StaticArgs>();
  auto* st_cmd = cmd->add_subcommand("static", "exact static optimum max_{|S| <= k, S ⊆ [i]} f_i(S) per step and head");
  add_trace(st_cmd, st->trace);
  st->request.add(st_cmd);  // --objective (dense-acc, mass or fl here), --concave and --window: the static objective
  st_cmd->add_option("--out,-o", st->out, "per-step optima as JSON Lines");

  auto off = std::make_shared<OfflineArgs>();
  auto* off_cmd = cmd->add_subcommand(
      "offline",
      "exact offline optimum of the nested problem (retained dense mass) and each policy's competitive ratio");
  add_trace(off_cmd, off->trace);
  off->request.add(off_cmd);
  off_cmd->add_option("--json", off->json, "write per-head results as JSON to this path");
  off_cmd->add_option("--checkpoint", off->checkpoint,
                      "store each finished head in this directory; a rerun with the same arguments resumes");

  auto pre = std::make_shared<PrefillArgs>();
  auto* pre_cmd = cmd->add_subcommand(
      "prefill",
      "exact optimum of compressing the prompt once to k keys per KV head (the following queries' retained mass) "
      "and kvpress's presses against it");
  add_trace(pre_cmd, pre->trace);
  pre->request.add(pre_cmd);
  pre_cmd->get_option("--prompt-len")->required();
  pre_cmd->add_option("--json", pre->json, "write the records as JSON");

  const AllocationCommand alloc = add_allocation(cmd, g);
  const ContractCommand contract = add_contract(cmd, g);
  cmd->allow_extras();  // after the modes, which keep refusing what they do not know: the old one-command form

  return [st, off, pre, &g, cmd, off_cmd, pre_cmd, st_cmd, alloc, contract] {
    if (st_cmd->parsed()) return run_static(*st, g);
    if (alloc.cmd->parsed()) return alloc.run();
    if (contract.cmd->parsed()) return contract.run();
    if (off_cmd->parsed()) return run_offline(*off, g, off_cmd);
    if (pre_cmd->parsed()) return run_prefill_oracle(*pre, g);
    if (!cmd->remaining().empty()) refuse_old_oracle_form(cmd->remaining());
    throw Error("oracle needs a mode: kvoracle oracle static|offline|prefill|allocation|contract TRACE ...");
  };
}

}  // namespace kvo::cli

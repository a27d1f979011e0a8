#include "distributed.hpp"

#include <nlohmann/json.hpp>

#include "kvo/core/error.hpp"
#include "kvo/core/file_sha256.hpp"
#include "options.hpp"

namespace kvo::cli {

void on_every_rank(const std::function<void()>& step, const std::string& prefix) {
  std::string error;
  try {
    step();
  } catch (const Error& e) {
    const std::string what = e.what();
    error = prefix.empty() || what.find(prefix) != std::string::npos ? what : "'" + prefix + "': " + what;
  }
  dist::Team::world().agree(error);
}

std::unique_ptr<dist::Checkpoint> open_checkpoint(const std::string& dir, const CLI::App* cmd,
                                                  const std::vector<std::string>& outputs,
                                                  const std::vector<std::string>& traces) {
  std::unique_ptr<dist::Checkpoint> ck;
  on_every_rank([&] {
    if (dir.empty() || !dist::Team::world().root()) return;
    nlohmann::json sums = nlohmann::json::array();
    for (const auto& p : traces) sums.push_back(file_sha256(p));
    ck = std::make_unique<dist::Checkpoint>(
        dir, nlohmann::json{
                 {"command", cmd->get_name()}, {"arguments", option_values(cmd, outputs)}, {"traces_sha256", sums}});
  });
  return ck;
}

std::vector<std::string> run_plan(const PlanUnits& p, int threads, bool quiet, const dist::Checkpoint* checkpoint) {
  dist::UnitPlan units{p.section, {}, {}};
  for (int u = 0; u < p.size; ++u) {
    units.names.push_back(p.name(u));
    units.cost.push_back(p.cost ? p.cost(u) : 1.0);
  }
  Progress bar(p.label, p.size, !quiet);
  auto out = dist::run_units(units, p.run, {threads, checkpoint, [&] { bar.tick(); }});
  bar.finish();
  return out;
}

}  // namespace kvo::cli

#include "kvo/scaleout/rank_team.hpp"

#include "kvo/core/error.hpp"
#include "kvo/core/file_sha256.hpp"
#include "kvo/core/progress.hpp"
#include "kvo/scaleout/plan_runner.hpp"
#include "kvo/scaleout/team.hpp"

namespace kvo::scaleout {

bool RankTeam::leader() const { return Team::world().root(); }

void RankTeam::together(const std::function<void()>& step, const std::string& prefix) const {
  std::string error;
  try {
    step();
  } catch (const Error& e) {
    error = prefixed(e.what(), prefix);
  }
  Team::world().agree(error);
}

RankTeam::RankTeam(int threads, bool progress, const Checkpoint* checkpoint)
    : WorkTeam(threads > 0 ? threads : Team::world().default_threads(), progress), checkpoint_(checkpoint) {}

std::optional<std::vector<std::string>> RankTeam::run_units(const WorkUnits& plan, const std::string& section,
                                                            const std::string& label) const {
  Progress bar(label, plan.size(), progress_);
  std::optional<std::vector<std::string>> out =
      run_plan_units(plan, {section, threads_, checkpoint_, [&bar] { bar.tick(); }});
  bar.finish();
  return out;
}

std::unique_ptr<Checkpoint> open_run_checkpoint(const std::string& dir, nlohmann::json identity,
                                                const std::vector<std::string>& traces) {
  std::unique_ptr<Checkpoint> ck;
  RankTeam(1, false).together([&] {
    if (dir.empty() || !Team::world().root()) return;
    nlohmann::json sums = nlohmann::json::array();
    for (const auto& p : traces) sums.push_back(file_sha256(p));
    identity["traces_sha256"] = sums;
    ck = std::make_unique<Checkpoint>(dir, std::move(identity));
  });
  return ck;
}

}  // namespace kvo::scaleout

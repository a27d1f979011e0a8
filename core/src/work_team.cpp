#include "kvo/core/work_team.hpp"

#include "kvo/core/error.hpp"
#include "kvo/core/progress.hpp"

namespace kvo {

std::string WorkTeam::prefixed(const std::string& what, const std::string& prefix) {
  return prefix.empty() || what.find(prefix) != std::string::npos ? what : "'" + prefix + "': " + what;
}

void WorkTeam::together(const std::function<void()>& step, const std::string& prefix) const {
  try {
    step();
  } catch (const Error& e) {
    if (prefix.empty()) throw;
    throw Error(prefixed(e.what(), prefix));
  }
}

std::optional<std::vector<std::string>> WorkTeam::run_units(const WorkUnits& plan, const std::string& /*section*/,
                                                            const std::string& label) const {
  Progress bar(label, plan.size(), progress_);
  std::vector<std::string> bytes(static_cast<size_t>(plan.size()));
  parallel_for(plan.size(), threads_, [&](int u) {
    bytes[static_cast<size_t>(u)] = plan.run_bytes(u);
    bar.tick();
  });
  bar.finish();
  return bytes;
}

}  // namespace kvo

// Where a library call's work plans run (kvo/core/work_plan.hpp): this process on threads, or,
// through scaleout::RankTeam, every MPI rank with a checkpoint. Calls that split into units take a
// team, so the CLI, the Python module and C++ callers run the same code; the leader alone gets
// the assembled results and writes the outputs.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kvo/core/work_plan.hpp"

namespace kvo {

class WorkTeam {
 public:
  // threads: worker threads (0: all cores); progress: a bar on stderr per plan.
  explicit WorkTeam(int threads = 0, bool progress = false) : threads_(threads), progress_(progress) {}
  virtual ~WorkTeam() = default;

  int threads() const { return threads_; }
  bool progress() const { return progress_; }  // whether its plans show bars (a plan's own passes may too)
  // Whether this process assembles the results and writes the outputs (one process: always).
  virtual bool leader() const { return true; }
  // Runs `step` on every member. When it throws kvo::Error on any member, every member throws: the
  // message with "'prefix': " before it unless it already names `prefix` (the trace being read).
  virtual void together(const std::function<void()>& step, const std::string& prefix = "") const;
  // Every unit's bytes in unit order on the leader, nothing elsewhere. `section` names the plan
  // within the run (a checkpoint's folder); `label` its progress bar.
  virtual std::optional<std::vector<std::string>> run_units(const WorkUnits& plan, const std::string& section,
                                                            const std::string& label) const;

  template <class Result>
  std::optional<Result> run(const WorkPlan<Result>& plan, const std::string& section, const std::string& label) const {
    std::optional<std::vector<std::string>> bytes = run_units(plan, section, label);
    if (!bytes) return std::nullopt;
    return plan.assemble_bytes(*bytes);
  }

 protected:
  // kvo::Error's message with the prefix rule of together().
  static std::string prefixed(const std::string& what, const std::string& prefix);
  int threads_;
  bool progress_;
};

}  // namespace kvo

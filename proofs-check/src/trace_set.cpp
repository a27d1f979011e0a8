#include "kvo/proofs_check/trace_set.hpp"

#include <algorithm>
#include <filesystem>
#include <map>

#include "kvo/core/atomic_file.hpp"
#include "kvo/core/error.hpp"

namespace kvo {

namespace fs = std::filesystem;

std::vector<std::string> expand_trace_paths(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const auto& a : args) {
    if (!fs::is_directory(a)) {
      out.push_back(a);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& e : fs::directory_iterator(a))
      if (e.is_regular_file() && e.path().extension() == ".safetensors") found.push_back(e.path().string());
    require(!found.empty(), "directory '" + a + "' holds no .safetensors trace");
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

std::vector<std::string> trace_report_names(const std::vector<std::string>& paths) {
  std::vector<std::string> names;
  std::map<std::string, int> seen;
  for (const auto& p : paths) {
    std::string stem = fs::path(p).stem().string();
    if (stem.empty() || stem[0] == '.') stem = "trace" + stem;
    const int k = seen[stem]++;
    names.push_back(k == 0 ? stem : stem + "-" + std::to_string(k + 1));
  }
  return names;
}

StagedReport::StagedReport(std::string dir) : dir_(std::move(dir)), stage_(dir_ + "/.kvoracle-partial") {
  std::error_code ec;
  fs::remove_all(stage_, ec);
  fs::create_directories(stage_, ec);
  require(fs::is_directory(stage_), "cannot create report directory '" + dir_ + "'");
}

StagedReport::~StagedReport() {
  std::error_code ec;
  fs::remove_all(stage_, ec);
}

std::string StagedReport::stage(const std::string& name) const { return stage_ + "/" + name; }

void StagedReport::commit(const std::vector<TraceReportEntry>& traces) {
  for (const auto& t : traces) {
    const fs::path to = fs::path(dir_) / t.name;
    std::error_code ec;
    fs::remove_all(to, ec);
    fs::rename(stage(t.name), to, ec);
    require(!ec, "cannot move the report of " + t.name + " into '" + dir_ + "': " + ec.message());
  }
  write_file_atomic(dir_ + "/report.json", multi_report_json(traces).dump(1) + "\n");
  write_file_atomic(dir_ + "/report.md", multi_report_markdown(traces));
}

}  // namespace kvo

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
  scaleout::Team::world().agree(error);
}

std::unique_ptr<scaleout::Checkpoint> open_checkpoint(const std::string& dir, const CLI::App* cmd,
                                                      const std::vector<std::string>& outputs,
                                                      const std::vector<std::string>& traces) {
  std::unique_ptr<scaleout::Checkpoint> ck;
  on_every_rank([&] {
    if (dir.empty() || !scaleout::Team::world().root()) return;
    nlohmann::json sums = nlohmann::json::array();
    for (const auto& p : traces) sums.push_back(file_sha256(p));
    ck = std::make_unique<scaleout::Checkpoint>(
        dir, nlohmann::json{
                 {"command", cmd->get_name()}, {"arguments", option_values(cmd, outputs)}, {"traces_sha256", sums}});
  });
  return ck;
}

}  // namespace kvo::cli

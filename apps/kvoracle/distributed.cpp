#include "distributed.hpp"

#include <nlohmann/json.hpp>

#include "options.hpp"

namespace kvo::cli {

std::unique_ptr<scaleout::Checkpoint> open_checkpoint(const std::string& dir, const CLI::App* cmd,
                                                      const std::vector<std::string>& outputs,
                                                      const std::vector<std::string>& traces) {
  return scaleout::open_run_checkpoint(
      dir, nlohmann::json{{"command", cmd->get_name()}, {"arguments", option_values(cmd, outputs)}}, traces);
}

}  // namespace kvo::cli

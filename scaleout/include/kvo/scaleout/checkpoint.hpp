// A checkpoint directory: the results of finished work units, each in its own file written
// atomically, and a manifest with the run's identity (command, arguments, traces' sha256). A rerun
// with the same identity reuses the stored units; a different identity is refused in one line, and
// so is a unit whose bytes no longer match the sha256 stored with them.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace kvo::scaleout {

class Checkpoint {
 public:
  // Creates `dir` and its manifest, or opens an existing one: kvo::Error naming the first
  // difference when its identity is not `identity` (an object; its keys are compared one by one).
  Checkpoint(std::string dir, nlohmann::json identity);
  const std::string& dir() const { return dir_; }
  // The stored result of unit `unit` of `section`, or nothing when it is not finished; kvo::Error
  // naming the file when it is damaged or does not match its checksum.
  std::optional<std::string> load(const std::string& section, int unit) const;
  void store(const std::string& section, int unit, const std::string& result) const;
  int stored(const std::string& section) const;  // finished units of a section

 private:
  std::string unit_path(const std::string& section, int unit) const;
  std::string dir_;
};

}  // namespace kvo::scaleout

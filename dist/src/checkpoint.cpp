#include "kvo/dist/checkpoint.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kvo/core/atomic_file.hpp"
#include "kvo/core/error.hpp"

namespace kvo::dist {
namespace {

namespace fs = std::filesystem;
constexpr const char* kMagic = "kvoracle-unit 1\n";

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  require(in.good(), "cannot read '" + path + "'");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string short_text(const nlohmann::json& v) {
  std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

// The first difference between two identities, as "<key>: <old> here, <new> now".
std::string first_difference(const nlohmann::json& was, const nlohmann::json& now, const std::string& at) {
  if (was.is_object() && now.is_object()) {
    for (const auto& [k, v] : now.items()) {
      if (!was.contains(k)) return at + k + ": absent from the checkpoint";
      if (auto d = first_difference(was[k], v, at + k + "."); !d.empty()) return d;
    }
    for (const auto& [k, v] : was.items())
      if (!now.contains(k)) return at + k + ": absent from this run";
    return "";
  }
  if (was.is_array() && now.is_array() && was.size() == now.size()) {
    for (size_t i = 0; i < now.size(); ++i)
      if (auto d = first_difference(was[i], now[i], at + std::to_string(i) + "."); !d.empty()) return d;
    return "";
  }
  if (was == now) return "";
  std::string key = at.empty() ? "identity" : at.substr(0, at.size() - 1);
  return key + " is " + short_text(was) + " in the checkpoint, " + short_text(now) + " in this run";
}

}  // namespace

Checkpoint::Checkpoint(std::string dir, nlohmann::json identity) : dir_(std::move(dir)) {
  require(identity.is_object(), "internal: a checkpoint identity is a JSON object");
  std::error_code ec;
  fs::create_directories(dir_, ec);
  require(fs::is_directory(dir_), "--checkpoint '" + dir_ + "' is not a directory and cannot be created");
  const std::string manifest = dir_ + "/manifest.json";
  if (fs::exists(manifest)) {
    nlohmann::json m;
    try {
      m = nlohmann::json::parse(read_all(manifest));
    } catch (const nlohmann::json::exception&) {
      throw Error("checkpoint '" + dir_ + "': manifest.json is not JSON; delete the directory to start afresh");
    }
    require(m.is_object() && m.value("format", "") == "kvoracle-checkpoint" && m.contains("identity"),
            "checkpoint '" + dir_ + "': manifest.json is not a kvoracle checkpoint manifest");
    const std::string d = first_difference(m["identity"], identity, "");
    require(d.empty(), "checkpoint '" + dir_ + "' belongs to another run (" + d +
                           "): rerun with the same arguments and traces, or use another directory");
  } else {
    for (const auto& e : fs::directory_iterator(dir_))
      require(e.path().filename().string()[0] == '.',
              "--checkpoint '" + dir_ + "' is not empty and has no manifest: use an empty or new directory");
    write_file_atomic(
        manifest,
        nlohmann::json{{"format", "kvoracle-checkpoint"}, {"format_version", 1}, {"identity", identity}}.dump(1) +
            "\n");
  }
}

std::string Checkpoint::unit_path(const std::string& section, int unit) const {
  char name[32];
  std::snprintf(name, sizeof name, "u%06d.bin", unit);
  return dir_ + "/" + section + "/" + name;
}

std::optional<std::string> Checkpoint::load(const std::string& section, int unit) const {
  const std::string path = unit_path(section, unit);
  if (!fs::exists(path)) return std::nullopt;
  std::string s = read_all(path);
  const std::string magic = kMagic;
  bool ok = s.size() >= magic.size() + 8 && s.compare(0, magic.size(), magic) == 0;
  std::uint64_t len = 0;
  if (ok) {
    for (int b = 0; b < 8; ++b)
      len |= static_cast<std::uint64_t>(static_cast<unsigned char>(s[magic.size() + b])) << (8 * b);
    ok = len == s.size() - magic.size() - 8;
  }
  require(ok, "checkpoint file '" + path + "' is damaged; delete it and rerun to recompute that unit");
  return s.substr(magic.size() + 8);
}

void Checkpoint::store(const std::string& section, int unit, const std::string& result) const {
  std::error_code ec;
  fs::create_directories(dir_ + "/" + section, ec);
  std::string s = kMagic;
  const std::uint64_t len = result.size();
  for (int b = 0; b < 8; ++b) s.push_back(static_cast<char>((len >> (8 * b)) & 0xffu));
  s += result;
  write_file_atomic(unit_path(section, unit), s);
}

int Checkpoint::stored(const std::string& section) const {
  int count = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_ + "/" + section, ec))
    if (e.path().extension() == ".bin") ++count;
  return count;
}

}  // namespace kvo::dist

#include "kvo/scaleout/checkpoint.hpp"

#include <cstdio>
#include <filesystem>

#include "kvo/core/atomic_file.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/file_sha256.hpp"
#include "kvo/core/text_file.hpp"

namespace kvo::scaleout {
namespace {

namespace fs = std::filesystem;
// A unit file: this magic line, the payload's length (8 bytes, little-endian), the sha256 (64 hex
// digits) of the unit's name and payload, then the payload. Format 1 had no checksum: a flipped bit
// read back as a result. The name is hashed too, so a unit file copied or renamed to another
// unit's place is refused instead of read as that unit's result.
constexpr const char* kMagic = "kvoracle-unit 2\n";
constexpr std::size_t kDigestSize = 64;
constexpr int kFormatVersion = 2;

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

std::string unit_digest(const std::string& section, int unit, const std::string& payload) {
  return bytes_sha256(section + "/" + std::to_string(unit) + "\n" + payload);
}

}  // namespace

Checkpoint::Checkpoint(std::string dir, nlohmann::json identity) : dir_(std::move(dir)) {
  require(identity.is_object(), "internal: a checkpoint identity is a JSON object");
  std::error_code ec;
  fs::create_directories(dir_, ec);
  require(fs::is_directory(dir_), "checkpoint directory '" + dir_ + "' is not a directory and cannot be created");
  const std::string manifest = dir_ + "/manifest.json";
  if (fs::exists(manifest)) {
    nlohmann::json m;
    try {
      m = nlohmann::json::parse(read_text_file(manifest, "checkpoint"));
    } catch (const nlohmann::json::exception&) {
      throw Error("checkpoint '" + dir_ + "': manifest.json is not JSON; delete the directory to start afresh");
    }
    require(m.is_object() && m.value("format", "") == "kvoracle-checkpoint" && m.contains("identity"),
            "checkpoint '" + dir_ + "': manifest.json is not a kvoracle checkpoint manifest");
    require(m.value("format_version", 0) == kFormatVersion,
            "checkpoint '" + dir_ + "' was written by another kvoracle version (format " +
                m.value("format_version", nlohmann::json(0)).dump() + ", this one reads " +
                std::to_string(kFormatVersion) + "); delete the directory to start afresh");
    const std::string d = first_difference(m["identity"], identity, "");
    require(d.empty(), "checkpoint '" + dir_ + "' belongs to another run (" + d +
                           "): rerun with the same arguments and traces, or use another directory");
  } else {
    for (const auto& e : fs::directory_iterator(dir_))
      require(e.path().filename().string()[0] == '.',
              "checkpoint directory '" + dir_ + "' is not empty and has no manifest: use an empty or new directory");
    write_file_atomic(
        manifest,
        nlohmann::json{{"format", "kvoracle-checkpoint"}, {"format_version", kFormatVersion}, {"identity", identity}}
                .dump(1) +
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
  std::string s = read_text_file(path, "checkpoint");
  const std::string magic = kMagic;
  const std::size_t header = magic.size() + 8 + kDigestSize;
  bool ok = s.size() >= header && s.compare(0, magic.size(), magic) == 0;
  std::uint64_t len = 0;
  if (ok) {
    for (int b = 0; b < 8; ++b)
      len |= static_cast<std::uint64_t>(static_cast<unsigned char>(s[magic.size() + b])) << (8 * b);
    ok = len == s.size() - header;
  }
  require(ok, "checkpoint file '" + path + "' is damaged; delete it and rerun to recompute that unit");
  std::string payload = s.substr(header);
  require(unit_digest(section, unit, payload) == std::string_view(s).substr(magic.size() + 8, kDigestSize),
          "checkpoint file '" + path +
              "' does not match its checksum (its bytes changed after it was written, or it is another unit's file); " +
              "delete it and rerun to recompute that unit");
  return payload;
}

void Checkpoint::store(const std::string& section, int unit, const std::string& result) const {
  std::error_code ec;
  fs::create_directories(dir_ + "/" + section, ec);
  std::string s = kMagic;
  const std::uint64_t len = result.size();
  for (int b = 0; b < 8; ++b) s.push_back(static_cast<char>((len >> (8 * b)) & 0xffu));
  s += unit_digest(section, unit, result);
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

}  // namespace kvo::scaleout

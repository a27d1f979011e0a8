#include "kvo/core/trace_io.hpp"

#include <cstdio>
#include <cstdlib>
#include <regex>
#include <set>

#include "kvo/core/error.hpp"
#include "kvo/core/memory_limit.hpp"

namespace kvo {
namespace {

double meta_number(const std::map<std::string, std::string>& m, const std::string& key, double fallback,
                   const std::string& path) {
  auto it = m.find(key);
  if (it == m.end()) return fallback;
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  require(!it->second.empty() && *end == '\0',
          "'" + path + "': metadata " + key + " = '" + it->second + "' is not a number");
  return v;
}

void expect_rank3(const TensorInfo& t, const std::string& path) {
  require(t.shape.size() == 3,
          "'" + path + "': tensor '" + t.name + "' must have 3 dimensions, has " + std::to_string(t.shape.size()));
}

}  // namespace

Trace read_trace(const std::string& path) { return trace_from(SafetensorsFile(path), path); }

Trace read_trace(std::span<const unsigned char> bytes, const std::string& name) {
  return trace_from(SafetensorsFile(bytes, name), name);
}

Trace trace_from(const SafetensorsFile& f, const std::string& path) {
  const auto& meta = f.metadata();
  auto fmt = meta.find("format");
  require(fmt != meta.end() && fmt->second == kTraceFormat,
          "'" + path + "' is not a kvoracle trace (metadata format != kvoracle-trace)");
  auto ver = meta.find("format_version");
  require(ver != meta.end() && ver->second == kTraceVersion,
          "'" + path + "' has trace format version '" + (ver == meta.end() ? std::string("none") : ver->second) +
              "'; this kvoracle reads version " + kTraceVersion);

  static const std::regex re(R"(layers\.(\d+)\.(q|k|v|attn))");
  std::set<int> layers;
  for (const auto& t : f.tensors()) {
    std::smatch m;
    if (std::regex_match(t.name, m, re)) {
      require(m[1].str().size() < 7, "'" + path + "': layer index in '" + t.name + "' is too large");
      layers.insert(std::stoi(m[1].str()));
    } else if (t.name != "tokens") {
      throw Error("'" + path + "': unexpected tensor '" + t.name + "'");
    }
  }
  require(!layers.empty(), "'" + path + "' holds no layer tensors");
  const int n_layers = *layers.rbegin() + 1;
  require(static_cast<int>(layers.size()) == n_layers,
          "'" + path + "': layers are not numbered 0.." + std::to_string(n_layers - 1) + " without gaps");
  std::uint64_t values = 0;  // every tensor becomes fp32 / int32 in memory
  for (const auto& t : f.tensors()) values += static_cast<std::uint64_t>(t.numel());
  require_memory(values * 4, "trace '" + path + "'");

  Trace tr;
  tr.resize_layers(n_layers);
  tr.metadata = meta;
  tr.attn_scale = meta_number(meta, "attn_scale", 1.0, path);
  tr.prompt_len = static_cast<int>(meta_number(meta, "prompt_len", 0.0, path));
  auto dim = [&](const TensorInfo& t, size_t axis, int& slot, const char* what) {
    const auto v = t.shape[axis];
    require(v >= 1 && v < (1 << 24), "'" + path + "': tensor '" + t.name + "' has " + what + " = " + std::to_string(v));
    if (slot == 0) slot = static_cast<int>(v);
    require(slot == v, "'" + path + "': tensor '" + t.name + "' has " + what + " = " + std::to_string(v) +
                           ", other tensors have " + std::to_string(slot));
  };
  for (int l = 0; l < n_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    if (const auto* t = f.find(p + "q")) {
      expect_rank3(*t, path);
      dim(*t, 0, tr.n_heads, "heads");
      dim(*t, 1, tr.n_tokens, "tokens");
      dim(*t, 2, tr.head_dim, "head_dim");
      tr.q[l] = f.read_float(*t);
    }
    for (const char* kv : {"k", "v"}) {
      if (const auto* t = f.find(p + kv)) {
        expect_rank3(*t, path);
        dim(*t, 0, tr.n_kv_heads, "kv_heads");
        dim(*t, 1, tr.n_tokens, "tokens");
        dim(*t, 2, tr.head_dim, "head_dim");
        (kv[0] == 'k' ? tr.k[l] : tr.v[l]) = f.read_float(*t);
      }
    }
    if (const auto* t = f.find(p + "attn")) {
      expect_rank3(*t, path);
      dim(*t, 0, tr.n_heads, "heads");
      dim(*t, 1, tr.n_tokens, "tokens");
      dim(*t, 2, tr.n_tokens, "tokens");
      tr.attn[l] = f.read_float(*t);
    }
  }
  if (tr.n_kv_heads == 0) {
    // Dense-only traces: the KV groups write_trace recorded, else one cache per head.
    const double group = meta_number(meta, "gqa_group", 1.0, path);
    const bool divides = group >= 1.0 && group == static_cast<int>(group) && tr.n_heads % static_cast<int>(group) == 0;
    require(divides, "'" + path + "': metadata gqa_group does not divide the " + std::to_string(tr.n_heads) + " heads");
    tr.n_kv_heads = tr.n_heads / static_cast<int>(group);
  }
  if (const auto* t = f.find("tokens")) {
    require(t->shape.size() == 1, "'" + path + "': tensor 'tokens' must have 1 dimension");
    tr.tokens = f.read_int32(*t);
  }
  try {
    tr.validate();
  } catch (const Error& e) {
    throw Error("'" + path + "': " + e.what());
  }
  return tr;
}

void write_trace(const std::string& path, const Trace& tr, DType dtype) {
  tr.validate();
  require(dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16, "traces are written as F32, F16 or BF16");
  auto make = dtype == DType::F32 ? tensor_f32 : dtype == DType::F16 ? tensor_f16 : tensor_bf16;
  std::vector<TensorOut> out;
  const auto n = static_cast<std::int64_t>(tr.n_tokens), d = static_cast<std::int64_t>(tr.head_dim);
  for (int l = 0; l < tr.n_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    if (!tr.q[l].empty()) out.push_back(make(p + "q", {tr.n_heads, n, d}, tr.q[l]));
    if (!tr.k[l].empty()) out.push_back(make(p + "k", {tr.n_kv_heads, n, d}, tr.k[l]));
    if (!tr.v[l].empty()) out.push_back(make(p + "v", {tr.n_kv_heads, n, d}, tr.v[l]));
    if (!tr.attn[l].empty()) out.push_back(make(p + "attn", {tr.n_heads, n, n}, tr.attn[l]));
  }
  if (!tr.tokens.empty()) out.push_back(tensor_i32("tokens", {n}, tr.tokens));
  auto meta = tr.metadata;
  meta["format"] = kTraceFormat;
  meta["format_version"] = kTraceVersion;
  char scale[40];
  std::snprintf(scale, sizeof scale, "%.17g", tr.attn_scale);
  meta["attn_scale"] = scale;
  meta["prompt_len"] = std::to_string(tr.prompt_len);
  meta["gqa_group"] = std::to_string(tr.group_size());
  write_safetensors(path, out, meta);
}

}  // namespace kvo

// Test helper for the Python reference tests: exposes kvoracle's dequantisation, forward pass,
// tokenizer and trace I/O on files, so numpy / gguf / tokenizers / safetensors can check them.
//   probe dequant MODEL OUT.safetensors NAME...   dequantised tensors as F32 [rows, cols]
//   probe logits MODEL TEXT N OUT.safetensors     tokens [N] and logits [N, vocab] (one batch)
//   probe tokenize MODEL TEXT OUT.json             {"ids": [...], "roundtrip": bool}
//   probe trace-roundtrip IN OUT                   read_trace then write_trace (F32)
//   probe evict MODEL IDS.json POLICY BUDGET OUT.json
//                                                  EvictingDecoder over {"ids": [...]}: per layer and
//                                                  KV head, [[step, evicted positions...], ...]
#include <algorithm>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kvo/core/cache_manager.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/safetensors.hpp"
#include "kvo/core/trace_io.hpp"
#include "kvo/model/evicting_decoder.hpp"
#include "kvo/model/gguf.hpp"
#include "kvo/model/llama.hpp"

using namespace kvo;

namespace {
std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  require(in.good(), "cannot read " + p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

int main(int argc, char** argv) try {
  require(argc >= 2, "usage: probe dequant|logits|tokenize|trace-roundtrip ...");
  const std::string mode = argv[1];
  if (mode == "dequant" && argc >= 4) {
    const model::GgufFile f(argv[2]);
    std::vector<TensorOut> out;
    for (int a = 4; a < argc; ++a) {
      const auto& t = f.tensor(argv[a]);
      out.push_back(tensor_f32(t.name, {static_cast<std::int64_t>(t.rows()), static_cast<std::int64_t>(t.dims[0])},
                               f.dequantize(t)));
    }
    write_safetensors(argv[3], out, {});
  } else if (mode == "logits" && argc == 6) {
    const model::Llama m(argv[2]);
    std::vector<int> ids = m.tokenizer().encode(slurp(argv[3]));
    ids.resize(static_cast<size_t>(std::stoi(argv[4])));
    auto cache = m.new_cache(static_cast<int>(ids.size()));
    const model::MatrixRM logits = m.forward(ids, cache);
    std::vector<float> lv(logits.data(), logits.data() + logits.size());
    write_safetensors(argv[5],
                      {tensor_i32("tokens", {static_cast<std::int64_t>(ids.size())}, {ids.begin(), ids.end()}),
                       tensor_f32("logits", {logits.rows(), logits.cols()}, lv)},
                      {});
  } else if (mode == "tokenize" && argc == 5) {
    const model::Llama m(argv[2]);
    const std::string text = slurp(argv[3]);
    const auto ids = m.tokenizer().encode(text);
    std::ofstream(argv[4]) << nlohmann::json{{"ids", ids}, {"roundtrip", m.tokenizer().decode(ids) == text}}.dump();
  } else if (mode == "trace-roundtrip" && argc == 4) {
    write_trace(argv[3], read_trace(argv[2]), DType::F32);
  } else if (mode == "evict" && (argc == 7 || argc == 9)) {  // [budget scope, prompt length]
    const model::Llama m(argv[2]);
    const auto ids = nlohmann::json::parse(slurp(argv[3])).at("ids").get<std::vector<int>>();
    const auto& c = m.config();
    CacheManagerOptions mo;
    mo.run.policy = PolicySpec::named(argv[4]);
    mo.run.budget = Budget::parse(argv[5]);
    mo.n_layers = c.n_layers;
    mo.n_kv_heads = c.n_kv_heads;
    mo.max_len = static_cast<int>(ids.size());
    if (argc == 9) {
      mo.run.budget_scope = parse_budget_scopes(argv[7]).front();
      mo.run.prompt_len = std::stoi(argv[8]);
    }
    KvEvictionManager mgr(mo);
    model::EvictingDecoder dec(m, mgr, std::max(mgr.max_held(0, 0), mo.run.prompt_len) + 1);
    nlohmann::json log = nlohmann::json::array();
    std::vector<std::vector<int>> before(static_cast<size_t>(c.n_layers * c.n_kv_heads));
    for (int l = 0; l < c.n_layers; ++l) log.push_back(std::vector<nlohmann::json>(static_cast<size_t>(c.n_kv_heads)));
    for (int t = 0; t < static_cast<int>(ids.size()); ++t) {
      dec.step(ids[static_cast<size_t>(t)]);
      for (int l = 0; l < c.n_layers; ++l)
        for (int kv = 0; kv < c.n_kv_heads; ++kv) {
          auto& prev = before[static_cast<size_t>(l * c.n_kv_heads + kv)];
          prev.push_back(t);
          const auto& now = mgr.held(0, l, kv);
          std::vector<int> gone{t};
          std::set_difference(prev.begin(), prev.end(), now.begin(), now.end(), std::back_inserter(gone));
          if (gone.size() > 1) log[static_cast<size_t>(l)][static_cast<size_t>(kv)].push_back(gone);
          prev = now;
        }
    }
    std::ofstream(argv[6]) << log.dump();
  } else {
    throw Error("bad arguments for probe " + mode);
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "probe: " << e.what() << '\n';
  return 2;
}

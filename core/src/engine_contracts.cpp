// Each engine's fields as a small struct with its schema, and what they impose. The readings of
// the engines' documentation and code are in docs/engines.md, "What each engine's fields mean".
#include "kvo/core/engine_contracts.hpp"

#include <array>
#include <string>

#include "kvo/core/error.hpp"
#include "kvo/core/registry.hpp"

namespace kvo {
namespace {

template <class T>
std::vector<EngineField> fields_of(const Schema<T>& schema) {
  std::vector<EngineField> out;
  for (const Field<T>& f : schema.fields()) out.push_back({f.name(), f.kind, f.info.help});
  return out;
}

// TensorRT-LLM's TriAttentionKvCacheCompressionConfig.
struct TensorRtLlm {
  std::string eviction_mode = "union";
  int budget = 2048;
  int beta = 128;
  bool normalize_scores = true;
  std::string calibration_path;
  std::string algorithm = "triattention";
};
const Schema<TensorRtLlm>& trt_schema() {
  using T = TensorRtLlm;
  static const Schema<T> s(
      "contract (tensorrt-llm)",
      {member(&T::eviction_mode, {.name = "eviction_mode",
                                  .help = "union (one set for every layer and head), per_head (each KV head one set "
                                          "across the layers) or per_layer_perhead (each layer and KV head its own)"}),
       member(&T::budget, {.name = "budget", .help = "decode tokens kept at each eviction; the prompt is kept on top"}),
       member(&T::beta, {.name = "beta", .help = "the eviction period in generated tokens"}),
       member(&T::normalize_scores,
              {.name = "normalize_scores", .help = "the scorer's; the contract does not read it"}),
       member(&T::calibration_path,
              {.name = "calibration_path", .help = "the scorer's; the contract does not read it"}),
       member(&T::algorithm, {.name = "algorithm", .help = "triattention (the only one)"})});
  return s;
}
EvictionContract read_trt(const nlohmann::json& j, int, int P) {
  const TensorRtLlm t = trt_schema().from_json(j);
  EvictionContract c;
  if (t.eviction_mode == "union")
    c.kept_sets = KeptSets::Model;
  else if (t.eviction_mode == "per_head")
    c.kept_sets = KeptSets::KvHead;
  else if (t.eviction_mode == "per_layer_perhead")
    c.kept_sets = KeptSets::Head;
  else
    throw Error("contract: eviction_mode '" + t.eviction_mode + "' is not union, per_head or per_layer_perhead");
  require(t.algorithm == "triattention", "contract: algorithm '" + t.algorithm + "' is not triattention");
  require(t.budget > 0, "contract: budget must be positive");
  require(t.beta > 0, "contract: beta must be positive");
  c.sinks = P;
  c.budget = P + t.budget;
  c.prompt_len = P;
  c.interval = t.beta;
  return c;
}

// OpenVINO GenAI's CacheEvictionConfig, with the scheduler's block size.
struct OpenVino {
  int start_size = 0, recent_size = 0, max_cache_size = 0;
  std::string aggregation_mode = "SUM";
  bool apply_rotation = false;
  int block_size = 32;
};
const Schema<OpenVino>& ov_schema() {
  using T = OpenVino;
  static const Schema<T> s(
      "contract (openvino)",
      {member(&T::start_size, {.name = "start_size", .help = "tokens at the start never evicted (whole blocks)"}),
       member(&T::recent_size, {.name = "recent_size", .help = "the newest tokens never evicted (whole blocks)"}),
       member(&T::max_cache_size,
              {.name = "max_cache_size", .help = "tokens kept (whole blocks); a partly filled block comes on top"}),
       member(&T::aggregation_mode, {.name = "aggregation_mode",
                                     .help = "SUM, NORM_SUM or ADAPTIVE_RKV: the scorer's; the contract does not "
                                             "read it"}),
       member(&T::apply_rotation, {.name = "apply_rotation", .help = "the scorer's; the contract does not read it"}),
       member(&T::block_size, {.name = "block_size", .help = "SchedulerConfig's KV block size in tokens"})});
  return s;
}
EvictionContract read_ov(const nlohmann::json& j, int, int) {
  const OpenVino o = ov_schema().from_json(j);
  const int b = o.block_size;
  require(b >= 1, "contract: block_size must be positive");
  for (const auto& [name, v] : {std::pair{"start_size", o.start_size}, std::pair{"recent_size", o.recent_size},
                                std::pair{"max_cache_size", o.max_cache_size}})
    require(v > 0 && v % b == 0, "contract: " + std::string(name) + " (" + std::to_string(v) +
                                     ") must be a positive multiple of block_size " + std::to_string(b));
  require(o.max_cache_size > o.start_size + o.recent_size,
          "contract: max_cache_size must exceed start_size + recent_size");
  require(o.aggregation_mode == "SUM" || o.aggregation_mode == "NORM_SUM" || o.aggregation_mode == "ADAPTIVE_RKV",
          "contract: aggregation_mode '" + o.aggregation_mode + "' is not SUM, NORM_SUM or ADAPTIVE_RKV");
  EvictionContract c;
  c.kept_sets = KeptSets::Layer;  // a layer's KV heads share its block table
  c.page_size = b;
  c.sinks = o.start_size;
  c.recent = o.recent_size;
  c.budget = o.max_cache_size + b;  // the block being filled comes on top of max_cache_size
  return c;
}

// llama.cpp: llama_memory_seq_rm removes a position from every layer and head at once.
struct LlamaCpp {
  int n_ctx = 0, kv_evict_sink = 0, kv_evict_window = 0;
};
const Schema<LlamaCpp>& llama_schema() {
  using T = LlamaCpp;
  static const Schema<T> s(
      "contract (llama.cpp)",
      {member(&T::n_ctx, {.name = "n_ctx", .help = "the context: tokens the cache holds"}),
       member(&T::kv_evict_sink, {.name = "kv_evict_sink", .help = "tokens at the start never removed"}),
       member(&T::kv_evict_window, {.name = "kv_evict_window", .help = "the newest tokens never removed"})});
  return s;
}
EvictionContract read_llama(const nlohmann::json& j, int, int) {
  const LlamaCpp l = llama_schema().from_json(j);
  require(l.n_ctx > 0, "contract: n_ctx must be positive");
  EvictionContract c;
  c.kept_sets = KeptSets::Model;
  c.budget = l.n_ctx;
  c.sinks = l.kv_evict_sink;
  c.recent = l.kv_evict_window;
  return c;
}

// Dynamic memory sparsification: each head decides at a token's arrival whether it is ever kept;
// a token it drops stays for the window and then leaves.
struct Dms {
  int window_size = 0, budget = 0;
};
const Schema<Dms>& dms_schema() {
  using T = Dms;
  static const Schema<T> s(
      "contract (dms)",
      {member(&T::window_size, {.name = "window_size", .help = "steps a token stays after its eviction is decided"}),
       member(&T::budget, {.name = "budget", .help = "tokens a head holds at most (the window included)"})});
  return s;
}
EvictionContract read_dms(const nlohmann::json& j, int, int) {
  const Dms d = dms_schema().from_json(j);
  require(d.budget > 0, "contract: budget must be positive");
  EvictionContract c;
  c.admission_only = true;
  c.recent = d.window_size;
  c.budget = d.budget;
  return c;
}

// kvpress's DecodingPress: compress every compression_interval decoding steps to target_size.
struct Kvpress {
  int compression_interval = 0, target_size = 0;
  bool adakv = false;
};
const Schema<Kvpress>& kvpress_schema() {
  using T = Kvpress;
  static const Schema<T> s(
      "contract (kvpress)",
      {member(&T::compression_interval,
              {.name = "compression_interval", .help = "decoding steps between compressions"}),
       member(&T::target_size, {.name = "target_size", .help = "tokens each head keeps after a compression"}),
       member(&T::adakv, {.name = "adakv", .help = "wrapped in AdaKVPress: a layer's heads share their budget"})});
  return s;
}
EvictionContract read_kvpress(const nlohmann::json& j, int, int P) {
  const Kvpress k = kvpress_schema().from_json(j);
  require(k.compression_interval > 0, "contract: compression_interval must be positive");
  require(k.target_size > 0, "contract: target_size must be positive");
  EvictionContract c;
  c.budget_scope = k.adakv ? BudgetScope::Layer : BudgetScope::Head;
  c.interval = k.compression_interval;
  c.budget = k.target_size;
  c.prompt_len = P;
  return c;
}

EvictionContract read_kvoracle(const nlohmann::json& j, int, int P) {
  EvictionContract start;
  start.prompt_len = P;
  return eviction_contract_schema().from_json(j, start);
}

constexpr std::array<EngineEntry, static_cast<size_t>(EngineId::Count)> kEngines = {{
    {EngineId::Kvoracle, "kvoracle", "every field of kvoracle's own contract", &read_kvoracle,
     [] { return fields_of(eviction_contract_schema()); }},
    {EngineId::TensorRtLlm, "tensorrt-llm", "TriAttentionKvCacheCompressionConfig: periodic, the prompt kept",
     &read_trt, [] { return fields_of(trt_schema()); }},
    {EngineId::OpenVino, "openvino", "CacheEvictionConfig: whole blocks per layer, start and recent areas", &read_ov,
     [] { return fields_of(ov_schema()); }},
    {EngineId::LlamaCpp, "llama.cpp", "llama_memory_seq_rm: one set for the whole model", &read_llama,
     [] { return fields_of(llama_schema()); }},
    {EngineId::Dms, "dms", "dynamic memory sparsification: admitted at arrival or dropped after the window", &read_dms,
     [] { return fields_of(dms_schema()); }},
    {EngineId::Kvpress, "kvpress", "DecodingPress: every compression_interval steps to target_size", &read_kvpress,
     [] { return fields_of(kvpress_schema()); }},
}};
constexpr bool engines_complete() {
  for (size_t i = 0; i < kEngines.size(); ++i)
    if (static_cast<size_t>(kEngines[i].id) != i) return false;
  return true;
}
static_assert(engines_complete(), "the engine table holds one entry per EngineId, in order");

std::string engine_names() {
  std::string s;
  for (const EngineEntry& e : kEngines) s.append(s.empty() ? "" : ", ").append(e.name);
  return s;
}

}  // namespace

std::span<const EngineEntry> engine_table() { return kEngines; }

const Schema<EvictionContract>& eviction_contract_schema() {
  using C = EvictionContract;
  static const Schema<C> s(
      "contract (kvoracle)",
      {custom<C>(
           {.name = "kept_sets", .help = "who holds one kept set: head, layer, kv-head or model"},
           "head|layer|kv-head|model", [](C& c, std::string_view t) { c.kept_sets = parse_kept_sets(t); },
           [](const C& c) { return kept_sets_name(c.kept_sets); }),
       custom<C>(
           {.name = "budget_scope", .help = "which kept sets share one budget: head (each alone), layer or model"},
           "head|layer|model",
           [](C& c, std::string_view t) {
             const std::vector<BudgetScope> v = parse_budget_scopes(t);
             require(v.size() == 1, "budget_scope: one scope");
             c.budget_scope = v.front();
           },
           [](const C& c) { return budget_scope_name(c.budget_scope); }),
       member(&C::budget, {.name = "budget",
                           .help = "tokens a kept set holds (after each compression, with chunk "
                                   "or interval)"}),
       member(&C::recent, {.name = "recent", .help = "the newest tokens never evicted"}),
       member(&C::sinks, {.name = "sinks", .help = "tokens at the start never evicted"}),
       member(&C::page_size, {.name = "page_size", .help = "whole aligned pages of this many tokens leave together"}),
       member(&C::prompt_len, {.name = "prompt_len", .help = "prompt tokens (read by chunk and interval)"}),
       member(&C::chunk, {.name = "chunk", .help = "compress the prompt after every this many tokens (0: no)"}),
       member(&C::interval, {.name = "interval", .help = "compress every this many decoding steps (0: every step)"}),
       member(&C::delay, {.name = "delay", .help = "steps between an eviction's decision and its effect"}),
       member(&C::admission_only,
              {.name = "admission_only", .help = "admit or drop each token as it leaves the window"})});
  return s;
}

EngineContract read_engine_contract(const nlohmann::json& document, int n, int prompt_len, int budget) {
  require(document.is_object(), "contract: expected a JSON object with an \"engine\" field");
  const auto it = document.find("engine");
  require(it != document.end() && it->is_string(),
          "contract: name the engine with \"engine\": one of " + engine_names());
  const std::string name = it->get<std::string>();
  const EngineEntry* entry = nullptr;
  for (const EngineEntry& e : kEngines)
    if (e.name == name) entry = &e;
  require(entry != nullptr, "contract: unknown engine '" + name + "' (known: " + engine_names() + ")");
  nlohmann::json fields = document;
  fields.erase("engine");
  EngineContract out;
  out.engine = name;
  out.document = document;
  out.contract = entry->read(fields, n, prompt_len);
  if (budget > 0) out.contract.budget = budget;
  out.contract.validate(n);
  return out;
}

}  // namespace kvo

// Engines' eviction contracts in their own field names (docs/engines.md): a JSON document
// {"engine": NAME, field: value, ...} read into the EvictionContract it imposes on a trace of n
// tokens whose first P are the prompt. One table of engines, each with a schema of its fields (the
// errors name the field; the docs list them from it).
#pragma once
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvo/core/eviction_contract.hpp"
#include "kvo/core/field_schema.hpp"

namespace kvo {

enum class EngineId : int { Kvoracle, TensorRtLlm, OpenVino, LlamaCpp, Dms, Kvpress, Count };

// One engine's field, for docs and help.
struct EngineField {
  std::string name, kind, help;
};

struct EngineEntry {
  EngineId id;
  std::string_view name;
  std::string_view summary;
  // What the engine's fields mean for a trace of n tokens and a prompt of P (kvo::Error naming the
  // field for a value the engine itself refuses), and the fields themselves.
  EvictionContract (*read)(const nlohmann::json& fields, int n, int prompt_len);
  std::vector<EngineField> (*fields)();
};
std::span<const EngineEntry> engine_table();

struct EngineContract {
  std::string engine;         // the engine's name
  nlohmann::json document;    // as given
  EvictionContract contract;  // what it imposes on the trace (validated)
};

// kvo::Error "contract: ..." for a document that is not an object, lacks "engine", names an unknown
// engine, has a field the engine does not know or of the wrong type, or a contract that does not
// fit the trace (EvictionContract::validate's message, naming the field). `budget` > 0 replaces the
// contract's k (tokens a kept set holds) before it is validated.
EngineContract read_engine_contract(const nlohmann::json& document, int n, int prompt_len, int budget = 0);

// The contract's own fields (the "kvoracle" engine): every EvictionContract field by name.
const Schema<EvictionContract>& eviction_contract_schema();

}  // namespace kvo

// Golden eviction decisions: kvoracle's policies replayed on a small trace, every (layer, KV head)
// and step recorded with the tokens it kept, the tokens it evicted and each candidate's score, with
// the tie rule and the semantics the policy encodes, alone or obeying an engine's contract (one
// kept set for a layer or the whole model, whole blocks); and kvpress's prefill presses (alone or
// under AdaKV's shared budget) cutting the trace's prompt once. The JSON form is the kit's
// versioned file.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kvo/core/eviction_contract.hpp"
#include "kvo/core/field_schema.hpp"
#include "kvo/core/policy_registry.hpp"
#include "kvo/core/press.hpp"
#include "kvo/core/request_json.hpp"
#include "kvo/core/trace.hpp"

namespace kvo::conformance {

inline constexpr int kGoldenVersion = 1;
inline constexpr PolicyId kDefaultGoldenPolicies[] = {PolicyId::H2O, PolicyId::Tova, PolicyId::Scissorhands,
                                                      PolicyId::Streaming};

struct GoldenRequest {
  // Empty, with no press either: h2o, tova, scissorhands and streaming (kDefaultGoldenPolicies).
  std::vector<PolicyId> policies;
  // kvpress's prefill presses cutting the trace's prompt once at its last token: registry names
  // ("snapkv", "press:tova"), or "adakv(NAME)" for NAME under AdaKVPress; at every compression ratio.
  std::vector<std::string> presses;
  std::vector<double> compression_ratio = {0.5};
  double alpha_safeguard = 0.2;  // AdaKVPress's
  PressOptions press;            // the presses' parameters (window_size, kernel_size, ...)
  // Tokens per KV head, or shares of n ("25%"); empty: 8 and 16, or the contract's own k.
  std::vector<std::string> budgets;
  std::string recent;  // the recent window: tokens or a share of the budget (empty: half)
  // An engine's contract the policies obey (docs/engines.md): a JSON document or its file's path;
  // each budget replaces its k (tokens a kept set holds), no budget keeps the contract's own.
  std::string contract;
  int threads = 0;

  // kvo::Error naming the field: a budget that is not an amount, a window
  // beside a contract, a policy the kit has no semantics for (offline, unbudgeted or randomised
  // ones), an unknown or randomised press, AdaKV around a press kvpress does not let it wrap, a
  // ratio outside [0, 1), presses beside a contract.
  void validate() const;
  static const Schema<GoldenRequest>& schema();
};

struct GoldenStep {
  std::vector<int> kept;     // S_i, ascending
  std::vector<int> evicted;  // (S_{i-1} ∪ {i}) \ S_i, ascending
  // The policy's score of each candidate in S_{i-1} ∪ {i} (ascending token order) after step i,
  // lower evicted first; nullopt: protected (recent window, sinks) or a policy without scores.
  // Under a contract: the kept set's score, summed over its units (a block's is its tokens' sum).
  std::vector<std::optional<double>> scores;
};

struct GoldenUnit {
  int layer = 0, head = 0;  // head: the KV head
  std::vector<GoldenStep> steps;
};

struct GoldenCase {
  std::string policy;  // a policy, a press ("snapkv", "press:tova") or "adakv(snapkv)"
  // Tokens per KV head after every step past the prompt; a press's: kvpress's n_kept at its ratio
  // (PyramidKV's layers and AdaKV's heads hold other counts around it).
  int budget = 0, heavy = 0, recent = 0;
  std::string tie_rule;
  std::string semantics;
  std::optional<EvictionContract> contract;  // the contract obeyed, with this case's k
  std::optional<double> compression_ratio;   // a press's
  nlohmann::json press;                      // a press's parameters (null: a policy's case)
  std::vector<GoldenUnit> units;             // by (layer, head)
  std::string key() const;                   // "h2o@8"
};

struct GoldenFile {
  int version = kGoldenVersion;
  std::string trace;  // the trace's name (its file, or how it was made)
  std::string trace_sha256;
  int n = 0, layers = 0, heads = 0, kv_heads = 0, prompt_len = 0;
  nlohmann::json contract;  // the engine's contract document as given (null: none)
  std::vector<GoldenCase> cases;

  const GoldenCase& find(const std::string& policy, int budget) const;  // kvo::Error naming the known cases
  nlohmann::json to_json() const;
  // kvo::Error naming the first missing or malformed field, or a version this kit does not read.
  static GoldenFile from_json(const nlohmann::json& j);
};

// The tie rule and the semantics each covered policy follows (kvo::Error for one the kit lacks).
std::string policy_tie_rule(PolicyId id);
std::string policy_semantics(PolicyId id);

// Replays every requested policy at every budget on every (layer, KV head) of the trace (KV heads
// as units, the mean over the group's query heads), under the request's contract when it names
// one; then runs every requested press at every ratio on the trace's prompt (a press case's steps
// keep every token but at the prompt's last, where the press cuts; its scores are the press's
// score of every prompt token there). `name` labels the trace in the file. kvo::Error from the
// request, the contract (naming its field), a policy that cannot obey it (one without per-token
// scores), a press on a trace without a prompt or without what the press reads.
GoldenFile make_golden(const Trace& trace, const GoldenRequest& request, const std::string& name);

// A golden file read from its path (kvo::Error naming the path: unreadable, not JSON, malformed).
GoldenFile read_golden(const std::string& path);

}  // namespace kvo::conformance

// The results of `kvoracle verify`: one record per check x instance x (layer, head), the catalogue of
// the claims (C1-C27 of docs/theory.md §4, the defects D1-D11 of §2.12, and other eviction papers'
// claims) they come from, the papers they belong to, and the per-claim summary that report.json and
// report.md are written from.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kvo {

// Theorem: must hold; a failure is a bug in kvoracle (exit non-zero). Finding: an empirical claim
// about real attention, reported with its measured values, never pass/fail. Defect: a numerical
// demonstration of a flaw in the published text (§2.12).
enum class ClaimKind { Theorem, Finding, Defect };
std::string to_string(ClaimKind k);

struct ClaimInfo {
  std::string id;                  // "C1".."C27", "D1".."D11", "E1".."E10" (H2O's observations), "SNAP1", ...
  std::string title;               // what is checked, in one line
  std::string source;              // where in the paper
  std::string metric;              // the headline number of a record
  bool higher_is_worse = true;     // direction of the metric's worst case
  std::string function;            // the function in proofs-check/src that checks it
  std::vector<std::string> tests;  // tests (Suite.Name) feeding it an input on which it must fail
  // Judged by the closed loops on the real model (eval, tasks run, eval diversity; E4-E10), not by
  // verify's pass over a trace: verify's --checks refuses it and its report leaves it out.
  bool closed_loop = false;
  std::string paper = "h2o";   // the paper the claim is from (paper_catalogue()'s key)
  std::string statement = "";  // other papers: the authors' own sentence the check reads, quoted
  std::string doc() const;     // its row in docs/checks.md ("docs/checks.md#c1")
};
const std::vector<ClaimInfo>& claim_catalogue();
const ClaimInfo& claim_info(const std::string& id);  // kvo::Error for an unknown id
// The ids verify's pass over a trace runs, for messages and help: "C1..C27, D1..D11, E1..E3, ...".
std::string trace_check_ids();

// The papers whose claims verify checks (`verify --claims KEY,...`): H2O's (C, D, E) and the
// others', each claim of claim_catalogue() naming its paper by key.
struct PaperInfo {
  std::string key;        // "h2o", "adakv", "snapkv", "streamingllm", "scissorhands", "tova"
  std::string name;       // "Ada-KV"
  std::string reference;  // authors, venue, arXiv id
};
const std::vector<PaperInfo>& paper_catalogue();
const PaperInfo& paper_info(const std::string& key);  // kvo::Error naming the keys for an unknown one
std::string paper_keys();                             // "h2o, adakv, snapkv, ..." for messages and help

struct CheckRecord {
  std::string id;       // claim id
  std::string variant;  // instance: objective, policy or data set ("A[id]", a policy's name, a data set's)
  ClaimKind kind = ClaimKind::Finding;
  int layer = -1, head = -1;  // -1: not tied to a head of the trace
  bool holds = true;          // theorem: holds; finding/defect: the paper's statement holds here
  double metric = 0.0;        // the claim's headline number (ClaimInfo::metric)
  long step = -1;             // where the worst case occurs (-1: not a step)
  nlohmann::json detail = nlohmann::json::object();
};

// A record not tied to a head or a step (layer, head, step -1; an empty detail).
CheckRecord make_record(const std::string& id, const std::string& variant, ClaimKind kind, bool holds, double metric);

// A record as the object report.json lists (and back; kvo::Error when malformed). The unit
// results `verify` exchanges between ranks and stores in checkpoints carry records this way.
nlohmann::json record_to_json(const CheckRecord& r);
CheckRecord record_from_json(const nlohmann::json& j);
ClaimKind claim_kind(const std::string& name);  // "theorem", "finding", "defect"

struct ClaimSummary {
  std::string id, variant;
  ClaimKind kind = ClaimKind::Finding;
  long records = 0, holding = 0;
  double worst = 0.0;  // worst metric over the records
  std::string where;   // "layer L head H step i" of the worst record
  double median = 0.0;
};

class CheckRecords {  // the records of a verify run, with their summaries
 public:
  void add(CheckRecord r) { records_.push_back(std::move(r)); }
  void append(std::vector<CheckRecord> rs);
  const std::vector<CheckRecord>& records() const { return records_; }
  // One summary per (claim, variant), in catalogue order then variant order of first appearance.
  std::vector<ClaimSummary> summaries() const;
  long theorem_failures() const;
  // Sort records by (claim order, variant, layer, head) so output is independent of thread timing.
  void sort();
  nlohmann::json to_json(const nlohmann::json& meta) const;

 private:
  std::vector<CheckRecord> records_;
};

}  // namespace kvo

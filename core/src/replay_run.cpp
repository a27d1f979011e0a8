#include "kvo/core/replay_run.hpp"

#include <algorithm>
#include <map>

#include "kvo/core/json_fields.hpp"

namespace kvo {

void ReplayRequest::validate() const { run.build(policy); }

nlohmann::json ReplayRequest::to_json() const {
  return {{"policy", policy_name(policy)},
          {"run", kvo::to_json(run)},
          {"record_sets", record_sets},
          {"record_probs", record_probs},
          {"threads", threads}};
}

ReplayRequest ReplayRequest::from_json(const nlohmann::json& j) {
  ReplayRequest r;
  read_json_fields(j, "replay request", [&](const std::string& key, const nlohmann::json& value) {
    if (key == "policy") {
      r.policy = parse_policy(value.get<std::string>());
    } else if (key == "run") {
      r.run = run_options_from_json(value);
    } else if (key == "record_sets") {
      r.record_sets = value.get<bool>();
    } else if (key == "record_probs") {
      r.record_probs = value.get<bool>();
    } else if (key == "threads") {
      r.threads = value.get<int>();
    } else {
      return false;
    }
    return true;
  });
  return r;
}

ReplayOptions ReplayRequest::options(const Trace& trace) const {
  ReplayOptions o;
  o.run = run.build(policy, &trace);
  o.record_sets = record_sets;
  o.record_probs = record_probs;
  o.threads = threads;
  return o;
}

void write_step_records(std::ostream& out, const ReplayResult& r, bool probs) {
  for (const auto& h : r.heads)
    for (size_t i = 0; i < h.steps.size(); ++i) {
      const auto& s = h.steps[i];
      nlohmann::json j = {{"layer", h.layer},
                          {"head", h.head},
                          {"step", i},
                          {"attended", s.attended},
                          {"kept", s.kept},
                          {"evicted", s.evicted},
                          {"reentered", s.reentered},
                          {"retained_mass", s.retained_mass},
                          {"accumulated", s.accumulated}};
      if (probs) j["probs"] = s.probs;
      out << j.dump() << '\n';
    }
}

std::vector<ReplayLayerSummary> replay_layer_summary(const ReplayResult& r) {
  std::map<int, ReplayLayerSummary> per_layer;
  for (const auto& h : r.heads) {
    auto& x = per_layer[h.layer];
    x.layer = h.layer;
    ++x.heads;
    x.evictions += h.evictions;
    x.reentries += h.reentries;
    x.mean_retained_mass += h.mean_retained_mass;
    x.worst_retained_mass = std::min(x.worst_retained_mass, h.mean_retained_mass);
    x.k = h.budget.total;
  }
  std::vector<ReplayLayerSummary> out;
  for (auto& [layer, x] : per_layer) {
    x.mean_retained_mass /= x.heads;
    out.push_back(x);
  }
  return out;
}

}  // namespace kvo

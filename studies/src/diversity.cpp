#include "kvo/studies/diversity.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "kvo/core/cache_manager.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/request_json.hpp"
#include "kvo/model/evicting_decoder.hpp"
#include "kvo/proofs_check/paper_experiments.hpp"
#include "kvo/studies/task_eval.hpp"

namespace kvo::studies {

using namespace kvo::model;  // the engine the studies drive
namespace {

std::vector<std::string> words_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string w;
  while (in >> w) {
    size_t a = 0, b = w.size();
    while (a < b && std::ispunct(static_cast<unsigned char>(w[a]))) ++a;
    while (b > a && std::ispunct(static_cast<unsigned char>(w[b - 1]))) --b;
    if (a == b) continue;
    std::string s = w.substr(a, b - a);
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out.push_back(std::move(s));
  }
  return out;
}

// Distinct n-grams over n-grams (1 when there is none).
double distinct(const std::vector<std::string>& w, size_t n) {
  if (w.size() < n) return 1.0;
  std::set<std::vector<std::string>> seen;
  for (size_t i = 0; i + n <= w.size(); ++i)
    seen.emplace(w.begin() + static_cast<long>(i), w.begin() + static_cast<long>(i + n));
  return static_cast<double>(seen.size()) / static_cast<double>(w.size() - n + 1);
}

int argmax(const Eigen::RowVectorXf& logits) {
  Eigen::Index best = 0;
  logits.maxCoeff(&best);  // ties: the smallest id
  return static_cast<int>(best);
}

TextDiversity mean_of(const std::vector<std::string>& texts) {
  TextDiversity m{0, 0.0, 0.0, 0.0, 0.0};
  for (const auto& t : texts) {
    const TextDiversity d = text_diversity(t);
    m.words += d.words;
    m.distinct1 += d.distinct1;
    m.distinct2 += d.distinct2;
    m.distinct3 += d.distinct3;
    m.repetition4 += d.repetition4;
  }
  const double n = static_cast<double>(texts.size());
  m.distinct1 /= n;
  m.distinct2 /= n;
  m.distinct3 /= n;
  m.repetition4 /= n;
  return m;
}

nlohmann::json row_json(const DiversityRow& r) {
  return {{"row", r.row},
          {"budget", r.budget},
          {"words", r.mean.words},
          {"distinct1", r.mean.distinct1},
          {"distinct2", r.mean.distinct2},
          {"distinct3", r.mean.distinct3},
          {"repetition4", r.mean.repetition4},
          {"continuations", r.continuations}};
}

}  // namespace

TextDiversity text_diversity(const std::string& text) {
  const std::vector<std::string> w = words_of(text);
  TextDiversity d;
  d.words = static_cast<int>(w.size());
  d.distinct1 = distinct(w, 1);
  d.distinct2 = distinct(w, 2);
  d.distinct3 = distinct(w, 3);
  d.repetition4 = 1.0 - distinct(w, 4);
  return d;
}

RunConfig DiversityRequest::run_config() const {
  require(!policies.empty(), "diversity: at least one policy");
  return run.build(policies.front());
}

const Schema<DiversityRequest>& DiversityRequest::schema() {
  using R = DiversityRequest;
  static const Schema<R> schema(
      "diversity request",
      fields<R>(
          {{member(&R::prompts, {.name = "prompts", .help = "prompts, evenly spaced over the text"}),
            member(&R::prompt_tokens, {.name = "prompt_tokens", .help = "tokens per prompt"}),
            member(&R::new_tokens, {.name = "new_tokens", .help = "greedy tokens per continuation"}),
            member(&R::policies, {.name = "policies", .help = "comma-separated policies", .alias = "--policy,-p"}),
            member(&R::budgets, {.name = "budgets",
                                 .help = "comma-separated shares of prompt + new tokens kept per (layer, KV head)",
                                 .alias = "--budget,-b"})},
           nested("run", &R::run, run_options_schema(), "", "", decoding_run_option)}));
  return schema;
}

nlohmann::json DiversityRequest::to_json() const { return schema().to_json(*this); }
DiversityRequest DiversityRequest::from_json(const nlohmann::json& j) { return schema().from_json(j); }

void DiversityRequest::validate() const {
  require(prompts >= 1, "diversity: prompts must be >= 1");
  require(prompt_tokens >= 1, "diversity: prompt_tokens must be >= 1");
  require(new_tokens >= 1, "diversity: new_tokens must be >= 1");
  require(!policies.empty(), "diversity: at least one policy");
  require(!budgets.empty(), "diversity: at least one budget");
  for (double b : budgets)
    require(b > 0 && b <= 1,
            "diversity: a budget is a share of the tokens in (0, 1] (20% or 0.2), not " + number_text(b));
  const RunConfig config = run_config();
  for (PolicyId id : policies) {
    const PolicyTraits& t = policy_traits(id);
    require(t.decoder && t.nested && !t.offline && !needs_dense(config.with_policy(id).policy),
            "diversity: policy " + policy_name(id) +
                " cannot run online in a decoder (it needs the whole sequence's attention or lets tokens return)");
    make_policy(config.with_policy(id).policy);  // bad parameters fail here
  }
}

long diversity_units(const DiversityRequest& r) {
  return static_cast<long>(r.prompts) * r.new_tokens * static_cast<long>(1 + r.policies.size() * r.budgets.size());
}

DiversityResult continuation_diversity(const Llama& m, const std::string& text, const DiversityRequest& r) {
  r.validate();
  const RunConfig config = r.run_config();
  const std::vector<int> ids = m.tokenizer().encode(text);
  const int n = static_cast<int>(ids.size());
  require(n >= r.prompt_tokens, "diversity: the text has " + std::to_string(n) + " tokens, fewer than one prompt of " +
                                    std::to_string(r.prompt_tokens));
  const int total = r.prompt_tokens + r.new_tokens;
  require(total <= m.config().context, "diversity: prompt_tokens + new_tokens exceed the model's positions");
  // Prompt p starts at p * stride, the last one ending at the text's end.
  const int stride = r.prompts > 1 ? (n - r.prompt_tokens) / (r.prompts - 1) : 0;
  std::vector<std::vector<int>> prompts;
  for (int p = 0; p < r.prompts; ++p)
    prompts.emplace_back(ids.begin() + p * stride, ids.begin() + p * stride + r.prompt_tokens);
  const LlamaConfig& c = m.config();

  const auto continue_with = [&](const std::vector<int>& prompt, PolicyId id, int k) {
    KvEvictionManager mgr(
        closed_loop_manager(c, config, id, config.budget.with_total(Amount{false, static_cast<double>(k)}), total));
    EvictingDecoder dec(m, mgr, decoder_slots(mgr));
    Eigen::RowVectorXf logits = dec.prefill(prompt).row(0);
    std::vector<int> out;
    for (int t = 0; t < r.new_tokens; ++t) {
      out.push_back(argmax(logits));
      if (r.on_token) r.on_token();
      if (t + 1 < r.new_tokens) logits = dec.step(out.back());
    }
    return m.tokenizer().decode(out);
  };

  DiversityResult res;
  res.prompts = r.prompts;
  res.prompt_tokens = r.prompt_tokens;
  res.new_tokens = r.new_tokens;
  res.full.row = std::string(kFullCacheRow);
  for (const auto& prompt : prompts) res.full.continuations.push_back(continue_with(prompt, PolicyId::Full, total));
  res.full.mean = mean_of(res.full.continuations);
  for (PolicyId id : r.policies)
    for (double b : r.budgets) {
      DiversityRow row;
      row.row = policy_name(id);
      row.budget = b;
      const int k = std::max(1, static_cast<int>(std::floor(b * total + 1e-9)));
      for (const auto& prompt : prompts) row.continuations.push_back(continue_with(prompt, id, k));
      row.mean = mean_of(row.continuations);
      res.rows.push_back(std::move(row));
    }
  return res;
}

std::vector<CheckRecord> diversity_paper_experiments(const DiversityResult& r) {
  std::vector<CheckRecord> out;
  for (const DiversityRow& row : r.rows)
    if (row.row == policy_name(PolicyId::H2O) && row.budget < 1.0)
      out.push_back(diversity_record(
          {row.budget, r.full.mean.distinct2, r.full.mean.repetition4, row.mean.distinct2, row.mean.repetition4}));
  return out;
}

nlohmann::json diversity_result_json(const DiversityResult& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const DiversityRow& row : r.rows) rows.push_back(row_json(row));
  return {{"prompts", r.prompts},
          {"prompt_tokens", r.prompt_tokens},
          {"new_tokens", r.new_tokens},
          {"full", row_json(r.full)},
          {"rows", rows},
          {"paper_experiments", paper_experiments_json(diversity_paper_experiments(r))}};
}

}  // namespace kvo::studies

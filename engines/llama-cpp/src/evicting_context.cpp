#include "kvo/llama_cpp/evicting_context.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "ggml-backend.h"
#include "ggml.h"
#include "kvo/core/error.hpp"
#include "llama.h"

namespace kvo::llama_cpp {
namespace {

constexpr char kProbs[] = "kq_soft_max-";  // llama.cpp's name of a layer's attention probabilities

// The one place a llama.cpp setting is refused: the setting, then why.
[[noreturn]] void refuse(const std::string& setting, const std::string& why) {
  throw Error("kvoracle inside llama.cpp: " + setting + ": " + why);
}

}  // namespace

CacheManagerOptions manager_options(const EvictingContextOptions& o, int n_layers, int n_kv_heads) {
  CacheManagerOptions mo;
  mo.run.policy.id = o.policy;
  mo.contract = o.contract;
  mo.n_layers = n_layers;
  mo.n_kv_heads = n_kv_heads;
  mo.max_len = o.max_len;
  mo.steer = o.steer;
  return mo;
}

llama_context_params context_params(const EvictingContextOptions& o, int n_ctx) {
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(n_ctx);
  cp.n_batch = cp.n_ubatch = 1;  // token by token: a batch's tokens would attend what the manager evicts
  cp.n_seq_max = 1;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  cp.type_k = cp.type_v = o.f32_cache ? GGML_TYPE_F32 : GGML_TYPE_F16;
  cp.n_threads = cp.n_threads_batch = o.threads;
  return cp;
}

struct EvictingContext::Impl {
  llama_context* ctx = nullptr;
  llama_memory_t mem = nullptr;
  std::unique_ptr<KvEvictionManager> manager;
  int n_layer = 0, n_head = 0, n_kv = 0, group = 1, max_len = 0, max_batch = 1;
  int pos = 0;                 // the first position of the batch being decoded
  long decodes = 0;            // llama_decode calls
  int batch = 0;               // its tokens
  std::vector<int> cell_pos;   // position each cell holds; -1 free
  std::vector<int> pos_cell;   // cell each held position is in; -1 not held
  std::vector<int> cells;      // this batch: the held cells in position order, then the new ones
  std::vector<int> positions;  // and their positions (row r of the batch attends the first held + r + 1)
  size_t held_before = 0;      // cells held before the batch
  std::vector<double> agg;     // a KV head's mean attention over its query heads
  std::vector<int> gone;       // what this batch's units evicted
  int next_layer = 0;          // the layer whose probabilities come next
  std::string failure;         // an error inside the graph callback, thrown once llama_decode returns

  static bool on_tensor(ggml_tensor* t, bool ask, void* user);
  void observe(const ggml_tensor* t);
  void find_new_cells(const ggml_tensor* mask, int64_t cells_seen);
};

bool EvictingContext::Impl::on_tensor(ggml_tensor* t, bool ask, void* user) {
  if (std::strncmp(t->name, kProbs, sizeof(kProbs) - 1) != 0) return !ask;  // others: not asked for, go on
  if (ask) return true;
  auto& self = *static_cast<Impl*>(user);
  if (!self.failure.empty()) return false;
  try {
    self.observe(t);
  } catch (const std::exception& e) {
    self.failure = e.what();
    return false;  // stops the graph; decode() reports it
  }
  return true;
}

void EvictingContext::Impl::find_new_cells(const ggml_tensor* mask, int64_t cells_seen) {
  // The mask's row of each token of the batch: 0 where it attends, -inf elsewhere. Row r attends
  // the cells of every position the manager holds and the batch's tokens up to r: each row adds
  // exactly one cell, the one llama.cpp gave that token.
  require(mask != nullptr && (mask->type == GGML_TYPE_F32 || mask->type == GGML_TYPE_F16) &&
              mask->ne[0] == cells_seen && mask->ne[1] >= batch && ggml_backend_buffer_is_host(mask->buffer),
          "llama.cpp's attention mask is not a host f32/f16 matrix over the cells");
  long held = 0;
  for (int p : cell_pos) held += p >= 0;
  held_before = static_cast<size_t>(held);
  for (int r = 0; r < batch; ++r) {
    const int at = pos + r;
    const char* row = static_cast<const char*>(mask->data) + static_cast<size_t>(r) * mask->nb[1];
    int new_cell = -1;
    long attended = 0;
    for (int64_t c = 0; c < cells_seen; ++c) {
      const float m = mask->type == GGML_TYPE_F32 ? reinterpret_cast<const float*>(row)[c]
                                                  : ggml_fp16_to_fp32(reinterpret_cast<const ggml_fp16_t*>(row)[c]);
      if (std::isinf(m)) continue;
      ++attended;
      if (cell_pos[static_cast<size_t>(c)] >= 0) continue;
      require(new_cell < 0, "llama.cpp attends two cells kvoracle did not place at position " + std::to_string(at));
      new_cell = static_cast<int>(c);
    }
    require(new_cell >= 0, "llama.cpp attends no new cell at position " + std::to_string(at));
    require(attended == held + 1, "llama.cpp attends " + std::to_string(attended) + " cells at position " +
                                      std::to_string(at) + ", kvoracle holds " + std::to_string(held) +
                                      " + the new one");
    cell_pos[static_cast<size_t>(new_cell)] = at;
    pos_cell[static_cast<size_t>(at)] = new_cell;
    ++held;
  }
  cells.clear();
  positions.clear();
  for (int p = 0; p < pos + batch; ++p)
    if (pos_cell[static_cast<size_t>(p)] >= 0) {
      cells.push_back(pos_cell[static_cast<size_t>(p)]);
      positions.push_back(p);
    }
}

void EvictingContext::Impl::observe(const ggml_tensor* t) {
  const int layer = std::atoi(t->name + sizeof(kProbs) - 1);
  require(layer == next_layer, "llama.cpp computed layer " + std::to_string(layer) + "'s attention before layer " +
                                   std::to_string(next_layer) + "'s");
  require(t->type == GGML_TYPE_F32 && t->ne[1] == batch && t->ne[2] == n_head && ggml_backend_buffer_is_host(t->buffer),
          "llama.cpp's attention probabilities are not a host f32 tensor [cells, " + std::to_string(batch) +
              " tokens, " + std::to_string(n_head) + " heads]");
  if (layer == 0) find_new_cells(t->src[1], t->ne[0]);
  const char* probs = static_cast<const char*>(t->data);
  // Each KV head steps the batch's positions in order; the units of later layers follow (a unit
  // may run ahead of its group: nothing is decided before the batch's last position).
  for (int kv = 0; kv < n_kv; ++kv)
    for (int r = 0; r < batch; ++r) {
      const size_t m = held_before + static_cast<size_t>(r) + 1;  // what row r attends
      // ggml's grouped-query attention: query heads kv * group .. (kv + 1) * group - 1 read KV head kv.
      agg.assign(m, 0.0);
      for (int h = kv * group; h < (kv + 1) * group; ++h) {
        const float* row = reinterpret_cast<const float*>(probs + static_cast<size_t>(h) * t->nb[2] +
                                                          static_cast<size_t>(r) * t->nb[1]);
        for (size_t c = 0; c < m; ++c) agg[c] += row[cells[c]];
      }
      for (double& a : agg) a /= group;
      const std::vector<int> out = manager->step(0, layer, kv, pos + r, std::span<const int>(positions.data(), m), agg);
      gone.insert(gone.end(), out.begin(), out.end());
    }
  ++next_layer;
}

EvictingContext::EvictingContext(llama_model* model, const EvictingContextOptions& o)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  if (o.flash_attn)
    refuse("flash attention on",
           "its fused kernel never forms the attention probabilities the manager needs; turn it off "
           "(flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED)");
  if (o.sequences != 1)
    refuse("n_seq_max = " + std::to_string(o.sequences),
           "sequences sharing one cache would share its cells; evict for one sequence per context");
  if (o.contract.kept_sets != KeptSets::Model)
    refuse("kept sets " + kept_sets_name(o.contract.kept_sets),
           "llama_memory_seq_rm removes a position from every layer and KV head at once; use kept sets model");
  require(model != nullptr, "kvoracle inside llama.cpp: no model");
  require(o.max_len > 0, "kvoracle inside llama.cpp: max_len (the most positions the sequence reaches) must be > 0");
  require(o.threads > 0, "kvoracle inside llama.cpp: threads must be > 0");
  o.contract.validate(o.max_len);
  const int most = o.contract.most_held(o.max_len);
  const int trained = llama_model_n_ctx_train(model);
  if (most + 1 > trained)
    refuse("budget " + std::to_string(o.contract.budget), "the cache would hold " + std::to_string(most) +
                                                              " positions and the new token, more than the model's " +
                                                              std::to_string(trained) + "-position context");
  if (o.context != 0 && o.context < most + 1)
    refuse("n_ctx = " + std::to_string(o.context), "fewer cells than the " + std::to_string(most + 1) +
                                                       " the contract needs (its most held plus the new token)");
  m.n_layer = llama_model_n_layer(model);
  m.n_head = llama_model_n_head(model);
  m.n_kv = llama_model_n_head_kv(model);
  require(m.n_layer > 0 && m.n_kv > 0 && m.n_head % m.n_kv == 0,
          "kvoracle inside llama.cpp: the model's heads do not form KV groups");
  m.group = m.n_head / m.n_kv;
  m.max_len = o.max_len;
  require(o.batch > 0, "kvoracle inside llama.cpp: batch (tokens per llama_decode in prefill) must be > 0");
  m.max_batch = o.batch;

  // The manager refuses a policy the contract cannot drive.
  m.manager = std::make_unique<KvEvictionManager>(manager_options(o, m.n_layer, m.n_kv));
  llama_context_params cp = context_params(o, o.context != 0 ? o.context : most + 1);
  cp.n_batch = cp.n_ubatch = static_cast<uint32_t>(o.batch);
  cp.cb_eval = &Impl::on_tensor;
  cp.cb_eval_user_data = &m;
  m.ctx = llama_init_from_model(model, cp);
  require(m.ctx != nullptr,
          "kvoracle inside llama.cpp: llama.cpp could not create a context of " + std::to_string(cp.n_ctx) + " cells");
  m.mem = llama_get_memory(m.ctx);
  m.cell_pos.assign(llama_n_ctx(m.ctx), -1);
  m.pos_cell.assign(static_cast<size_t>(o.max_len), -1);
}

EvictingContext::~EvictingContext() {
  if (impl_->ctx != nullptr) llama_free(impl_->ctx);
}

std::vector<int> EvictingContext::decode(int token) { return run(std::span<const int>(&token, 1)); }

std::vector<int> EvictingContext::prefill(std::span<const int> tokens) {
  std::vector<int> gone;
  size_t first = 0;
  while (first < tokens.size()) {
    // A batch ends after a step where the contract may evict, or when it is full.
    size_t end = first;
    while (end < tokens.size() && end - first < static_cast<size_t>(impl_->max_batch)) {
      const int at = impl_->pos + static_cast<int>(end - first);
      ++end;
      if (impl_->manager->lockstep_at(at)) break;
    }
    const std::vector<int> out = run(tokens.subspan(first, end - first));
    gone.insert(gone.end(), out.begin(), out.end());
    first = end;
  }
  std::sort(gone.begin(), gone.end());
  return gone;
}

std::vector<int> EvictingContext::run(std::span<const int> tokens) {
  Impl& m = *impl_;
  require(m.failure.empty(), "kvoracle inside llama.cpp: an earlier step failed: " + m.failure);
  require(m.pos + static_cast<int>(tokens.size()) <= m.max_len,
          "kvoracle inside llama.cpp: the sequence is full (max_len " + std::to_string(m.max_len) + ")");
  m.next_layer = 0;
  m.gone.clear();
  m.batch = static_cast<int>(tokens.size());
  std::vector<llama_token> ids(tokens.begin(), tokens.end());
  const int rc = llama_decode(m.ctx, llama_batch_get_one(ids.data(), static_cast<int32_t>(ids.size())));
  ++m.decodes;
  if (!m.failure.empty())
    throw Error("kvoracle inside llama.cpp, position " + std::to_string(m.pos) + ": " + m.failure);
  require(rc == 0, "kvoracle inside llama.cpp: llama_decode failed at position " + std::to_string(m.pos) + " (" +
                       std::to_string(rc) + ")");
  require(m.next_layer == m.n_layer, "kvoracle inside llama.cpp: llama.cpp showed the attention of " +
                                         std::to_string(m.next_layer) + " of " + std::to_string(m.n_layer) + " layers");
  // The evictions: the unit that completed the step returned them; every other unit collects the
  // same positions (one kept set for the model).
  for (int l = 0; l < m.n_layer; ++l)
    for (int kv = 0; kv < m.n_kv; ++kv) {
      const std::vector<int> more = m.manager->take_evicted(0, l, kv);
      m.gone.insert(m.gone.end(), more.begin(), more.end());
    }
  std::sort(m.gone.begin(), m.gone.end());
  m.gone.erase(std::unique(m.gone.begin(), m.gone.end()), m.gone.end());
  for (int p : m.gone) {
    const int cell = m.pos_cell[static_cast<size_t>(p)];
    require(cell >= 0, "kvoracle inside llama.cpp: the manager evicted position " + std::to_string(p) +
                           ", which llama.cpp does not hold");
    require(llama_memory_seq_rm(m.mem, 0, p, p + 1),
            "kvoracle inside llama.cpp: llama_memory_seq_rm refused position " + std::to_string(p));
    m.cell_pos[static_cast<size_t>(cell)] = -1;
    m.pos_cell[static_cast<size_t>(p)] = -1;
  }
  m.pos += m.batch;
  const std::vector<int> now = held();
  require(now == m.manager->held(0, m.n_layer - 1, m.n_kv - 1),
          "kvoracle inside llama.cpp: llama.cpp's cache departs from the manager's kept set at position " +
              std::to_string(m.pos - 1));
  return m.gone;
}

const float* EvictingContext::logits() const { return llama_get_logits_ith(impl_->ctx, -1); }

int EvictingContext::position() const { return impl_->pos; }

long EvictingContext::llama_decodes() const { return impl_->decodes; }

std::vector<int> EvictingContext::held() const {
  std::vector<int> out;
  for (int p = 0; p < impl_->pos; ++p)
    if (impl_->pos_cell[static_cast<size_t>(p)] >= 0) out.push_back(p);
  return out;
}

size_t EvictingContext::state_bytes() const { return llama_state_seq_get_size(impl_->ctx, 0); }

int EvictingContext::context_cells() const { return static_cast<int>(llama_n_ctx(impl_->ctx)); }

const KvEvictionManager& EvictingContext::manager() const { return *impl_->manager; }

llama_context* EvictingContext::context() const { return impl_->ctx; }

}  // namespace kvo::llama_cpp

// kvpress 0.5.5's score() methods, re-derived from their definitions and computed in fp64 from the
// trace (attention rows from q and k, or from the trace's dense attention). Each comment names the
// kvpress expression it mirrors.
#include "press_scores.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"

namespace kvo::press_scores {
namespace {

using Scores = std::vector<std::vector<double>>;

// Row t of the causal attention over the prompt: a(t, j) for j <= t (softmax over keys 0..t).
std::vector<double> attention_row(const HeadView& head, int t) {
  std::vector<int> keys;
  std::vector<double> logits, row;
  prefix_attention(head, t, keys, logits, row);
  return row;
}

// Key or value row j of KV head kv, as doubles.
std::vector<double> kv_row(const std::vector<float>& tensor, const Trace& tr, int kv, int j) {
  const size_t at = (static_cast<size_t>(kv) * tr.n_tokens + j) * tr.head_dim;
  return {tensor.begin() + static_cast<std::ptrdiff_t>(at),
          tensor.begin() + static_cast<std::ptrdiff_t>(at + static_cast<size_t>(tr.head_dim))};
}

double norm2(const std::vector<double>& x) { return std::inner_product(x.begin(), x.end(), x.begin(), 0.0); }

// F.pad(scores, (0, w), value=scores.max() + 1): the last w positions forced, above every score.
void force_last(std::vector<double>& s, int w) {
  const double top = s.empty() ? 0.0 : *std::max_element(s.begin(), s.end());
  s.resize(s.size() + static_cast<size_t>(w), top + 1);
}

// ObservedAttentionPress: attentions.sum(2) / arange(n, 0, -1), .view(b, H_kv, g, n).mean(2).
Scores observed_attention(const PressLayer& at) {
  const Trace& tr = *at.trace;
  const int P = at.prompt_len, g = tr.group_size();
  Scores out(static_cast<size_t>(tr.n_kv_heads), std::vector<double>(static_cast<size_t>(P), 0.0));
  for (int kv = 0; kv < tr.n_kv_heads; ++kv)
    for (int h = kv * g; h < (kv + 1) * g; ++h) {
      const HeadView head(tr, at.layer, h);
      std::vector<double> col(static_cast<size_t>(P), 0.0);
      for (int t = 0; t < P; ++t) {
        const std::vector<double> row = attention_row(head, t);
        for (int j = 0; j <= t; ++j) col[static_cast<size_t>(j)] += row[static_cast<size_t>(j)];
      }
      for (int j = 0; j < P; ++j)
        out[static_cast<size_t>(kv)][static_cast<size_t>(j)] += col[static_cast<size_t>(j)] / (P - j) / g;
    }
  return out;
}

// TOVAPress: attentions[..., -1:, :-1].mean(1) over every query head, repeated per KV head, the
// last token padded with max + 1.
Scores tova(const PressLayer& at) {
  const Trace& tr = *at.trace;
  const int P = at.prompt_len;
  require(P >= 2, "press tova: the prompt needs at least 2 tokens");
  std::vector<double> s(static_cast<size_t>(P) - 1, 0.0);
  for (int h = 0; h < tr.n_heads; ++h) {
    const std::vector<double> row = attention_row(HeadView(tr, at.layer, h), P - 1);
    for (int j = 0; j + 1 < P; ++j) s[static_cast<size_t>(j)] += row[static_cast<size_t>(j)];
  }
  for (double& x : s) x /= tr.n_heads;
  force_last(s, 1);
  return Scores(static_cast<size_t>(tr.n_kv_heads), s);
}

// SnapKVPress: attentions[..., -w:, :-w].mean(-2), F.avg_pool1d(kernel, padding=kernel//2,
// stride=1) (zero padding counted), .view(b, H_kv, g, n - w).mean(2), the window padded with max + 1.
Scores snapkv(const PressLayer& at, const PressOptions& o) {
  const Trace& tr = *at.trace;
  const int P = at.prompt_len, w = o.window_size, g = tr.group_size(), ks = o.kernel_size;
  require(w >= 1 && P > w, "press " + std::string(press_entry(o.id).name) + ": the prompt (" + std::to_string(P) +
                               " tokens) must be longer than window_size (" + std::to_string(w) + ")");
  require(ks >= 1 && ks % 2 == 1, "press " + std::string(press_entry(o.id).name) +
                                      ": kernel_size must be odd (kvpress's pooling keeps the length only then)");
  const int L = P - w, pad = ks / 2;
  Scores out(static_cast<size_t>(tr.n_kv_heads), std::vector<double>(static_cast<size_t>(L), 0.0));
  for (int kv = 0; kv < tr.n_kv_heads; ++kv) {
    for (int h = kv * g; h < (kv + 1) * g; ++h) {
      const HeadView head(tr, at.layer, h);
      std::vector<double> mean(static_cast<size_t>(L), 0.0);
      for (int t = L; t < P; ++t) {
        const std::vector<double> row = attention_row(head, t);
        for (int j = 0; j < L; ++j) mean[static_cast<size_t>(j)] += row[static_cast<size_t>(j)];
      }
      for (double& x : mean) x /= w;
      for (int j = 0; j < L; ++j) {
        double s = 0.0;
        for (int u = std::max(0, j - pad); u <= std::min(L - 1, j + pad); ++u) s += mean[static_cast<size_t>(u)];
        out[static_cast<size_t>(kv)][static_cast<size_t>(j)] += s / ks / g;
      }
    }
  }
  // scores.max() is over the whole (batch, KV head, position) tensor: one pad value for every head.
  double top = -INFINITY;
  for (const auto& s : out)
    for (double x : s) top = std::max(top, x);
  for (auto& s : out) s.resize(static_cast<size_t>(P), top + 1);
  return out;
}

// KnormPress: -vector_norm(keys, dim=-1).
Scores knorm(const PressLayer& at) {
  const Trace& tr = *at.trace;
  Scores out(static_cast<size_t>(tr.n_kv_heads));
  for (int kv = 0; kv < tr.n_kv_heads; ++kv)
    for (int j = 0; j < at.prompt_len; ++j)
      out[static_cast<size_t>(kv)].push_back(-std::sqrt(norm2(kv_row(tr.k[at.layer], tr, kv, j))));
  return out;
}

// KeyDiffPress: anchor = F.normalize(keys).mean(2); -F.cosine_similarity(keys, anchor) (eps 1e-8).
Scores keydiff(const PressLayer& at) {
  const Trace& tr = *at.trace;
  const int P = at.prompt_len, d = tr.head_dim;
  Scores out(static_cast<size_t>(tr.n_kv_heads));
  for (int kv = 0; kv < tr.n_kv_heads; ++kv) {
    std::vector<double> anchor(static_cast<size_t>(d), 0.0);
    for (int j = 0; j < P; ++j) {
      const std::vector<double> k = kv_row(tr.k[at.layer], tr, kv, j);
      const double nk = std::max(std::sqrt(norm2(k)), 1e-12);
      for (int x = 0; x < d; ++x) anchor[static_cast<size_t>(x)] += k[static_cast<size_t>(x)] / nk;
    }
    for (double& x : anchor) x /= P;
    const double na2 = norm2(anchor);
    for (int j = 0; j < P; ++j) {
      const std::vector<double> k = kv_row(tr.k[at.layer], tr, kv, j);
      const double dot = std::inner_product(k.begin(), k.end(), anchor.begin(), 0.0);
      out[static_cast<size_t>(kv)].push_back(-dot / std::sqrt(std::max(norm2(k) * na2, 1e-16)));
    }
  }
  return out;
}

// StreamingLLMPress: ones, zero on [n_sink, n_sink + n_pruned), n_pruned = n - int(n * (1 - ratio)).
Scores streaming_llm(const PressLayer& at, const PressOptions& o) {
  const Trace& tr = *at.trace;
  const int P = at.prompt_len;
  require(o.n_sink >= 0 && P > o.n_sink, "press streaming_llm: the prompt (" + std::to_string(P) +
                                             " tokens) must be longer than n_sink (" + std::to_string(o.n_sink) + ")");
  const int n_pruned = P - static_cast<int>(P * (1 - o.compression_ratio));
  std::vector<double> s(static_cast<size_t>(P), 1.0);
  for (int j = o.n_sink; j < std::min(P, o.n_sink + n_pruned); ++j) s[static_cast<size_t>(j)] = 0.0;
  return Scores(static_cast<size_t>(tr.n_kv_heads), s);
}

// LagKVPress._get_states_score of one partition against the next: ((v - min_ref) / (max_ref -
// min_ref)).std(-1) (unbiased), softmax over the partition.
std::vector<double> lag_partition_score(const std::vector<float>& tensor, const Trace& tr, int kv, int start, int lag) {
  const int d = tr.head_dim;
  std::vector<double> lo(static_cast<size_t>(d), INFINITY), hi(static_cast<size_t>(d), -INFINITY);
  for (int j = start + lag; j < start + 2 * lag; ++j) {
    const std::vector<double> r = kv_row(tensor, tr, kv, j);
    for (int x = 0; x < d; ++x) {
      lo[static_cast<size_t>(x)] = std::min(lo[static_cast<size_t>(x)], r[static_cast<size_t>(x)]);
      hi[static_cast<size_t>(x)] = std::max(hi[static_cast<size_t>(x)], r[static_cast<size_t>(x)]);
    }
  }
  std::vector<double> spread(static_cast<size_t>(lag));
  for (int u = 0; u < lag; ++u) {
    const std::vector<double> v = kv_row(tensor, tr, kv, start + u);
    std::vector<double> z(static_cast<size_t>(d));
    for (int x = 0; x < d; ++x)
      z[static_cast<size_t>(x)] = (v[static_cast<size_t>(x)] - lo[static_cast<size_t>(x)]) /
                                  (hi[static_cast<size_t>(x)] - lo[static_cast<size_t>(x)]);
    const double mean = std::accumulate(z.begin(), z.end(), 0.0) / d;
    double ss = 0.0;
    for (double y : z) ss += (y - mean) * (y - mean);
    spread[static_cast<size_t>(u)] = std::sqrt(ss / (d - 1));
  }
  std::vector<double> soft(spread.size());
  softmax(spread, soft);
  return soft;
}

// LagKVPress.score (cross_scoring = False): per partition, the rank of (key + value score) / 2
// divided by lag_size; sinks and the tail (last partition plus remainder) score 1. Short prompts
// (n < n_sink + 2 lag): 1 on the sinks, then arange(n - n_sink) / (n - n_sink).
Scores lagkv(const PressLayer& at, const PressOptions& o) {
  const Trace& tr = *at.trace;
  const int P = at.prompt_len, lag = o.lag_size, sink = o.n_sink;
  require(lag >= 2 && sink >= 0, "press lagkv: lag_size must be >= 2 and n_sink >= 0");
  require(tr.head_dim >= 2, "press lagkv: the standard deviation over the head dimension needs d >= 2");
  Scores out(static_cast<size_t>(tr.n_kv_heads), std::vector<double>(static_cast<size_t>(P), 1.0));
  if (P < sink + 2 * lag) {
    for (auto& s : out)
      for (int j = sink; j < P; ++j) s[static_cast<size_t>(j)] = static_cast<double>(j - sink) / (P - sink);
    return out;
  }
  const int end = sink + ((P - sink) / lag) * lag;
  for (int kv = 0; kv < tr.n_kv_heads; ++kv)
    for (int start = sink; start + lag < end; start += lag) {
      const std::vector<double> ks = lag_partition_score(tr.k[at.layer], tr, kv, start, lag);
      const std::vector<double> vs = lag_partition_score(tr.v[at.layer], tr, kv, start, lag);
      std::vector<double> both(static_cast<size_t>(lag));
      for (int u = 0; u < lag; ++u)
        both[static_cast<size_t>(u)] = (ks[static_cast<size_t>(u)] + vs[static_cast<size_t>(u)]) / 2;
      std::vector<int> order(static_cast<size_t>(lag));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return both[a] < both[b]; });
      for (int rank = 0; rank < lag; ++rank)
        out[static_cast<size_t>(kv)][static_cast<size_t>(start + order[static_cast<size_t>(rank)])] =
            static_cast<double>(rank) / lag;
    }
  return out;
}

// CURPress (leverage_type kv_product, local approximation, no random projection): k2 = |k|^2 and
// v2 = |v|^2, each divided by its sum over windows of local_window_size; k2 * v2 normalised to
// sum 1; the first num_sinks set to 1.
Scores cur(const PressLayer& at, const PressOptions& o) {
  const Trace& tr = *at.trace;
  const int P = at.prompt_len, w = o.local_window_size;
  require(w >= 1 && o.n_sink >= 0, "press cur: local_window_size must be >= 1 and n_sink >= 0");
  Scores out(static_cast<size_t>(tr.n_kv_heads));
  const auto local = [&](std::vector<double> x) {
    for (int start = 0; start < P; start += w) {
      const int stop = std::min(P, start + w);
      const double s = std::accumulate(x.begin() + start, x.begin() + stop, 0.0);
      for (int j = start; j < stop; ++j) x[static_cast<size_t>(j)] /= s;
    }
    return x;
  };
  for (int kv = 0; kv < tr.n_kv_heads; ++kv) {
    std::vector<double> k2(static_cast<size_t>(P)), v2(static_cast<size_t>(P));
    for (int j = 0; j < P; ++j) {
      k2[static_cast<size_t>(j)] = norm2(kv_row(tr.k[at.layer], tr, kv, j));
      v2[static_cast<size_t>(j)] = norm2(kv_row(tr.v[at.layer], tr, kv, j));
    }
    k2 = local(std::move(k2));
    v2 = local(std::move(v2));
    std::vector<double> s(static_cast<size_t>(P));
    for (int j = 0; j < P; ++j) s[static_cast<size_t>(j)] = k2[static_cast<size_t>(j)] * v2[static_cast<size_t>(j)];
    const double total = std::accumulate(s.begin(), s.end(), 0.0);
    for (double& x : s) x /= total;
    for (int j = 0; j < std::min(P, o.n_sink); ++j) s[static_cast<size_t>(j)] = 1.0;
    out[static_cast<size_t>(kv)] = std::move(s);
  }
  return out;
}

// NonCausalAttnPress: per query head, the prompt cut into tiles of chunk_size; within a tile every
// query attends every key of the tile (softmax of the unscaled q.k). The last tile is padded with
// zero rows as kvpress pads it: padded queries score 0 against every key, padded keys -1e-9 (not
// -inf), so they still take their share. Column sums, mean over the group, times |v|,
// avg_pool1d(3, padding 1), z-scored over the whole layer (unbiased std, clamped at 1e-6).
Scores non_causal_attn(const PressLayer& at, const PressOptions& o) {
  const Trace& tr = *at.trace;
  const int P = at.prompt_len, cs = o.chunk_size, g = tr.group_size(), d = tr.head_dim;
  require(cs >= 1, "press non_causal_attn: chunk_size must be >= 1");
  const int padded = (P + cs - 1) / cs * cs, pad = padded - P;
  const int last_start = pad > 0 ? P / cs * cs : (P - 1) / cs * cs;
  Scores out(static_cast<size_t>(tr.n_kv_heads), std::vector<double>(static_cast<size_t>(P), 0.0));
  std::vector<double> dots(static_cast<size_t>(cs)), row(static_cast<size_t>(cs));
  for (int kv = 0; kv < tr.n_kv_heads; ++kv) {
    for (int h = kv * g; h < (kv + 1) * g; ++h) {
      const float* q = tr.q[at.layer].data() + static_cast<size_t>(h) * tr.n_tokens * d;
      const float* k = tr.k[at.layer].data() + static_cast<size_t>(kv) * tr.n_tokens * d;
      std::vector<double> col(static_cast<size_t>(padded), 0.0);
      for (int start = 0; start < padded; start += cs) {
        const bool last = start == last_start;
        for (int i = start; i < start + cs; ++i) {
          for (int j = start; j < start + cs; ++j) {
            double dot = 0.0;
            if (i < P && j < P)
              for (int x = 0; x < d; ++x)
                dot += static_cast<double>(q[static_cast<size_t>(i) * d + x]) * k[static_cast<size_t>(j) * d + x];
            if (last && j >= P) dot = -1e-9;  // key_mask
            dots[static_cast<size_t>(j - start)] = dot;
          }
          softmax(dots, row);
          for (int j = start; j < start + cs; ++j) col[static_cast<size_t>(j)] += row[static_cast<size_t>(j - start)];
        }
      }
      for (int j = 0; j < P; ++j)
        out[static_cast<size_t>(kv)][static_cast<size_t>(j)] += col[static_cast<size_t>(j)] / g;
    }
    for (int j = 0; j < P; ++j) {
      const std::vector<double> v = kv_row(tr.v[at.layer], tr, kv, j);
      out[static_cast<size_t>(kv)][static_cast<size_t>(j)] *= std::sqrt(norm2(v));
    }
    std::vector<double> pooled(static_cast<size_t>(P));
    for (int j = 0; j < P; ++j) {
      double s = 0.0;
      for (int u = std::max(0, j - 1); u <= std::min(P - 1, j + 1); ++u)
        s += out[static_cast<size_t>(kv)][static_cast<size_t>(u)];
      pooled[static_cast<size_t>(j)] = s / 3;
    }
    out[static_cast<size_t>(kv)] = std::move(pooled);
  }
  double sum = 0.0, count = 0.0;
  for (const auto& s : out)
    for (double x : s) sum += x, count += 1;
  const double mean = sum / count;
  double ss = 0.0;
  for (const auto& s : out)
    for (double x : s) ss += (x - mean) * (x - mean);
  const double sd = std::max(count > 1 ? std::sqrt(ss / (count - 1)) : 0.0, 1e-6);
  for (auto& s : out)
    for (double& x : s) x = (x - mean) / sd;
  return out;
}

// RandomPress(seed): torch.rand(b, H_kv, n) after manual_seed(seed), one generator per call.
Scores random_scores(const PressLayer& at, const PressOptions& o) {
  const Trace& tr = *at.trace;
  const int P = at.prompt_len;
  const std::vector<float> u = torch_cpu_rand(o.seed, static_cast<size_t>(tr.n_kv_heads) * P);
  Scores out(static_cast<size_t>(tr.n_kv_heads));
  for (int kv = 0; kv < tr.n_kv_heads; ++kv)
    out[static_cast<size_t>(kv)].assign(u.begin() + static_cast<std::ptrdiff_t>(kv) * P,
                                        u.begin() + static_cast<std::ptrdiff_t>(kv + 1) * P);
  return out;
}

}  // namespace

std::vector<std::vector<double>> compute(const PressLayer& at, const PressOptions& o) {
  switch (o.id) {
    case PressId::ObservedAttention:
      return observed_attention(at);
    case PressId::Tova:
      return tova(at);
    case PressId::SnapKV:
    case PressId::PyramidKV:
      return snapkv(at, o);
    case PressId::Knorm:
      return knorm(at);
    case PressId::KeyDiff:
      return keydiff(at);
    case PressId::StreamingLLM:
      return streaming_llm(at, o);
    case PressId::LagKV:
      return lagkv(at, o);
    case PressId::CUR:
      return cur(at, o);
    case PressId::NonCausalAttention:
      return non_causal_attn(at, o);
    case PressId::Random:
      return random_scores(at, o);
    case PressId::Count:
      break;
  }
  throw Error("press id out of range (a kvoracle bug)");
}

}  // namespace kvo::press_scores

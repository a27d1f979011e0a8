// Teacher-forced perplexity of a text under full attention: `kvoracle perplexity` as a library call.
#pragma once
#include <string>

#include "kvo/model/llama.hpp"

namespace kvo::model {

struct PerplexityResult {
  int tokens = 0;           // the text's tokens scored (n)
  int predictions = 0;      // n - 1: token t + 1 predicted from tokens 0..t
  double mean_nll = 0.0;    // nats, mean over the predictions
  double perplexity = 0.0;  // exp(mean_nll)
};

inline constexpr int kPerplexityTokens = 1024;  // the default length scored

// The text's first `tokens` tokens (0: all). kvo::Error when fewer than 2 tokens remain or they
// exceed the model's context.
PerplexityResult perplexity(const Llama& model, const std::string& text, int tokens = kPerplexityTokens);

}  // namespace kvo::model

#include "kvo/model/perplexity.hpp"

#include <cmath>

#include "kvo/core/error.hpp"

namespace kvo::model {

PerplexityResult perplexity(const Llama& model, const std::string& text, int tokens) {
  require(tokens >= 0, "tokens must be >= 0 (0: the whole text)");
  std::vector<int> ids = model.tokenizer().encode(text);
  if (tokens > 0 && static_cast<int>(ids.size()) > tokens) ids.resize(static_cast<size_t>(tokens));
  require(static_cast<int>(ids.size()) <= model.config().context, "the text exceeds the model's context; pass tokens");
  require(ids.size() >= 2, "the text has fewer than 2 tokens: nothing to predict");
  PerplexityResult r;
  r.tokens = static_cast<int>(ids.size());
  r.predictions = r.tokens - 1;
  r.mean_nll = mean_nll(model, ids);
  r.perplexity = std::exp(r.mean_nll);
  return r;
}

}  // namespace kvo::model

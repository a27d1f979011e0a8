// The engine the studies drive (kvo/model): its types, named in kvo::studies as they are in
// kvo::model.
#pragma once
#include "kvo/model/kv_quant.hpp"
#include "kvo/model/llama.hpp"
#include "kvo/model/tokenizer.hpp"

namespace kvo::studies {

using model::KvCache;
using model::KvQuantization;
using model::Llama;
using model::LlamaConfig;
using model::MatrixRM;
using model::Tokenizer;

}  // namespace kvo::studies

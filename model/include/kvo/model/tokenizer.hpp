// Byte-level BPE tokenizer (GPT-2 family) built from a GGUF file's vocabulary and merges, with
// SmolLM's pre-tokenizer: every digit on its own, then the GPT-2 split pattern (ICU regex).
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace kvo::model {

class GgufFile;

class Tokenizer {
 public:
  explicit Tokenizer(const GgufFile& file);

  // Text to ids; with parse_special, control-token strings such as <|im_start|> become their ids.
  std::vector<int> encode(const std::string& text, bool parse_special = false) const;
  // Ids to text (control tokens are written out as their strings); always valid UTF-8: bytes that
  // form no character become U+FFFD, as in transformers' decode.
  std::string decode(const std::vector<int>& ids) const;

  int vocab_size() const { return static_cast<int>(tokens_.size()); }
  const std::string& token(int id) const { return tokens_.at(static_cast<size_t>(id)); }
  int bos() const { return bos_; }
  int eos() const { return eos_; }

 private:
  std::vector<std::string> merge_word(const std::string& mapped) const;
  std::vector<int> bpe(const std::string& mapped) const;
  void encode_plain(const std::string& text, std::vector<int>& out) const;

  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int> ids_;
  std::unordered_map<std::string, int> merge_rank_;  // "left right" -> rank
  std::vector<std::string> specials_;                // control tokens, longest first
  std::string byte_to_char_[256];                    // byte -> UTF-8 of its mapped code point
  std::unordered_map<std::string, unsigned char> char_to_byte_;
  int bos_ = -1, eos_ = -1;
};

}  // namespace kvo::model

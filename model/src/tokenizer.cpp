#include "kvo/model/tokenizer.hpp"

#include <unicode/regex.h>
#include <unicode/unistr.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <memory>
#include <queue>

#include "kvo/core/error.hpp"
#include "kvo/model/gguf.hpp"

namespace kvo::model {
namespace {

std::string utf8(char32_t cp) {
  std::string s;
  icu::UnicodeString(static_cast<UChar32>(cp)).toUTF8String(s);
  return s;
}

// Splits UTF-8 text into its code points, each as a UTF-8 string.
std::vector<std::string> code_points(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
    out.push_back(s.substr(i, len));
    i += len;
  }
  return out;
}

// GPT-2's pre-tokenizer pattern; SmolLM first isolates every digit.
const char* kDigit = "\\p{N}";
const char* kGpt2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

std::unique_ptr<icu::RegexPattern> compile(const char* pattern) {
  UErrorCode status = U_ZERO_ERROR;
  UParseError pe;
  std::unique_ptr<icu::RegexPattern> p(
      icu::RegexPattern::compile(icu::UnicodeString::fromUTF8(pattern), 0, pe, status));
  require(U_SUCCESS(status), std::string("tokenizer: cannot compile the split pattern: ") + u_errorName(status));
  return p;
}

// All matches of pattern in text (the GPT-2 pattern covers every character, so nothing is lost).
std::vector<icu::UnicodeString> matches(const icu::RegexPattern& pattern, const icu::UnicodeString& text) {
  UErrorCode status = U_ZERO_ERROR;
  std::unique_ptr<icu::RegexMatcher> m(pattern.matcher(text, status));
  std::vector<icu::UnicodeString> out;
  while (m->find(status) && U_SUCCESS(status)) out.push_back(m->group(status));
  require(U_SUCCESS(status), std::string("tokenizer: split failed: ") + u_errorName(status));
  return out;
}

}  // namespace

Tokenizer::Tokenizer(const GgufFile& f) {
  const auto& meta = f.metadata();
  require(f.get_string("tokenizer.ggml.model") == "gpt2",
          "tokenizer: only byte-level BPE (tokenizer.ggml.model = gpt2) is supported");
  const auto array_of = [&](const char* key, bool required) -> const nlohmann::json* {
    if (!meta.contains(key)) {
      require(!required, std::string("tokenizer: ") + key + " is missing");
      return nullptr;
    }
    require(meta[key].is_array(), std::string("tokenizer: ") + key + " is not an array");
    return &meta[key];
  };
  const auto& toks = *array_of("tokenizer.ggml.tokens", true);
  require(!toks.empty() && toks.size() < static_cast<size_t>(INT32_MAX), "tokenizer: tokenizer.ggml.tokens is empty");
  tokens_.reserve(toks.size());
  for (const auto& t : toks) {
    require(t.is_string(), "tokenizer: a vocabulary entry is not a string");
    ids_.emplace(t.get<std::string>(), static_cast<int>(tokens_.size()));
    tokens_.push_back(t.get<std::string>());
  }
  const auto& merges = *array_of("tokenizer.ggml.merges", true);
  for (size_t r = 0; r < merges.size(); ++r) {
    require(merges[r].is_string(), "tokenizer: merge " + std::to_string(r) + " is not a string");
    merge_rank_.emplace(merges[r].get<std::string>(), static_cast<int>(r));
  }
  if (const auto* types = array_of("tokenizer.ggml.token_type", false)) {
    for (size_t i = 0; i < types->size() && i < tokens_.size(); ++i) {
      require((*types)[i].is_number_integer(), "tokenizer: token type " + std::to_string(i) + " is not an integer");
      if ((*types)[i].get<std::int64_t>() == 3) specials_.push_back(tokens_[i]);  // CONTROL
    }
    std::sort(specials_.begin(), specials_.end(), [](auto& a, auto& b) { return a.size() > b.size(); });
  }
  const auto token_id = [&](const char* key) {
    if (!meta.contains(key)) return -1;
    const auto& v = meta[key];
    require(v.is_number_unsigned() && v.get<std::uint64_t>() < tokens_.size(),
            std::string("tokenizer: ") + key + " is not a token id");
    return static_cast<int>(v.get<std::uint64_t>());
  };
  bos_ = token_id("tokenizer.ggml.bos_token_id");
  eos_ = token_id("tokenizer.ggml.eos_token_id");
  // GPT-2 bytes_to_unicode: printable bytes map to themselves, the rest to 256, 257, ...
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    byte_to_char_[b] = utf8(static_cast<char32_t>(printable ? b : next++));
    char_to_byte_[byte_to_char_[b]] = static_cast<unsigned char>(b);
  }
}

// Merges the lowest-ranked adjacent pair, the leftmost among equal ranks, until none is in the
// merge table. Symbols sit in a linked list and candidate pairs in a heap keyed (rank, position)
// with lazy invalidation, O(m log m) for a word of m symbols (the scan-all-pairs form is O(m^2):
// 7 s for one 16 000-letter word, found by fuzzing).
std::vector<std::string> Tokenizer::merge_word(const std::string& mapped) const {
  std::vector<std::string> sym = code_points(mapped);
  const int m = static_cast<int>(sym.size());
  std::vector<int> prev(static_cast<size_t>(m)), next(static_cast<size_t>(m)), version(static_cast<size_t>(m), 0);
  for (int i = 0; i < m; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < m ? i + 1 : -1;
  }
  struct Pair {
    int rank, left, right, left_version, right_version;
    bool operator>(const Pair& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::priority_queue<Pair, std::vector<Pair>, std::greater<>> heap;
  auto consider = [&](int left) {
    if (left < 0 || next[left] < 0) return;
    const int right = next[left];
    auto it = merge_rank_.find(sym[left] + " " + sym[right]);
    if (it != merge_rank_.end()) heap.push({it->second, left, right, version[left], version[right]});
  };
  for (int i = 0; i + 1 < m; ++i) consider(i);
  while (!heap.empty()) {
    const Pair p = heap.top();
    heap.pop();
    if (next[p.left] != p.right || version[p.left] != p.left_version || version[p.right] != p.right_version)
      continue;  // stale: a neighbour was merged since
    sym[p.left] += sym[p.right];
    sym[p.right].clear();
    ++version[p.left];
    ++version[p.right];
    next[p.left] = next[p.right];
    if (next[p.right] >= 0) prev[next[p.right]] = p.left;
    next[p.right] = -1;
    consider(prev[p.left]);
    consider(p.left);
  }
  std::vector<std::string> out;
  for (int i = m > 0 ? 0 : -1; i >= 0; i = next[i]) out.push_back(std::move(sym[i]));
  return out;
}

std::vector<int> Tokenizer::bpe(const std::string& mapped) const {
  const std::vector<std::string> sym = merge_word(mapped);
  std::vector<int> ids;
  for (const auto& s : sym) {
    auto it = ids_.find(s);
    if (it != ids_.end()) {
      ids.push_back(it->second);
    } else {  // not in the vocabulary: fall back to its single mapped bytes
      for (const auto& cp : code_points(s)) {
        auto b = ids_.find(cp);
        if (b == ids_.end()) {
          const auto byte = char_to_byte_.find(cp);
          char hex[8];
          std::snprintf(hex, sizeof hex, "0x%02x", byte == char_to_byte_.end() ? 0u : unsigned{byte->second});
          throw Error("tokenizer: the vocabulary has no symbol for byte " + std::string(hex) + " ('" + cp +
                      "'), so this model cannot encode the text");
        }
        ids.push_back(b->second);
      }
    }
  }
  return ids;
}

void Tokenizer::encode_plain(const std::string& text, std::vector<int>& out) const {
  static const auto digit = compile(kDigit);
  static const auto gpt2 = compile(kGpt2);
  const icu::UnicodeString u = icu::UnicodeString::fromUTF8(text);
  // Pieces: each digit alone, and the runs between digits.
  std::vector<icu::UnicodeString> pieces;
  UErrorCode status = U_ZERO_ERROR;
  std::unique_ptr<icu::RegexMatcher> m(digit->matcher(u, status));
  int32_t last = 0;
  while (m->find(status) && U_SUCCESS(status)) {
    const int32_t s = m->start(status), e = m->end(status);
    if (s > last) pieces.push_back(icu::UnicodeString(u, last, s - last));
    pieces.push_back(icu::UnicodeString(u, s, e - s));
    last = e;
  }
  if (last < u.length()) pieces.push_back(icu::UnicodeString(u, last));
  for (const auto& piece : pieces)
    for (const auto& word : matches(*gpt2, piece)) {
      std::string bytes;
      word.toUTF8String(bytes);
      std::string mapped;
      for (unsigned char c : bytes) mapped += byte_to_char_[c];
      const auto ids = bpe(mapped);
      out.insert(out.end(), ids.begin(), ids.end());
    }
}

std::vector<int> Tokenizer::encode(const std::string& text, bool parse_special) const {
  // Byte-level BPE loses nothing on UTF-8, but ICU's pre-tokenizer would replace ill-formed bytes
  // with U+FFFD: refuse them instead of changing the text silently.
  require(text.size() < static_cast<size_t>(INT32_MAX), "tokenizer: the text is longer than 2 GiB");
  for (int32_t i = 0, n = static_cast<int32_t>(text.size()); i < n;) {
    const int32_t at = i;
    UChar32 c;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wconversion"  // inside ICU's macro
    U8_NEXT(text.data(), i, n, c);
#pragma GCC diagnostic pop
    require(c >= 0, "tokenizer: the text is not valid UTF-8 (byte " + std::to_string(at) + ")");
  }
  std::vector<int> out;
  size_t start = 0;
  if (parse_special && !specials_.empty()) {
    for (size_t i = 0; i < text.size();) {
      const std::string* hit = nullptr;
      for (const auto& s : specials_)
        if (text.compare(i, s.size(), s) == 0) {
          hit = &s;
          break;
        }
      if (!hit) {
        ++i;
        continue;
      }
      if (i > start) encode_plain(text.substr(start, i - start), out);
      out.push_back(ids_.at(*hit));
      i += hit->size();
      start = i;
    }
  }
  if (start < text.size()) encode_plain(text.substr(start), out);
  return out;
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
  std::string out;
  for (int id : ids) {
    require(id >= 0 && id < vocab_size(), "tokenizer: id " + std::to_string(id) + " is outside the vocabulary");
    const std::string& t = tokens_[static_cast<size_t>(id)];
    if (std::find(specials_.begin(), specials_.end(), t) != specials_.end()) {
      out += t;
      continue;
    }
    for (const auto& cp : code_points(t)) {
      auto it = char_to_byte_.find(cp);
      out += it != char_to_byte_.end() ? std::string(1, static_cast<char>(it->second)) : cp;
    }
  }
  // A byte-level vocabulary can end a text inside a character, and a model can emit bytes that never
  // form one: each ill-formed part becomes U+FFFD, as Python's bytes.decode(errors="replace") and
  // transformers' decode do, so the text is always valid UTF-8 (JSON, Python strings).
  std::string valid;
  icu::UnicodeString::fromUTF8(out).toUTF8String(valid);
  return valid;
}

}  // namespace kvo::model

#include "kvo/studies/tasks.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

#include "kvo/core/error.hpp"
#include "kvo/core/registry.hpp"
#include "kvo/core/text_file.hpp"
#include "kvo/core/text_list.hpp"

namespace kvo::studies {

using namespace kvo::model;  // the engine the studies drive
namespace {

constexpr std::array<TaskEntry, static_cast<size_t>(TaskId::Count)> kTable{{
    {.id = TaskId::Passkey,
     .name = "passkey",
     .summary = "a 5-digit pass key in repeated filler sentences",
     .rule = ScoreRule::All,
     .has_depth = true,
     .max_new_tokens = 8},
    {.id = TaskId::Niah,
     .name = "niah",
     .summary = "a 7-digit magic number for a key word, hidden in real text (Debian's licences)",
     .rule = ScoreRule::All,
     .has_depth = true,
     .max_new_tokens = 12},
    {.id = TaskId::MultiKey,
     .name = "multikey",
     .summary = "niah with three distractor needles of other keys; retrieve the one asked",
     .rule = ScoreRule::All,
     .has_depth = true,
     .max_new_tokens = 12},
    {.id = TaskId::MultiValue,
     .name = "multivalue",
     .summary = "four magic numbers for one key in real text; retrieve all of them",
     .rule = ScoreRule::Recall,
     .has_depth = true,
     .max_new_tokens = 40},
    {.id = TaskId::VariableTracking,
     .name = "vt",
     .summary = "a chain of four variable assignments in filler; name every variable of the value",
     .rule = ScoreRule::Recall,
     .has_depth = true,
     .max_new_tokens = 30},
    {.id = TaskId::CommonWords,
     .name = "cwe",
     .summary = "a numbered list of words; name the five most frequent",
     .rule = ScoreRule::Recall,
     .has_depth = false,
     .max_new_tokens = 30},
}};
constexpr Registry<TaskEntry, kTable.size()> kTasks{kTable, "task", "tasks"};
static_assert(kTasks.complete(), "task table: one entry per TaskId, in order, with a unique name");

// Portable seeded randomness (the standard distributions differ between libraries).
struct Rng {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  std::uint64_t below(std::uint64_t n) { return next() % n; }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  template <class T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
  }
};

std::uint64_t mix(std::uint64_t a, std::uint64_t b) { return Rng{a * 0x100000001B3ULL ^ b}.next(); }

const std::vector<std::string>& filler() {
  static const std::vector<std::string> f = {"The grass is green.", "The sky is blue.", "The sun is yellow.",
                                             "Here we go.", "There and back again."};
  return f;
}

// Sentences and distinct words of the haystack texts (regular files, sorted by name).
struct Haystack {
  std::vector<std::string> sentences;
  std::vector<std::string> words;  // lowercase, 4 to 9 letters, sorted
};

Haystack read_haystack(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  require(fs::is_directory(dir, ec), "haystack directory '" + dir + "' does not exist");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && !e.is_symlink()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  Haystack h;
  std::set<std::string> words;
  for (const auto& f : files) {
    std::string text;  // whitespace collapsed, ASCII only
    for (char c : read_text_file(f.string(), "haystack")) {
      const unsigned char u = static_cast<unsigned char>(c);
      if (u >= 128) continue;
      if (std::isspace(u)) {
        if (!text.empty() && text.back() != ' ') text += ' ';
      } else if (std::isprint(u)) {
        text += c;
      }
    }
    size_t start = 0;
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '.' && (i + 1 == text.size() || text[i + 1] == ' ')) {
        std::string s = text.substr(start, i + 1 - start);
        while (!s.empty() && s.front() == ' ') s.erase(s.begin());
        if (std::count(s.begin(), s.end(), ' ') >= 3 && s.size() <= 600) h.sentences.push_back(s);
        start = i + 1;
      }
    std::string w;
    for (char c : text + " ") {
      if (std::isalpha(static_cast<unsigned char>(c))) {
        w += c;
        continue;
      }
      const bool lower =
          std::all_of(w.begin(), w.end(), [](char x) { return std::islower(static_cast<unsigned char>(x)); });
      if (lower && w.size() >= 4 && w.size() <= 9) words.insert(w);
      w.clear();
    }
  }
  h.words.assign(words.begin(), words.end());
  require(h.sentences.size() >= 200 && h.words.size() >= 200,
          "haystack directory '" + dir + "' holds too little text (" + std::to_string(h.sentences.size()) +
              " sentences; 200 needed)");
  return h;
}

std::string digits(Rng& r, int n) {
  std::string s(1, static_cast<char>('1' + r.below(9)));
  while (static_cast<int>(s.size()) < n) s += static_cast<char>('0' + r.below(10));
  return s;
}

std::string pick_words(Rng& r, const std::vector<std::string>& words, std::set<std::string>& used) {
  for (;;) {
    const std::string& w = words[r.below(words.size())];
    if (used.insert(w).second) return w;
  }
}

struct Needle {
  std::string text;
  double depth = 0.0;
  std::string value;  // the part whose tokens are tracked (a substring of text)
};

// What a generator decides before the haystack is sized.
struct Plan {
  std::string header;
  std::vector<Needle> needles;
  bool real_text = false;  // haystack sentences from Debian's texts (else the filler)
};

int count_tokens(const Tokenizer& tok, const std::string& s) { return static_cast<int>(tok.encode(s).size()); }

// Tokens of the question block task_tokens appends after the context.
int question_block_size(const Tokenizer& tok, const TaskInstance& in) {
  TaskInstance q;
  q.question = in.question;
  q.answer_prefix = in.answer_prefix;
  return static_cast<int>(task_tokens(tok, q).question.size());
}

// Fills the haystack so that context + question block is at most `length` tokens (within a
// sentence of it), places the needles by depth, and finds the tokens of their values.
void build_context(const Tokenizer& tok, const Plan& plan, const Haystack& hay, Rng& rng, TaskInstance& inst) {
  const int budget = inst.length - question_block_size(tok, inst);
  const std::vector<std::string>& source = plan.real_text ? hay.sentences : filler();
  size_t next = plan.real_text ? rng.below(source.size()) : 0;
  int used = count_tokens(tok, plan.header);
  for (const Needle& n : plan.needles) used += count_tokens(tok, " " + n.text);
  std::vector<std::string> chosen;
  while (true) {
    const std::string& s = source[next % source.size()];
    const int t = count_tokens(tok, " " + s);
    if (used + t > budget) break;
    used += t;
    chosen.push_back(s);
    ++next;
  }
  for (;;) {
    // Needles sorted by depth go after sentence round(depth * count); ties keep plan order.
    std::vector<size_t> order(plan.needles.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return plan.needles[a].depth < plan.needles[b].depth; });
    std::string text = plan.header;
    std::vector<std::pair<size_t, size_t>> spans;  // character ranges of the values
    size_t x = 0;
    auto put = [&](const std::string& piece) {
      if (!text.empty()) text += ' ';
      text += piece;
    };
    for (size_t s = 0; s <= chosen.size(); ++s) {
      while (x < order.size() &&
             static_cast<size_t>(std::lround(plan.needles[order[x]].depth * static_cast<double>(chosen.size()))) <= s) {
        const Needle& n = plan.needles[order[x++]];
        put(n.text);
        const size_t at = text.size() - n.text.size() + n.text.find(n.value);
        spans.emplace_back(at, at + n.value.size());
      }
      if (s < chosen.size()) put(chosen[s]);
    }
    const std::vector<int> ids = tok.encode(text);
    if (static_cast<int>(ids.size()) > budget && !chosen.empty()) {
      chosen.pop_back();
      continue;
    }
    inst.context = text;
    inst.needles.clear();
    for (auto [a, b] : spans) {
      // The value's tokens: a word's token carries the space before it.
      if (a > 0 && text[a - 1] == ' ' && !std::isdigit(static_cast<unsigned char>(text[a]))) --a;
      const std::vector<int> before = tok.encode(text.substr(0, a)), through = tok.encode(text.substr(0, b));
      const bool aligned = before.size() <= ids.size() && std::equal(before.begin(), before.end(), ids.begin()) &&
                           through.size() <= ids.size() && std::equal(through.begin(), through.end(), ids.begin());
      require(aligned, "task " + inst.task + ": the needle '" + text.substr(a, b - a) +
                           "' would be split with the text around it at depth " + std::to_string(inst.depth));
      inst.needles.emplace_back(static_cast<int>(before.size()), static_cast<int>(through.size()));
    }
    return;
  }
}

std::string upper_name(Rng& r) {
  std::string s;
  for (int i = 0; i < 5; ++i) s += static_cast<char>('A' + r.below(26));
  return s;
}

TaskInstance make_instance(const Tokenizer& tok, TaskId id, int length, double depth, int index, const Haystack& hay,
                           std::uint64_t seed) {
  const TaskEntry& e = task_entry(id);
  Rng rng{mix(mix(mix(seed, static_cast<std::uint64_t>(id)), static_cast<std::uint64_t>(length)),
              mix(static_cast<std::uint64_t>(std::llround(depth * 1000)), static_cast<std::uint64_t>(index)))};
  TaskInstance in;
  in.task = std::string(e.name);
  in.length = length;
  in.depth = e.has_depth ? depth : -1.0;
  std::ostringstream name;
  name << e.name << '-' << length;
  if (e.has_depth) name << "-d" << std::lround(depth * 100);
  name << '-' << index;
  in.id = name.str();
  in.rule = e.rule;
  in.max_new_tokens = e.max_new_tokens;
  Plan plan;
  std::set<std::string> used;
  switch (id) {
    case TaskId::Passkey: {
      const std::string v = digits(rng, 5);
      plan.header =
          "There is an important info hidden inside a lot of irrelevant text. Find it and memorize it. I will quiz "
          "you about the important information there.";
      plan.needles.push_back({"The pass key is " + v + ". Remember it. " + v + " is the pass key.", depth, v});
      in.question = "What is the pass key?";
      in.answer_prefix = "The pass key is";
      in.answers = {v};
      break;
    }
    case TaskId::Niah:
    case TaskId::MultiKey: {
      const std::string key = pick_words(rng, hay.words, used), v = digits(rng, 7);
      plan.real_text = true;
      plan.header =
          "A special magic number is hidden within the following text. Make sure to memorize it. I will quiz you "
          "about the number afterwards.";
      plan.needles.push_back({"One of the special magic numbers for " + key + " is: " + v + ".", depth, v});
      if (id == TaskId::MultiKey)
        for (int d = 0; d < 3; ++d) {
          const std::string other = pick_words(rng, hay.words, used), w = digits(rng, 7);
          plan.needles.push_back({"One of the special magic numbers for " + other + " is: " + w + ".", rng.unit(), w});
        }
      in.question = "What is the special magic number for " + key + " mentioned in the provided text?";
      in.answer_prefix = "The special magic number for " + key + " mentioned in the provided text is";
      in.answers = {v};
      break;
    }
    case TaskId::MultiValue: {
      const std::string key = pick_words(rng, hay.words, used);
      plan.real_text = true;
      plan.header =
          "Some special magic numbers are hidden within the following text. Make sure to memorize them. I will quiz "
          "you about the numbers afterwards.";
      for (int x = 0; x < 4; ++x) {
        const std::string v = digits(rng, 7);
        plan.needles.push_back(
            {"One of the special magic numbers for " + key + " is: " + v + ".", x == 0 ? depth : rng.unit(), v});
        in.answers.push_back(v);
      }
      in.question = "What are all the special magic numbers for " + key + " mentioned in the provided text?";
      in.answer_prefix = "The special magic numbers for " + key + " mentioned in the provided text are";
      break;
    }
    case TaskId::VariableTracking: {
      const std::string v = digits(rng, 5);
      constexpr int hops = 4;
      std::vector<std::string> names;
      while (static_cast<int>(names.size()) < hops) {
        const std::string n = upper_name(rng);
        if (used.insert(n).second) names.push_back(n);
      }
      plan.header = "Memorize and track the chain of variable assignments hidden in the following text.";
      for (int x = 0; x < hops; ++x) {
        const std::string rhs = x == 0 ? v : "VAR " + names[static_cast<size_t>(x) - 1];
        const double d = depth + (1.0 - depth) * x / hops;  // in order: each hop after the one it copies
        plan.needles.push_back(
            {"VAR " + names[static_cast<size_t>(x)] + " = " + rhs + ".", d, names[static_cast<size_t>(x)]});
      }
      in.question = "Find all variables that are assigned the value " + v + " in the text above.";
      in.answer_prefix = "Answer: According to the chain of variable assignments in the text above, " +
                         std::to_string(hops) + " variables are assigned the value " + v + ", they are:";
      in.answers = names;
      break;
    }
    case TaskId::CommonWords: {
      constexpr int common = 5;
      in.question = "What are the " + std::to_string(common) + " most common words in the above list?";
      in.answer_prefix = "Answer: The top " + std::to_string(common) + " words that appear most often in the list are:";
      const std::string header =
          "Below is a numbered list of words. In these words, some appear more often than others. Memorize the ones "
          "that appear most often.";
      const int budget = length - question_block_size(tok, in);
      std::vector<std::string> pool;
      for (int x = 0; x < common + length / 8 + 1; ++x) pool.push_back(pick_words(rng, hay.words, used));
      in.answers.assign(pool.begin(), pool.begin() + common);
      // Common words fill 40% of the list, every other word appears twice; fewer entries until it fits.
      for (int entries = length / 4;; entries = entries * 9 / 10) {
        const int per_common = std::max(4, entries * 2 / (5 * common));
        std::vector<std::string> list;
        for (int c = 0; c < common; ++c)
          for (int r = 0; r < per_common; ++r) list.push_back(pool[static_cast<size_t>(c)]);
        for (size_t u = common; static_cast<int>(list.size()) + 2 <= std::max(entries, common * per_common + 2); ++u)
          for (int r = 0; r < 2; ++r) list.push_back(pool[u]);
        Rng order{rng.s};
        order.shuffle(list);
        std::string text = header;
        for (size_t x = 0; x < list.size(); ++x) text += " " + std::to_string(x + 1) + ". " + list[x];
        if (count_tokens(tok, text) <= budget || entries <= common * 4) {
          require(count_tokens(tok, text) <= budget,
                  "task cwe: length " + std::to_string(length) + " is too short for its word list");
          in.context = text;
          break;
        }
      }
      return in;
    }
    case TaskId::Count:
      break;
  }
  build_context(tok, plan, hay, rng, in);
  return in;
}

// Few-shot: `shots` worked examples of the task, each an instance of kShotLength tokens (its needle
// at a seeded depth) followed by its answer, drawn from seeds no suite instance uses.
void add_examples(const Tokenizer& tok, TaskId id, int shots, int index, const Haystack& hay, std::uint64_t seed,
                  TaskInstance& in) {
  Rng rng{mix(mix(seed, 0x5407ULL), mix(static_cast<std::uint64_t>(id), static_cast<std::uint64_t>(index)))};
  for (int s = 0; s < shots; ++s) {
    const TaskInstance ex =
        make_instance(tok, id, kShotLength, std::round(rng.unit() * 4) / 4, 1000000 + index * 64 + s, hay, seed);
    in.examples +=
        ex.context + "\n\n" + ex.question + " " + ex.answer_prefix + " " + join_answers(ex.answers) + ".\n\n";
  }
  in.shots = shots;
  in.id += "-s" + std::to_string(shots);
}

}  // namespace

std::span<const TaskEntry> task_table() { return kTasks.all(); }

const TaskEntry& task_entry(TaskId id) { return kTasks[id]; }

TaskId parse_task(std::string_view name) { return kTasks.parse(name).id; }

std::vector<TaskId> parse_task_list(std::string_view names) { return kTasks.parse_list(names, {.all = true}); }

std::string_view to_string(ScoreRule r) { return r == ScoreRule::All ? "all" : "recall"; }

ScoreRule parse_score_rule(std::string_view name) {
  if (name == "all") return ScoreRule::All;
  if (name == "recall") return ScoreRule::Recall;
  throw Error("unknown scoring rule '" + std::string(name) + "' (known: all, recall)");
}

double score_answer(const TaskInstance& in, std::string_view generated) {
  if (in.answers.empty()) return 0.0;
  auto lower = [](std::string_view s) {
    std::string o(s);
    for (char& c : o) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return o;
  };
  const std::string g = lower(generated);
  int found = 0;
  for (const std::string& a : in.answers)
    if (g.find(lower(a)) != std::string::npos) ++found;
  const double recall = static_cast<double>(found) / static_cast<double>(in.answers.size());
  return in.rule == ScoreRule::Recall ? recall : (found == static_cast<int>(in.answers.size()) ? 1.0 : 0.0);
}

std::string join_answers(const std::vector<std::string>& answers) {
  std::string s;
  for (const std::string& a : answers) {
    if (!s.empty()) s.append(", ");
    s.append(a);
  }
  return s;
}

std::string_view to_string(PromptFormat f) { return f == PromptFormat::Plain ? "plain" : "chat"; }

PromptFormat parse_prompt_format(std::string_view name) {
  if (name == "plain") return PromptFormat::Plain;
  if (name == "chat") return PromptFormat::Chat;
  throw Error("unknown prompt format '" + std::string(name) + "' (known: plain, chat)");
}

TaskTexts task_texts(const TaskInstance& in, bool question_first) {
  TaskTexts t;
  if (!in.examples.empty()) t.context.push_back(in.examples);
  if (question_first) t.context.push_back(in.question + "\n\n");
  t.needle_piece = static_cast<int>(t.context.size());
  t.context.push_back(in.context);
  t.question = "\n\n" + in.question + " " + in.answer_prefix;
  return t;
}

TaskTokens task_tokens(const Tokenizer& tok, const TaskInstance& in, bool question_first, PromptFormat format) {
  TaskTokens t;
  const bool chat = format == PromptFormat::Chat;
  // Chat: the GGUF's ChatML template around the same pieces (special tokens parsed in its parts).
  if (chat)
    t.context = tok.encode(
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\n",
        true);
  const TaskTexts texts = task_texts(in, question_first);
  for (size_t x = 0; x < texts.context.size(); ++x) {
    if (static_cast<int>(x) == texts.needle_piece) t.needle_shift = static_cast<int>(t.context.size());
    const std::vector<int> ids = tok.encode(texts.context[x]);
    t.context.insert(t.context.end(), ids.begin(), ids.end());
  }
  t.question = chat ? tok.encode("\n\n" + in.question + "<|im_end|>\n<|im_start|>assistant\n" + in.answer_prefix, true)
                    : tok.encode(texts.question);
  return t;
}

void TaskSuiteRequest::validate() const {
  require(!tasks.empty(), "tasks: at least one task");
  require(!lengths.empty() && !depths.empty(), "tasks: at least one length and one depth");
  for (int n : lengths)
    require(n >= 256 && n <= max_positions, "tasks: length " + std::to_string(n) + " is outside [256, " +
                                                std::to_string(max_positions) + "] (the model's positions)");
  for (double d : depths) require(d >= 0 && d <= 1, "tasks: depth " + std::to_string(d) + " is outside [0, 1]");
  require(per_cell >= 1, "tasks: per_cell must be >= 1");
  require(shots >= 0, "tasks: shots must be >= 0");
  for (int n : lengths)
    require(n + shots * kShotLength <= max_positions, "tasks: length " + std::to_string(n) + " with " +
                                                          std::to_string(shots) + " shots of " +
                                                          std::to_string(kShotLength) + " tokens exceeds the model's " +
                                                          std::to_string(max_positions) + " positions");
}

std::vector<TaskInstance> generate_tasks(const Tokenizer& tok, const TaskSuiteRequest& r) {
  r.validate();
  const Haystack hay = read_haystack(r.haystack_dir);
  std::vector<TaskInstance> out;
  for (TaskId id : r.tasks)
    for (int n : r.lengths) {
      const std::vector<double> depths = task_entry(id).has_depth ? r.depths : std::vector<double>{-1.0};
      for (double d : depths)
        for (int i = 0; i < r.per_cell; ++i) {
          TaskInstance in = make_instance(tok, id, n, d, i, hay, r.seed);
          if (r.shots > 0) add_examples(tok, id, r.shots, i, hay, r.seed, in);
          out.push_back(std::move(in));
        }
    }
  return out;
}

}  // namespace kvo::studies

// Long-context tasks in the style of RULER's synthetic categories, generated in code from a seed
// and the plain texts Debian ships (nothing downloaded): pass-key retrieval, needles in real text,
// multi-key and multi-value needles, variable tracking and common-words extraction. Each instance
// is sized in this model's tokens and carries its expected answer and scoring rule.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kvo/model/tokenizer.hpp"

namespace kvo::studies {

enum class TaskId : int { Passkey, Niah, MultiKey, MultiValue, VariableTracking, CommonWords, Count };

// How a generated answer is scored against the expected items (case-insensitive substring match).
enum class ScoreRule {
  All,     // 1 when every item appears in the answer, else 0 (single-needle tasks)
  Recall,  // the fraction of items that appear (RULER's string_match_all)
};

struct TaskEntry {
  TaskId id;
  std::string_view name;     // "passkey", "niah", ...
  std::string_view summary;  // one line (docs/tasks.md)
  ScoreRule rule;
  bool has_depth;  // the cell's depth places the needle (false: common words)
  int max_new_tokens;
};

std::span<const TaskEntry> task_table();
const TaskEntry& task_entry(TaskId id);
inline std::string task_name(TaskId id) { return std::string(task_entry(id).name); }
// kvo::Error "unknown task 'x' (known: ...)".
TaskId parse_task(std::string_view name);
std::vector<TaskId> parse_task_list(std::string_view names);  // "passkey,niah"; "all"
std::string_view to_string(ScoreRule r);
ScoreRule parse_score_rule(std::string_view name);

// One task instance in kvpress's dataset columns (context, question, answer_prefix, answer,
// max_new_tokens), plus what the generator knows: the cell and where the needles sit.
struct TaskInstance {
  std::string id;       // "passkey-1024-d25-0"; a JSON Lines row's "id", else its line number
  std::string task;     // a task's name, or what a JSON Lines row says ("custom" when nothing)
  int length = 0;       // the cell's length: the input holds at most this many tokens
  double depth = -1.0;  // the cell's needle depth in [0, 1]; -1: none
  std::string context, question, answer_prefix;
  std::vector<std::string> answers;  // the expected items
  ScoreRule rule = ScoreRule::All;
  int max_new_tokens = 16;
  // Few-shot: worked examples of the task (context, question, answer prefix and answer each) that
  // open the input before the context, encoded on their own ("" and 0: none).
  std::string examples;
  int shots = 0;
  // Token ranges [first, last) of the needles' values in the context's ids (generated instances).
  std::vector<std::pair<int, int>> needles;
};

// Score in [0, 1] of a generated answer under the instance's rule.
double score_answer(const TaskInstance& instance, std::string_view generated);
// The expected items as one answer would list them ("a, b, c").
std::string join_answers(const std::vector<std::string>& answers);

// How an instance becomes the model's input. Plain completion: the context, a blank line, the
// question and the answer prefix. Chat: the GGUF's ChatML template (SmolLM2's default system
// line, the context and question as the user's turn, the answer prefix opening the assistant's).
enum class PromptFormat { Plain, Chat };
std::string_view to_string(PromptFormat f);
PromptFormat parse_prompt_format(std::string_view name);  // "plain", "chat"

// The token ids the model reads: the context, then the question block (question and answer
// prefix), each encoded on its own as kvpress's pipeline does. Few-shot examples open the context
// (encoded on their own); with question_first the question follows them. The needles' token ranges
// sit at context offset `needle_shift`.
struct TaskTokens {
  std::vector<int> context, question;
  int needle_shift = 0;
  int size() const { return static_cast<int>(context.size() + question.size()); }
};
TaskTokens task_tokens(const model::Tokenizer& tokenizer, const TaskInstance& instance, bool question_first = false,
                       PromptFormat format = PromptFormat::Plain);

// The plain format's texts, in the order task_tokens encodes them, each on its own: the context's
// pieces (the few-shot examples, the question when it opens the context, then the context itself;
// empty pieces left out) and the question block. Another tokenizer (a transformers model's) that
// encodes each piece without special tokens reads the instance the way kvoracle's engine does.
struct TaskTexts {
  std::vector<std::string> context;
  std::string question;
  int needle_piece = 0;  // the index in `context` of the context itself (the needles' piece)
};
TaskTexts task_texts(const TaskInstance& instance, bool question_first = false);

// The grid the generator fills: every task x length x depth, `per_cell` instances each.
inline constexpr int kShotLength = 256;  // tokens of one few-shot example (its context and question block)

struct TaskSuiteRequest {
  std::vector<TaskId> tasks = {TaskId::Passkey, TaskId::Niah, TaskId::MultiKey};
  std::vector<int> lengths = {512, 1024, 2048};
  std::vector<double> depths = {0.0, 0.25, 0.5, 0.75, 1.0};
  int per_cell = 4;
  // Worked examples of the same task opening every instance (the paper's Table 4), each a generated
  // instance of kShotLength tokens with its answer written out; the cell's length is the rest.
  int shots = 0;
  std::uint64_t seed = 0;
  std::string haystack_dir = "/usr/share/common-licenses";  // the real texts of niah and its kin
  int max_positions = 8192;                                 // the model's context (lengths above are refused)
  // kvo::Error naming the option: no task, a length outside [256, max_positions], a depth outside
  // [0, 1], per_cell below 1, shots below 0 or a length plus its shots beyond max_positions.
  void validate() const;
};

// Generates the suite (cell order: task, length, depth, instance). Deterministic given the
// request and the haystack files. kvo::Error when the haystack directory has too little text, or
// a needle's tokens would merge with the text around it.
std::vector<TaskInstance> generate_tasks(const model::Tokenizer& tokenizer, const TaskSuiteRequest& request);

}  // namespace kvo::studies

// kvoracle options-markdown COMMAND...: a command's options as the Markdown table docs/cli.md
// shows, drawn from the same registration the command parses with (its flags come from the
// request schemas), so a test can hold the page to the code (tests/docs/check_cli_options.py).
// Hidden from help: it documents, it does not run anything.
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <set>
#include <sstream>

#include "commands.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/text_list.hpp"

namespace kvo::cli {
namespace {

// The groups every command that runs policies shares: one table at the top of docs/cli.md, and on
// each command one line naming the flags it takes of them.
const std::set<std::string> kShared = {"Policy parameters", "Budget", "Run", "Press parameters"};

std::string cell(std::string text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

// A default as the page shows it: the home directory as ~ (the model's default path).
std::string shown_default(std::string text) {
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0' && text.starts_with(home))
    text = "~" + text.substr(std::string(home).size());
  return text;
}

std::string spellings(const CLI::Option* o) {
  std::string s;
  for (const auto& n : o->get_lnames()) s += (s.empty() ? "" : ", ") + ("`--" + n + "`");
  for (const auto& n : o->get_snames()) s += (s.empty() ? "" : ", ") + ("`-" + n + "`");
  if (s.empty()) s = "`" + o->get_name() + "`";  // a positional argument
  return s;
}

void table(std::ostream& out, const std::vector<const CLI::Option*>& options) {
  out << "| option | value | default | what |\n|---|---|---|---|\n";
  for (const CLI::Option* o : options) {
    const std::string value = o->get_type_size() == 0 ? "" : o->get_type_name();
    out << "| " << spellings(o) << " | " << cell(value) << " | " << cell(shown_default(o->get_default_str())) << " | "
        << cell(o->get_description()) << (o->get_required() ? " (required)" : "") << " |\n";
  }
}

const CLI::App* find_command(const CLI::App& app, const std::vector<std::string>& words) {
  const CLI::App* at = &app;
  for (const auto& w : words) {
    const CLI::App* next = nullptr;
    for (const CLI::App* sub : at->get_subcommands({}))
      if (sub->get_name() == w) next = sub;
    require(next != nullptr, "options-markdown: no command '" + join_list(words) + "'");
    at = next;
  }
  return at;
}

}  // namespace

Runner add_options_markdown(CLI::App& app, const Global&) {
  auto* cmd = app.add_subcommand("options-markdown", "a command's options as docs/cli.md's Markdown table");
  cmd->group("");  // hidden from help and from the list of commands
  auto words = std::make_shared<std::vector<std::string>>();
  auto shared = std::make_shared<std::string>();
  cmd->add_option("command", *words, "the command's words (oracle static)");
  cmd->add_option("--shared", *shared, "the table of one shared group of this command instead");
  return [&app, words, shared] {
    const CLI::App* c = find_command(app, *words);
    std::vector<const CLI::Option*> own;
    std::vector<std::pair<std::string, std::vector<const CLI::Option*>>> groups;
    for (const CLI::Option* o : c->get_options()) {
      if (o->get_name() == "--help") continue;
      if (!kShared.contains(o->get_group())) {
        own.push_back(o);
        continue;
      }
      auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == o->get_group(); });
      if (it == groups.end()) it = groups.insert(groups.end(), {o->get_group(), {}});
      it->second.push_back(o);
    }
    if (!shared->empty()) {
      for (const auto& [g, options] : groups)
        if (g == *shared) table(std::cout, options);
      return 0;
    }
    table(std::cout, own);
    for (const auto& [g, options] : groups) {
      std::string flags;
      for (const CLI::Option* o : options)
        flags += (flags.empty() ? "" : " ") + ("`--" + o->get_lnames().front() + "`");
      std::cout << "\n" << g << ": " << flags << "\n";
    }
    return 0;
  };
}

}  // namespace kvo::cli

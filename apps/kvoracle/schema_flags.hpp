// A schema's fields (kvo/core/field_schema.hpp) as a command's flags: each field with a text form
// becomes an option with its help, group, aliases and default; what the user types is kept as text
// and applied through the schema after parsing, so errors name the field as Python's do.
#pragma once
#include <CLI/CLI.hpp>
#include <cctype>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "kvo/core/field_schema.hpp"

namespace kvo::cli {

// What help shows for a field's kind: INT, NUMBER, TEXT, LIST, POLICY, ...
inline std::string type_name(std::string_view kind) {
  if (kind.starts_with("list")) return "LIST";
  if (kind == "integer") return "INT";
  if (kind == "integer >= 0") return "UINT";
  if (kind == "true|false") return "BOOL";
  std::string out(kind);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

class SchemaFlags {
 public:
  // Registers every field of `schema` with a text form and `cli` set that `take` accepts (all when
  // empty); `defaults` gives the defaults help shows.
  template <class T>
  void add(CLI::App* cmd, const Schema<T>& schema, const T& defaults,
           const std::type_identity_t<std::function<bool(const Field<T>&)>>& take = {}) {
    for (const Field<T>& f : schema.fields()) {
      if (!f.has_text() || !f.info.cli || (take && !take(f))) continue;
      std::string flags = f.flag();
      if (!f.info.alias.empty()) flags += "," + f.info.alias;
      std::vector<std::string>& slot = texts_[f.name()];
      CLI::Option* opt = nullptr;
      if (!f.info.switch_text.empty()) {
        opt = cmd->add_flag_callback(
            flags, [&slot, value = f.info.switch_text] { slot.push_back(value); }, f.info.help);
      } else {
        opt = cmd->add_option(flags, slot, f.info.help);
        opt->type_name(type_name(f.kind));
        opt->default_str(f.get(defaults));
        opt->expected(1);              // one value per occurrence: a list is comma-separated or its flag repeated
        opt->allow_extra_args(false);  // a value after it is the next argument, not another item
        opt->multi_option_policy(f.list ? CLI::MultiOptionPolicy::TakeAll : CLI::MultiOptionPolicy::TakeLast);
      }
      if (!f.info.group.empty()) opt->group(f.info.group);
    }
  }

  // Sets every field typed on the command line (a repeated list flag: its items joined; otherwise
  // the last value). kvo::Error naming the field for text that does not parse.
  template <class T>
  void apply(const Schema<T>& schema, T& t) const {
    schema.refuse_exclusive([this](std::string_view name) { return given(name); });
    for (const Field<T>& f : schema.fields()) {
      const auto it = texts_.find(f.name());
      if (!f.has_text() || it == texts_.end() || it->second.empty()) continue;
      std::string text;
      for (const auto& v : it->second) text += (text.empty() ? "" : ",") + v;
      f.set(t, f.list ? text : it->second.back());
    }
  }

  bool given(std::string_view name) const {  // typed on the command line
    const auto it = texts_.find(name);
    return it != texts_.end() && !it->second.empty();
  }

 private:
  std::map<std::string, std::vector<std::string>, std::less<>> texts_;
};

// A request type's flags: R::schema()'s fields over R's defaults (which a command may change before
// registering, as help shows them).
template <class R>
struct RequestFlags {
  R defaults;
  SchemaFlags flags;

  void add(CLI::App* cmd, const std::function<bool(const Field<R>&)>& take = {}) {
    flags.add(cmd, R::schema(), defaults, take);
  }
  R request() const {  // the defaults with every typed field applied
    R r = defaults;
    flags.apply(R::schema(), r);
    return r;
  }
};

}  // namespace kvo::cli

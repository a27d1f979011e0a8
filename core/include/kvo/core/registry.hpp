// One table of named things (policies, presses, objectives, budget scopes, tasks), written once:
// each entry has an `id` from an enum whose values are the table's positions, a `name`, and its
// own fields named in its row (designated initializers). Registry<Entry, N> is checked complete at
// compile time (one entry per id, in id order), and gives every table's lookups: by id, by name
// (and by a second name where the table has one; parse() also reads "prefix:NAME"), lists of
// names ("a,b" or "all"), names for messages, and one message for a name that is not there.
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvo/core/error.hpp"
#include "kvo/core/text_list.hpp"

namespace kvo {

// How a list of names reads: whether "all" names every entry, and whether a name given twice is
// refused, kept once, or kept as given.
enum class RepeatedName { Keep, Once, Refuse };
struct NameListRules {
  bool all = false;
  RepeatedName repeated = RepeatedName::Keep;
};

// The pieces appended in order (GCC 12 warns falsely, -Wrestrict, on chains of operator+ here).
namespace detail {
template <class... Pieces>
std::string concat(const Pieces&... pieces) {
  std::string s;
  (s.append(std::string_view(pieces)), ...);
  return s;
}
}  // namespace detail

template <class Entry, std::size_t N>
struct Registry {
  using Id = decltype(Entry::id);

  std::array<Entry, N> entries;
  std::string_view kind;                     // in messages: "unknown <kind> 'x' (known: ...)"
  std::string_view list;                     // the list's name in messages ("policies")
  std::string_view Entry::*alias = nullptr;  // a second name an entry answers to, if any
  std::string_view prefix = {};              // parse() also reads "<prefix>NAME" ("policy:tova")

  // One entry per id, in id order, each with a name no other entry has: what the table's
  // static_assert checks.
  constexpr bool complete() const {
    for (std::size_t i = 0; i < N; ++i) {
      if (static_cast<std::size_t>(entries[i].id) != i || entries[i].name.empty()) return false;
      for (std::size_t j = i + 1; j < N; ++j)
        if (entries[i].name == entries[j].name) return false;
    }
    return true;
  }

  std::span<const Entry> all() const { return entries; }

  const Entry& operator[](Id id) const {
    const auto i = static_cast<std::size_t>(id);
    if (i >= N) throw Error(detail::concat("no ", kind, " with id ", std::to_string(i), " (a kvoracle bug)"));
    return entries[i];
  }

  const Entry* find(std::string_view name) const {
    for (const Entry& e : entries)
      if (e.name == name || (alias && e.*alias == name)) return &e;
    return nullptr;
  }

  // The names of the entries `keep` accepts, ", "-separated (or `separator`), for messages and help.
  std::string names(const std::function<bool(const Entry&)>& keep = {}, std::string_view separator = ", ") const {
    std::string s;
    for (const Entry& e : entries)
      if (!keep || keep(e)) s.append(s.empty() ? "" : separator).append(e.name);
    return s;
  }

  // kvo::Error "unknown <kind> 'x' (known: a, b, c)" (", all" when lists take "all").
  const Entry& parse(std::string_view name, bool all_known = false) const {
    if (!prefix.empty() && name.starts_with(prefix)) name.remove_prefix(prefix.size());
    if (const Entry* e = find(name)) return *e;
    throw Error(detail::concat("unknown ", kind, " '", name, "' (known: ", names(), all_known ? ", all)" : ")"));
  }

  // Comma-separated names; kvo::Error for an unknown one, an empty list, or (Refuse) a repeat.
  std::vector<Id> parse_list(std::string_view text, NameListRules rules = {}) const {
    std::vector<Id> out;
    if (rules.all && text == "all") {
      for (const Entry& e : entries) out.push_back(e.id);
      return out;
    }
    for (const std::string& name : split_list(text, list)) {
      const Id id = parse(name, rules.all).id;
      const bool seen = std::find(out.begin(), out.end(), id) != out.end();
      if (seen && rules.repeated == RepeatedName::Refuse)
        throw Error(detail::concat(kind, " '", name, "' listed twice"));
      if (!seen || rules.repeated == RepeatedName::Keep) out.push_back(id);
    }
    if (out.empty()) throw Error(detail::concat(list, ": give at least one ", kind, " (", names(), ")"));
    return out;
  }

  // The entries' names, comma-joined (a list's text form).
  std::string join(std::span<const Id> ids, std::string_view separator = ",") const {
    std::string s;
    for (Id id : ids) s.append(s.empty() ? "" : separator).append((*this)[id].name);
    return s;
  }
};

}  // namespace kvo

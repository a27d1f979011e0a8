// One declaration per field of a request or an option set: its name, CLI flag, help, group, how
// its text and its JSON read and write. A Schema<T> gives T's JSON form (both ways), sets a field
// from text (the CLI's value, a Python keyword) and lists the fields for help and docs; the CLI's
// flags and Python's keyword arguments are generated from it, so they cannot disagree.
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "kvo/core/json_fields.hpp"

namespace kvo {

// What a field is, said once. `flag` defaults to "--" + name with '_' as '-'.
struct FieldInfo {
  std::string name{};          // JSON key, Python keyword and the name errors use: "budget_overrides"
  std::string help{};          // one line
  std::string flag{};          // the CLI's long option; empty: derived from the name
  std::string alias{};         // other CLI spellings, comma-separated ("-b", "--h"), or empty
  std::string group{};         // the CLI help group, or empty (the command's own options)
  std::string switch_text{};   // non-empty: on the CLI a flag without a value that sets this text
  std::string use{};           // a schema's own category ("trace selection"), for commands that take a subset
  bool cli = true;             // false: JSON and Python only (a hook's stand-in, an input given otherwise)
  std::string renamed_from{};  // an older name, refused with a message naming this one
  std::string excludes{};      // a field that may not be typed with this one: this one replaces it
};

// How a value of type V reads and writes as text and JSON. Lists are comma-separated
// (split_list's rules); numbers are written as an ostream writes them, and read as a number or a
// percentage ("20%" is 0.2).
template <class V>
struct FieldCodec;

// One field of T: FieldInfo with its text and JSON forms. `set` empty: the field has no text form
// (a nested option set's JSON object, whose own fields are lifted); `write` empty: not in the
// JSON form (a lifted field, or one the JSON names otherwise).
template <class T>
struct Field {
  FieldInfo info;
  std::string kind;   // for help and docs: "integer", "number", "text", "true|false", "list of integers", ...
  bool list = false;  // comma-separated items; the CLI flag may repeat, Python takes a sequence
  std::function<void(T&, std::string_view)> set;        // from text; kvo::Error naming the field
  std::function<std::string(const T&)> get;             // as text ("" for an empty list or an unset value)
  std::function<nlohmann::json(const T&)> write;        // the JSON value
  std::function<void(T&, const nlohmann::json&)> read;  // throws JsonWrongType or kvo::Error

  const std::string& name() const { return info.name; }
  std::string flag() const;  // info.flag, or derived from the name
  bool has_text() const { return static_cast<bool>(set); }
  bool in_json() const { return static_cast<bool>(write); }
};

// Every field of T in the order help and docs show them. `what` names T in errors ("replay request").
template <class T>
class Schema {
 public:
  Schema(std::string what, std::vector<Field<T>> fields) : what_(std::move(what)), fields_(std::move(fields)) {}

  const std::string& what() const { return what_; }
  std::span<const Field<T>> fields() const { return fields_; }
  const Field<T>* find(std::string_view name) const;  // a field with a text form, by name; nullptr when unknown
  std::string names() const;                          // "a, b, c" of the text fields
  // kvo::Error "<what>: 'old' is now called 'new'" when `name` is a field's older name.
  void refuse_renamed(std::string_view name) const;

  // Sets one field from text; kvo::Error "<what>: unknown option 'x' (options: ...)" for a name
  // without a text form.
  void set(T& t, std::string_view name, std::string_view text) const;
  std::string get(const T& t, std::string_view name) const;

  // kvo::Error "<what>: give a or b, not both" when `given` names two fields one of which excludes
  // the other. The CLI's flags and Python's keywords call it with the names typed; a JSON form is a
  // whole record (to_json writes every field), where the excluding field simply wins.
  void refuse_exclusive(const std::function<bool(std::string_view)>& given) const;

  // Every JSON field by name; from_json starts from `start` (T's defaults), takes any subset,
  // treats null as "the default" and refuses unknown names (read_json_fields' errors).
  nlohmann::json to_json(const T& t) const;
  T from_json(const nlohmann::json& j, T start = T{}) const { return from_json(j, std::move(start), what_); }
  T from_json(const nlohmann::json& j, T start, const std::string& what) const;  // errors under `what`

 private:
  std::string what_;
  std::vector<Field<T>> fields_;
};

// A member of T whose type has a FieldCodec.
template <class T, class V>
Field<T> member(V T::*m, FieldInfo info);

// A member of a member (request.checks.samples), flat in T's JSON form and on the command line.
template <class T, class U, class V>
Field<T> member(U T::*outer, V U::*inner, FieldInfo info);

// A field with its own conversions: text both ways; JSON as the text unless `write`/`read` are given.
// A kind that starts with "list" ("list of tasks") is a list: comma-separated items.
template <class T>
Field<T> custom(FieldInfo info, std::string kind, std::function<void(T&, std::string_view)> set,
                std::function<std::string(const T&)> get, std::function<nlohmann::json(const T&)> write = {},
                std::function<void(T&, const nlohmann::json&)> read = {});

// A member that is itself an option set (RunOptions, PressOptions): one JSON field `name` holding
// its JSON object (errors under `what`, by default the set's own name), and each of its text fields
// lifted into T (the CLI's flags and Python's keywords are flat), with `group` as their help group
// when they have none; `lift` (all when empty) chooses which are lifted, for a request that reads
// only some. `schema` must outlive the fields (the sets' schemas are static).
template <class T, class U>
std::vector<Field<T>> nested(std::string name, U T::*m, const Schema<U>& schema, std::string group = {},
                             std::string what = {},
                             std::type_identity_t<std::function<bool(const Field<U>&)>> lift = {});

// The press parameters lifted next to the run options: press_seed for kvpress's seed (the CLI's
// --press-seed), apart from the policies' seed; the rest by kvpress's names.
template <class T, class U>
std::vector<Field<T>> nested_beside_run(std::string name, U T::*m, const Schema<U>& schema, std::string group = {},
                                        std::string what = {}) {
  std::vector<Field<T>> out = nested(std::move(name), m, schema, std::move(group), std::move(what), {});
  for (auto& f : out)
    if (f.has_text() && f.name() == "seed") f.info.name = "press_seed";
  return out;
}

// Fields of several parts concatenated (a request's own fields and its nested sets).
template <class T>
std::vector<Field<T>> fields(std::initializer_list<std::vector<Field<T>>> parts);

// The text of a switch ("true"/"false"; also "1"/"0"); kvo::Error naming `what` for anything else.
bool parse_switch(std::string_view text, std::string_view what);

// ---- implementation -------------------------------------------------------------------------

std::string kebab_flag(std::string_view name);  // "budget_overrides" -> "--budget-overrides"
std::string number_text(double v);              // as an ostream writes it: "0.5", "20", "1e-07"

template <class T>
std::string Field<T>::flag() const {
  return info.flag.empty() ? kebab_flag(info.name) : info.flag;
}

template <class T>
const Field<T>* Schema<T>::find(std::string_view name) const {
  for (const auto& f : fields_)
    if (f.has_text() && f.name() == name) return &f;
  return nullptr;
}

template <class T>
std::string Schema<T>::names() const {
  std::string s;
  for (const auto& f : fields_)
    if (f.has_text()) s.append(s.empty() ? "" : ", ").append(f.name());
  return s;
}

template <class T>
void Schema<T>::refuse_renamed(std::string_view name) const {
  for (const auto& f : fields_)
    if (!f.info.renamed_from.empty() && f.info.renamed_from == name) throw_renamed_option(what_, name, f.name());
}

template <class T>
void Schema<T>::set(T& t, std::string_view name, std::string_view text) const {
  const Field<T>* f = find(name);
  if (f == nullptr) {
    refuse_renamed(name);
    throw_unknown_option(what_, name, names());
  }
  f->set(t, text);
}

template <class T>
std::string Schema<T>::get(const T& t, std::string_view name) const {
  const Field<T>* f = find(name);
  if (f == nullptr) throw_unknown_option(what_, name, names());
  return f->get(t);
}

template <class T>
void Schema<T>::refuse_exclusive(const std::function<bool(std::string_view)>& given) const {
  for (const auto& f : fields_)
    if (!f.info.excludes.empty() && given(f.name()) && given(f.info.excludes))
      throw_exclusive_options(what_, f.name(), f.info.excludes);
}

template <class T>
nlohmann::json Schema<T>::to_json(const T& t) const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& f : fields_)
    if (f.in_json()) j[f.name()] = f.write(t);
  return j;
}

template <class T>
T Schema<T>::from_json(const nlohmann::json& j, T start, const std::string& what) const {
  read_json_fields(j, what, [&](const std::string& key, const nlohmann::json& value) {
    for (const auto& f : fields_)
      if (f.in_json() && f.name() == key) {
        if (!value.is_null()) f.read(start, value);
        return true;
      }
    refuse_renamed(key);
    return false;
  });
  return start;
}

template <class T, class V>
Field<T> member(V T::*m, FieldInfo info) {
  using C = FieldCodec<V>;
  const std::string name = info.name;
  Field<T> f{std::move(info), std::string(C::kind), C::list, {}, {}, {}, {}};
  f.set = [m, name](T& t, std::string_view text) { C::from_text(t.*m, text, name); };
  f.get = [m](const T& t) { return C::to_text(t.*m); };
  f.write = [m](const T& t) { return C::to_json(t.*m); };
  f.read = [m, name](T& t, const nlohmann::json& v) { C::from_json(t.*m, v, name); };
  return f;
}

template <class T, class U, class V>
Field<T> member(U T::*outer, V U::*inner, FieldInfo info) {
  Field<U> f = member(inner, std::move(info));
  return Field<T>{f.info,
                  f.kind,
                  f.list,
                  [outer, set = f.set](T& t, std::string_view text) { set(t.*outer, text); },
                  [outer, get = f.get](const T& t) { return get(t.*outer); },
                  [outer, write = f.write](const T& t) { return write(t.*outer); },
                  [outer, read = f.read](T& t, const nlohmann::json& v) { read(t.*outer, v); }};
}

template <class T>
Field<T> custom(FieldInfo info, std::string kind, std::function<void(T&, std::string_view)> set,
                std::function<std::string(const T&)> get, std::function<nlohmann::json(const T&)> write,
                std::function<void(T&, const nlohmann::json&)> read) {
  if (!write) write = [get](const T& t) { return nlohmann::json(get(t)); };
  if (!read)
    read = [set](T& t, const nlohmann::json& v) {
      if (!v.is_string()) throw JsonWrongType{};
      set(t, v.get<std::string>());
    };
  const bool list = kind.starts_with("list");  // "list of tasks": comma-separated, a sequence in Python
  return Field<T>{std::move(info), std::move(kind),  list,           std::move(set),
                  std::move(get),  std::move(write), std::move(read)};
}

template <class T, class U>
std::vector<Field<T>> nested(std::string name, U T::*m, const Schema<U>& schema, std::string group, std::string what,
                             std::type_identity_t<std::function<bool(const Field<U>&)>> lift) {
  std::vector<Field<T>> out;
  if (what.empty()) what = schema.what();
  Field<T> object{FieldInfo{.name = std::move(name), .cli = false}, "object", false, {}, {}, {}, {}};
  object.write = [m, &schema](const T& t) { return schema.to_json(t.*m); };
  object.read = [m, &schema, what](T& t, const nlohmann::json& v) { t.*m = schema.from_json(v, t.*m, what); };
  out.push_back(std::move(object));
  for (const Field<U>& u : schema.fields()) {
    if (!u.has_text() || (lift && !lift(u))) continue;
    Field<T> f{u.info, u.kind, u.list, {}, {}, {}, {}};
    if (f.info.group.empty()) f.info.group = group;
    f.set = [m, set = u.set](T& t, std::string_view text) { set(t.*m, text); };
    f.get = [m, get = u.get](const T& t) { return get(t.*m); };
    out.push_back(std::move(f));
  }
  return out;
}

template <class T>
std::vector<Field<T>> fields(std::initializer_list<std::vector<Field<T>>> parts) {
  std::vector<Field<T>> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// ---- codecs ---------------------------------------------------------------------------------

template <>
struct FieldCodec<int> {
  static constexpr std::string_view kind = "integer";
  static constexpr bool list = false;
  static void from_text(int& v, std::string_view text, const std::string& name);
  static std::string to_text(int v) { return std::to_string(v); }
  static nlohmann::json to_json(int v) { return v; }
  static void from_json(int& v, const nlohmann::json& j, const std::string& name);
};

template <>
struct FieldCodec<long long> {
  static constexpr std::string_view kind = "integer";
  static constexpr bool list = false;
  static void from_text(long long& v, std::string_view text, const std::string& name);
  static std::string to_text(long long v) { return std::to_string(v); }
  static nlohmann::json to_json(long long v) { return v; }
  static void from_json(long long& v, const nlohmann::json& j, const std::string& name);
};

template <>
struct FieldCodec<std::uint64_t> {
  static constexpr std::string_view kind = "integer >= 0";
  static constexpr bool list = false;
  static void from_text(std::uint64_t& v, std::string_view text, const std::string& name);
  static std::string to_text(std::uint64_t v) { return std::to_string(v); }
  static nlohmann::json to_json(std::uint64_t v) { return v; }
  static void from_json(std::uint64_t& v, const nlohmann::json& j, const std::string& name);
};

template <>
struct FieldCodec<double> {
  static constexpr std::string_view kind = "number";
  static constexpr bool list = false;
  static void from_text(double& v, std::string_view text, const std::string& name);
  static std::string to_text(double v) { return number_text(v); }
  static nlohmann::json to_json(double v) { return v; }
  static void from_json(double& v, const nlohmann::json& j, const std::string& name);
};

template <>
struct FieldCodec<bool> {
  static constexpr std::string_view kind = "true|false";
  static constexpr bool list = false;
  static void from_text(bool& v, std::string_view text, const std::string& name) { v = parse_switch(text, name); }
  static std::string to_text(bool v) { return v ? "true" : "false"; }
  static nlohmann::json to_json(bool v) { return v; }
  static void from_json(bool& v, const nlohmann::json& j, const std::string& name);
};

template <>
struct FieldCodec<std::string> {
  static constexpr std::string_view kind = "text";
  static constexpr bool list = false;
  static void from_text(std::string& v, std::string_view text, const std::string&) { v = std::string(text); }
  static std::string to_text(const std::string& v) { return v; }
  static nlohmann::json to_json(const std::string& v) { return v; }
  static void from_json(std::string& v, const nlohmann::json& j, const std::string& name);
};

template <>
struct FieldCodec<std::optional<int>> {
  static constexpr std::string_view kind = "integer";
  static constexpr bool list = false;
  static void from_text(std::optional<int>& v, std::string_view text, const std::string& name);
  static std::string to_text(const std::optional<int>& v) { return v ? std::to_string(*v) : ""; }
  static nlohmann::json to_json(const std::optional<int>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }
  static void from_json(std::optional<int>& v, const nlohmann::json& j, const std::string& name);
};

template <>
struct FieldCodec<std::vector<int>> {
  static constexpr std::string_view kind = "list of integers";
  static constexpr bool list = true;
  static void from_text(std::vector<int>& v, std::string_view text, const std::string& name);
  static std::string to_text(const std::vector<int>& v);
  static nlohmann::json to_json(const std::vector<int>& v) { return v; }
  static void from_json(std::vector<int>& v, const nlohmann::json& j, const std::string& name);
};

template <>
struct FieldCodec<std::vector<double>> {
  static constexpr std::string_view kind = "list of numbers";
  static constexpr bool list = true;
  static void from_text(std::vector<double>& v, std::string_view text, const std::string& name);
  static std::string to_text(const std::vector<double>& v);
  static nlohmann::json to_json(const std::vector<double>& v) { return v; }
  static void from_json(std::vector<double>& v, const nlohmann::json& j, const std::string& name);
};

template <>
struct FieldCodec<std::vector<std::string>> {
  static constexpr std::string_view kind = "list";
  static constexpr bool list = true;
  static void from_text(std::vector<std::string>& v, std::string_view text, const std::string& name);
  static std::string to_text(const std::vector<std::string>& v);
  static nlohmann::json to_json(const std::vector<std::string>& v) { return v; }
  static void from_json(std::vector<std::string>& v, const nlohmann::json& j, const std::string& name);
};

}  // namespace kvo

// Reading a request's JSON form field by field, with one rule for errors: the request and the
// field are named when a field is unknown or of the wrong type. JsonForm declares a request's
// fields once, for both directions.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace kvo {

// Calls read(key, value) for every field of the object `j`; `read` returns false for a key it does
// not know. kvo::Error "<what>: expected a JSON object", "<what>: unknown field 'k'" or
// "<what>: 'k' has the wrong type: <value>".
void read_json_fields(const nlohmann::json& j, const std::string& what,
                      const std::function<bool(const std::string& key, const nlohmann::json& value)>& read);

// The JSON form of a request type T: its fields by name, each written and read one way. write()
// gives every field; read() starts from T's defaults, takes any subset and refuses unknown names
// (read_json_fields' errors, under `what`).
template <class T>
class JsonForm {
 public:
  using Writer = std::function<nlohmann::json(const T&)>;
  using Reader = std::function<void(T&, const nlohmann::json&)>;

  explicit JsonForm(std::string what) : what_(std::move(what)) {}

  // A member that is its own JSON value (numbers, bools, strings and vectors of them).
  template <class V>
  JsonForm& field(std::string name, V T::*member) {
    return field(
        std::move(name), [member](const T& t) { return nlohmann::json(t.*member); },
        [member](T& t, const nlohmann::json& v) { t.*member = v.get<V>(); });
  }
  // A field with its own conversion (a policy by name, nested options).
  JsonForm& field(std::string name, Writer write, Reader read) {
    fields_.push_back({std::move(name), std::move(write), std::move(read)});
    return *this;
  }

  nlohmann::json write(const T& t) const {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& f : fields_) j[f.name] = f.write(t);
    return j;
  }
  T read(const nlohmann::json& j) const {
    T t{};
    read_json_fields(j, what_, [&](const std::string& key, const nlohmann::json& value) {
      for (const auto& f : fields_)
        if (f.name == key) {
          f.read(t, value);
          return true;
        }
      return false;
    });
    return t;
  }

 private:
  struct Field {
    std::string name;
    Writer write;
    Reader read;
  };
  std::string what_;
  std::vector<Field> fields_;
};

}  // namespace kvo

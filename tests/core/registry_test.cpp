#include "kvo/core/registry.hpp"

#include <gtest/gtest.h>

using namespace kvo;

namespace {

enum class Fruit { Apple, Pear, Plum };
struct FruitEntry {
  Fruit id;
  std::string_view name;
  std::string_view latin = {};
  bool stone = false;
};

constexpr std::array<FruitEntry, 3> kRows = {{
    {.id = Fruit::Apple, .name = "apple", .latin = "malus"},
    {.id = Fruit::Pear, .name = "pear", .latin = "pyrus"},
    {.id = Fruit::Plum, .name = "plum", .latin = "prunus", .stone = true},
}};
constexpr Registry<FruitEntry, 3> kFruit{kRows, "fruit", "fruits", &FruitEntry::latin, "fruit:"};
static_assert(kFruit.complete());

// A table out of order, one with a repeated name, one with an empty name: not complete.
static_assert(!Registry<FruitEntry, 2>{
    {{{.id = Fruit::Pear, .name = "pear"}, {.id = Fruit::Apple, .name = "apple"}}}, "fruit", "fruits"}
                   .complete());
static_assert(!Registry<FruitEntry, 2>{
    {{{.id = Fruit::Apple, .name = "a"}, {.id = Fruit::Pear, .name = "a"}}}, "fruit", "fruits"}
                   .complete());
static_assert(!Registry<FruitEntry, 1>{{{{.id = Fruit::Apple, .name = ""}}}, "fruit", "fruits"}.complete());

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Registry, FindsByNameAliasAndQualifiedName) {
  EXPECT_EQ(kFruit.find("pear")->id, Fruit::Pear);
  EXPECT_EQ(kFruit.find("prunus")->id, Fruit::Plum);
  EXPECT_EQ(kFruit.find("fruit:pear"), nullptr);  // find is exact; parse reads the prefix
  EXPECT_EQ(kFruit.parse("fruit:pear").id, Fruit::Pear);
  EXPECT_EQ(kFruit[Fruit::Plum].name, "plum");
}

TEST(Registry, UnknownNamesAreNamedWithTheKnownOnes) {
  EXPECT_EQ(error_of([] { kFruit.parse("fig"); }), "unknown fruit 'fig' (known: apple, pear, plum)");
  EXPECT_EQ(error_of([] { kFruit.parse_list("apple,fig", {.all = true}); }),
            "unknown fruit 'fig' (known: apple, pear, plum, all)");
  EXPECT_EQ(error_of([] { kFruit[static_cast<Fruit>(7)]; }), "no fruit with id 7 (a kvoracle bug)");
}

TEST(Registry, ListsFollowTheirRules) {
  using V = std::vector<Fruit>;
  EXPECT_EQ(kFruit.parse_list("plum, apple"), (V{Fruit::Plum, Fruit::Apple}));
  EXPECT_EQ(kFruit.parse_list("all", {.all = true}), (V{Fruit::Apple, Fruit::Pear, Fruit::Plum}));
  EXPECT_NE(error_of([] { kFruit.parse_list("all"); }), "");  // "all" only where the list takes it
  EXPECT_EQ(kFruit.parse_list("pear,pear"), (V{Fruit::Pear, Fruit::Pear}));
  EXPECT_EQ(kFruit.parse_list("pear,pear", {.repeated = RepeatedName::Once}), (V{Fruit::Pear}));
  EXPECT_EQ(error_of([] { kFruit.parse_list("pear,pear", {.repeated = RepeatedName::Refuse}); }),
            "fruit 'pear' listed twice");
  EXPECT_NE(error_of([] { kFruit.parse_list(""); }), "");
}

TEST(Registry, NamesAndJoins) {
  EXPECT_EQ(kFruit.names([](const FruitEntry& e) { return e.stone; }), "plum");
  EXPECT_EQ(kFruit.names({}, " | "), "apple | pear | plum");
  const std::vector<Fruit> ids = {Fruit::Plum, Fruit::Apple};
  EXPECT_EQ(kFruit.join(ids), "plum,apple");
}

// NameIndex: every name is found at its position, anything else is not.
#include "core/name_index.h"

#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace phalanx::core {
namespace {

TEST(NameIndexTest, FindsEveryNameAtItsPositionAndNothingElse) {
  std::vector<std::string> names;
  for (int i = 0; i < 10000; ++i) names.push_back(absl::StrCat("node-", i));
  names.push_back("");
  std::vector<absl::string_view> views(names.begin(), names.end());
  NameIndex index(views);
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(index.Find(names[i]), i) << names[i];
  for (const char* absent : {"node-10000", "node-", "node-01", "node-1 ", "gpu-node-1"}) {
    EXPECT_EQ(index.Find(absent), std::nullopt) << absent;
  }
}

// Long names alike in their first and last 8 bytes and length, so that probes run through slots
// whose keys match and only the middle tells the names apart.
TEST(NameIndexTest, LongNamesDifferingOnlyInTheMiddleAreTold) {
  auto name = [](int i) { return absl::StrCat("ip-10-0-", 100000 + i, ".ec2.internal"); };
  std::vector<std::string> names;
  for (int i = 0; i < 2000; i += 2) names.push_back(name(i));
  std::vector<absl::string_view> views(names.begin(), names.end());
  NameIndex index(views);
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(index.Find(names[i]), i) << names[i];
  for (int i = 1; i < 2000; i += 2) EXPECT_EQ(index.Find(name(i)), std::nullopt) << name(i);
}

// Random names of 0-40 bytes over a three-letter alphabet, so that many share their first and last
// bytes or differ in one byte, checked against a hash map (fixed seed).
TEST(NameIndexTest, AgreesWithAHashMapOnRandomNames) {
  std::mt19937 rng(20261123);
  auto random_name = [&rng] {
    std::string s(std::uniform_int_distribution<int>(0, 40)(rng), 'a');
    for (char& c : s) c = "ab-"[std::uniform_int_distribution<int>(0, 2)(rng)];
    return s;
  };
  absl::flat_hash_map<std::string, int> expected;
  std::vector<std::string> names;
  while (names.size() < 3000) {
    std::string s = random_name();
    if (expected.emplace(s, names.size()).second) names.push_back(s);
  }
  std::vector<absl::string_view> views(names.begin(), names.end());
  NameIndex index(views);
  for (int i = 0; i < 20000; ++i) {
    const std::string probe = random_name();
    auto it = expected.find(probe);
    EXPECT_EQ(index.Find(probe), it == expected.end() ? std::nullopt : std::optional(it->second))
        << probe;
  }
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(index.Find(names[i]), i) << names[i];
}

TEST(NameIndexTest, EmptyIndexFindsNothing) {
  EXPECT_EQ(NameIndex({}).Find("node-0"), std::nullopt);
  EXPECT_EQ(NameIndex({}).Find(""), std::nullopt);
}

}  // namespace
}  // namespace phalanx::core

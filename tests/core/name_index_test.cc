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
  std::vector<std::string> probes;
  std::vector<int> want;
  for (int i = 0; i < 20000; ++i) {
    probes.push_back(i % 3 == 0 ? names[i % names.size()] : random_name());
    auto it = expected.find(probes.back());
    want.push_back(it == expected.end() ? -1 : it->second);
    EXPECT_EQ(index.Position(probes.back()), want.back()) << probes.back();
  }
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(index.Find(names[i]), i) << names[i];
  // In blocks: the same answers, for lists of every length around the block size.
  for (size_t n :
       {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{33}, probes.size()}) {
    std::vector<int> got(n, -2);
    index.Positions(absl::MakeConstSpan(probes).first(n), absl::MakeSpan(got));
    EXPECT_EQ(got, std::vector<int>(want.begin(), want.begin() + n)) << n;
  }
}

TEST(NameIndexTest, EmptyIndexFindsNothing) {
  EXPECT_EQ(NameIndex({}).Find("node-0"), std::nullopt);
  EXPECT_EQ(NameIndex({}).Find(""), std::nullopt);
  const std::vector<std::string> probes = {"node-0", ""};
  std::vector<int> got(2, 0);
  NameIndex({}).Positions(probes, absl::MakeSpan(got));
  EXPECT_EQ(got, std::vector<int>({-1, -1}));
}

}  // namespace
}  // namespace phalanx::core

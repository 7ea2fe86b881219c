// NameIndex: every name is found at its position, anything else is not.
#include "core/name_index.h"

#include <string>
#include <vector>

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

TEST(NameIndexTest, EmptyIndexFindsNothing) {
  EXPECT_EQ(NameIndex({}).Find("node-0"), std::nullopt);
  EXPECT_EQ(NameIndex({}).Find(""), std::nullopt);
}

}  // namespace
}  // namespace phalanx::core

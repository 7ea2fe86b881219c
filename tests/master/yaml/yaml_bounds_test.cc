// Hostile YAML (yaml_bounds.h): alias cycles, alias bombs, deep nesting and NUL characters are
// InvalidArgument naming the node, in bounded time and memory; aliases within the bounds still
// work.
#include "master/yaml/yaml_bounds.h"

#include <ostream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/yaml/yaml.h"
#include "tests/master/testing/hostile_input.h"

namespace phalanx::master {
namespace {

using testing::AliasBomb;
using ::testing::HasSubstr;
using testing::Measure;
using testing::Repeat;

struct Case {
  const char* name;
  std::string yaml;
  const char* error;
};

const Case kCases[] = {
    {"SequenceCycle", "data: &a [*a]", "data[0]: an alias to a node that contains it"},
    {"MappingCycle", "a: &x {b: [1, *x]}", "a.b[1]: an alias to a node that contains it"},
    {"AliasBomb", AliasBomb(9), "aliases expand beyond 1000000 units"},
    {"WideAlias", "a: &s " + std::string(100000, 'x') + "\nb: [" + Repeat("*s, ", 20) + "*s]",
     "b[8]: aliases expand beyond"},
    {"DeepFlow", "data: " + Repeat("[", 100000) + Repeat("]", 100000),
     "nesting deeper than 100 levels"},
    {"DeepFlowMaps", Repeat("{a: ", 5000) + "1" + Repeat("}", 5000),
     "nesting deeper than 100 levels"},
    {"DeepBlock", Repeat("- ", 20000) + "x", "nesting deeper than 100 levels"},
    {"DeepThroughAliases",
     "a: &d " + Repeat("[", 60) + Repeat("]", 60) + "\nb: " + Repeat("[", 50) + "*d" +
         Repeat("]", 50),
     "aliases expand nesting deeper than 100 levels"},
    {"NulInScalar", "name: \"a\\0b\"", "name: contains a NUL character"},
};

// gtest names a case by its name instead of its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class YamlBoundsTest : public ::testing::TestWithParam<Case> {};

TEST_P(YamlBoundsTest, RefusedInBoundedTimeAndMemory) {
  absl::StatusOr<YAML::Node> node;
  const testing::Cost cost = Measure([&] { node = ParseYaml(GetParam().yaml); });
  EXPECT_EQ(node.status().code(), absl::StatusCode::kInvalidArgument) << node.status();
  EXPECT_THAT(node.status().message(), HasSubstr(GetParam().error));
  EXPECT_LT(cost.peak_growth_kib, testing::kMaxPeakGrowthKib);
  EXPECT_LT(cost.seconds, testing::kMaxSeconds);
}

INSTANTIATE_TEST_SUITE_P(Hostile, YamlBoundsTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(YamlBoundsTest, AliasesWithinTheBoundsAreRead) {
  absl::StatusOr<YAML::Node> node =
      ParseYaml("base: &b {lr: 0.1, layers: [1, 2]}\nx: *b\ny: [*b, *b]\ndeep: " + Repeat("[", 98) +
                Repeat("]", 98) + "\n" + AliasBomb(3));
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(YamlToJson((*node)["y"][1])["layers"][1], 2);
  EXPECT_EQ(YamlToJson((*node)["data"]["l3"])[9][9][9][9], "lol");
}

TEST(YamlBoundsTest, SyntaxErrorsAreLeftToTheLoader) {
  EXPECT_TRUE(CheckYamlBounds("a: [1, 2").ok());
  EXPECT_THAT(ParseYaml("a: [1, 2").status().message(), HasSubstr("invalid YAML at line"));
}

}  // namespace
}  // namespace phalanx::master

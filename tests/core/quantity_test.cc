// Kubernetes quantity parsing: every suffix, exponents, rounding and malformed input.
#include "core/quantity.h"

#include <gtest/gtest.h>

namespace phalanx::core {
namespace {

struct Case {
  const char* text;
  int64_t milli;
};

TEST(QuantityTest, ParsesEverySuffix) {
  const Case cases[] = {
      {"0", 0},
      {"1", 1000},
      {"500m", 500},
      {"1.5", 1500},
      {"0.1", 100},
      {"2k", 2'000'000},
      {"1M", 1'000'000'000},
      {"1G", 1'000'000'000'000},
      {"1T", 1'000'000'000'000'000},
      {"1P", 1'000'000'000'000'000'000},
      {"1Ki", 1024'000},
      {"1Mi", 1048576'000},
      {"1.5Gi", 1610612736'000},  // 1.5 * 2^30 = 1610612736
      {"1Ti", 1099511627776'000},
      {"1Pi", 1125899906842624'000},
      {"1e3", 1'000'000},  // 1000 units
      {"1E3", 1'000'000},
      {"5e-3", 5},  // 0.005 units = 5 milli
      {"+2", 2000},
      {"-1", -1000},
      {"1000000n", 1},  // 1e6 nano = 1 milli
      {"1u", 1},        // 1e-6 rounds up to 1 milli
      {"1n", 1},        // rounds up
  };
  for (const Case& c : cases) {
    absl::StatusOr<int64_t> v = ParseQuantityMilli(c.text);
    ASSERT_TRUE(v.ok()) << c.text << ": " << v.status();
    EXPECT_EQ(*v, c.milli) << c.text;
  }
}

TEST(QuantityTest, WholeUnitsRoundUp) {
  EXPECT_EQ(*ParseQuantity("1Ei"), int64_t{1} << 60);
  EXPECT_EQ(*ParseQuantity("1E"), 1'000'000'000'000'000'000);
  EXPECT_EQ(*ParseQuantity("100m"), 1);  // 0.1 rounds up to 1
  EXPECT_EQ(*ParseQuantity("2"), 2);
  EXPECT_EQ(*ParseQuantity("128974848"), 128974848);
  EXPECT_EQ(*ParseQuantity("129e6"), 129'000'000);
  EXPECT_EQ(*ParseQuantity("123Mi"), 123LL * 1048576);
}

TEST(QuantityTest, MalformedInputNamesTheValue) {
  for (const char* bad : {"", "abc", "1.2.3", "1Qi", "1ki", "m", "1e", "1e+", "--1", "1 Gi",
                          "1e1000", "99999999999999999999999999999999"}) {
    absl::StatusOr<int64_t> v = ParseQuantityMilli(bad);
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(v.status().message().find(std::string("\"") + bad + "\""), std::string::npos)
        << v.status();
  }
}

TEST(QuantityTest, OutOfRangeIsAnError) {
  EXPECT_FALSE(ParseQuantityMilli("10Ei").ok());  // 10 * 2^60 * 1000 > int64
  EXPECT_FALSE(ParseQuantity("10Ei").ok());       // 10 * 2^60 > int64 max (~9.2 * 2^60)
  EXPECT_TRUE(ParseQuantity("7Ei").ok());
  // int64 max exactly, and just above it (its round-up overflowed: found by quantity_fuzzer).
  EXPECT_EQ(ParseQuantityMilli("9223372036854775807000000n").value(), INT64_MAX);
  EXPECT_FALSE(ParseQuantityMilli("9223372036854775807854007n").ok());
  EXPECT_FALSE(ParseQuantity("9223372036854775807.5").ok());
}

}  // namespace
}  // namespace phalanx::core

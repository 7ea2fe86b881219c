// Signing and verifying the state phalanx-extender writes on pods (kube/placement_key.h), and
// DecodePod with a key: a placement or preemption mark it did not sign is as if absent.
#include "kube/placement_key.h"

#include <cstdio>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/decode.h"

namespace phalanx::kube {
namespace {

using ::testing::HasSubstr;

PlacementKey Key(char fill) { return *PlacementKey::FromSecret(std::string(32, fill), "test"); }

TEST(PlacementKeyTest, APlacementVerifiesOnlyForItsPodNodeAndKey) {
  const PlacementKey key = Key('k');
  const std::string sig = key.SignPlacement("uid-1", "node-1");
  EXPECT_EQ(sig.size(), 64u);  // Hex SHA-256.
  EXPECT_TRUE(key.VerifyPlacement("uid-1", "node-1", sig));
  EXPECT_FALSE(key.VerifyPlacement("uid-2", "node-1", sig));  // Copied to another pod.
  EXPECT_FALSE(key.VerifyPlacement("uid-1", "node-2", sig));  // Edited to another node.
  EXPECT_FALSE(Key('o').VerifyPlacement("uid-1", "node-1", sig));
  EXPECT_FALSE(key.VerifyPlacement("uid-1", "node-1", ""));
  EXPECT_FALSE(key.VerifyPlacement("uid-1", "node-1", sig.substr(1)));
  // "uid\nnode" is not a mark's message, nor the reverse.
  EXPECT_FALSE(key.VerifyMark("uid-1", "node-1", sig));
  EXPECT_FALSE(key.VerifyPlacement("uid-1", "ns/g", key.SignMark("uid-1", "ns/g")));
  EXPECT_TRUE(key.VerifyMark("uid-1", "ns/g", key.SignMark("uid-1", "ns/g")));
  EXPECT_FALSE(key.VerifyMark("uid-1", "ns/other", key.SignMark("uid-1", "ns/g")));
}

TEST(PlacementKeyTest, RandomKeysDiffer) {
  EXPECT_NE(PlacementKey::Random().SignPlacement("u", "n"),
            PlacementKey::Random().SignPlacement("u", "n"));
}

TEST(PlacementKeyTest, AKeyFileIsReadWithoutItsTrailingNewline) {
  const std::string path = ::testing::TempDir() + "/placement-key";
  const std::string secret(64, 'a');
  std::ofstream(path) << secret << "\n";
  absl::StatusOr<PlacementKey> key = PlacementKey::FromFile(path, "placement_key_file");
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_EQ(key->SignPlacement("u", "n"),
            PlacementKey::FromSecret(secret, "x")->SignPlacement("u", "n"));
}

TEST(PlacementKeyTest, ShortOrMissingKeysAreRefusedNamingTheField) {
  const std::string path = ::testing::TempDir() + "/short-key";
  std::ofstream(path) << std::string(31, 'a') << "\n";
  absl::StatusOr<PlacementKey> key = PlacementKey::FromFile(path, "placement_key_file");
  ASSERT_FALSE(key.ok());
  EXPECT_THAT(key.status().message(), HasSubstr("placement_key_file"));
  EXPECT_THAT(key.status().message(), HasSubstr("31 bytes; at least 32"));
  key = PlacementKey::FromFile(path + ".missing", "placement_key_file");
  ASSERT_FALSE(key.ok());
  EXPECT_THAT(key.status().message(), HasSubstr("placement_key_file: cannot read"));
}

// A pod of uid "u1" with `annotations` and `labels` (JSON members).
std::string Pod(const std::string& labels, const std::string& annotations) {
  return absl::StrCat(R"({"metadata":{"name":"x","namespace":"default","uid":"u1","labels":{)",
                      labels, R"(},"annotations":{)", annotations,
                      R"(}},"spec":{"containers":[]},"status":{}})");
}

core::PodInfo Decode(const std::string& json, const PlacementKey* key) {
  simdjson::dom::parser parser;
  simdjson::dom::element e;
  EXPECT_EQ(parser.parse(json).get(e), simdjson::SUCCESS) << json;
  absl::StatusOr<core::PodInfo> pod = DecodePod(e, key);
  EXPECT_TRUE(pod.ok()) << pod.status();
  return pod.value_or(core::PodInfo{});
}

std::string Placement(const std::string& node, const std::string& signature) {
  return absl::StrCat(R"("phalanx.io/placement":")", node,
                      R"(","phalanx.io/placement-signature":")", signature, R"(")");
}

TEST(PlacementKeyDecodeTest, OnlySignedPlacementsStand) {
  const PlacementKey key = Key('k');
  EXPECT_EQ(Decode(Pod("", Placement("n1", key.SignPlacement("u1", "n1"))), &key).placement, "n1");
  // Forged: none, garbage, another pod's, another node's, another key's.
  EXPECT_EQ(Decode(Pod("", R"("phalanx.io/placement":"n1")"), &key).placement, "");
  EXPECT_EQ(Decode(Pod("", Placement("n1", "00ff")), &key).placement, "");
  EXPECT_EQ(Decode(Pod("", Placement("n1", key.SignPlacement("u2", "n1"))), &key).placement, "");
  EXPECT_EQ(Decode(Pod("", Placement("n1", key.SignPlacement("u1", "n2"))), &key).placement, "");
  EXPECT_EQ(Decode(Pod("", Placement("n1", Key('o').SignPlacement("u1", "n1"))), &key).placement,
            "");
  // Without a key (readers that only observe), as written.
  EXPECT_EQ(Decode(Pod("", R"("phalanx.io/placement":"n1")"), nullptr).placement, "n1");
}

TEST(PlacementKeyDecodeTest, OnlySignedPreemptionMarksStand) {
  const PlacementKey key = Key('k');
  const std::string mark = R"("phalanx.io/preempt":"requested")";
  auto by = [](const std::string& signature) {
    return absl::StrCat(
        R"("phalanx.io/preempted-by":"default/hi","phalanx.io/preempt-signature":")", signature,
        R"(")");
  };
  core::PodInfo pod = Decode(Pod(mark, by(key.SignMark("u1", "default/hi"))), &key);
  EXPECT_TRUE(pod.preempt_requested);
  EXPECT_EQ(pod.preempted_by, "default/hi");
  for (const std::string& forged :
       {key.SignMark("u2", "default/hi"), key.SignMark("u1", "default/other"), std::string()}) {
    pod = Decode(Pod(mark, by(forged)), &key);
    EXPECT_FALSE(pod.preempt_requested) << forged;
    EXPECT_EQ(pod.preempted_by, "") << forged;
  }
  EXPECT_TRUE(Decode(Pod(mark, by("")), nullptr).preempt_requested);
}

}  // namespace
}  // namespace phalanx::kube

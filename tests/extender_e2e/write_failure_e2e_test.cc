// Writes the API server refuses: a ValidatingAdmissionPolicy of the real kube-apiserver refuses
// every update of this test's pods named "locked…", as RBAC refuses the extender a pod outside the
// pools' namespaces. The admission loop must go on with the other gangs of the round.
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "kube/client.h"
#include "tests/extender_e2e/harness.h"

namespace phalanx::e2e {
namespace {

constexpr kube::Resource kPolicies{"/apis/admissionregistration.k8s.io/v1",
                                   "validatingadmissionpolicies", false};
constexpr kube::Resource kBindings{"/apis/admissionregistration.k8s.io/v1",
                                   "validatingadmissionpolicybindings", false};

constexpr char kPolicy[] = R"json({"apiVersion": "admissionregistration.k8s.io/v1",
  "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "POLICY"},
  "spec": {"failurePolicy": "Fail",
    "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
      "operations": ["UPDATE"], "resources": ["pods"]}]},
    "validations": [{"expression": "!object.metadata.name.startsWith('locked')",
                     "message": "pods named locked* are locked by the test"}]}})json";
constexpr char kBinding[] = R"({"apiVersion": "admissionregistration.k8s.io/v1",
  "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "POLICY"},
  "spec": {"policyName": "POLICY", "validationActions": ["Deny"],
    "matchResources": {"namespaceSelector": {"matchLabels": {
      "kubernetes.io/metadata.name": "NAMESPACE"}}}}})";

class WriteFailureE2e : public ExtenderE2eTest {
 protected:
  void TearDown() override {
    client_->Delete(kBindings, "", PolicyName()).IgnoreError();
    client_->Delete(kPolicies, "", PolicyName()).IgnoreError();
    ExtenderE2eTest::TearDown();
  }

  std::string PolicyName() const { return ns_ + "-lock"; }

  // Locks the pods named "locked…" and waits until the API server refuses to update `probe`.
  void Lock(const std::string& probe) {
    const std::string policy = absl::StrReplaceAll(kPolicy, {{"POLICY", PolicyName()}});
    const std::string binding =
        absl::StrReplaceAll(kBinding, {{"POLICY", PolicyName()}, {"NAMESPACE", ns_}});
    absl::StatusOr<std::string> created = client_->Create(kPolicies, "", policy);
    ASSERT_TRUE(created.ok()) << created.status();
    created = client_->Create(kBindings, "", binding);
    ASSERT_TRUE(created.ok()) << created.status();
    const absl::Time deadline = absl::Now() + absl::Seconds(60);
    while (client_
               ->Patch(kube::kPods, ns_, probe, kube::PatchType::kMerge,
                       R"({"metadata":{"labels":{"e2e.phalanx.io/probe":"1"}}})")
               .ok()) {
      ASSERT_LT(absl::Now(), deadline) << "the policy never took effect";
      absl::SleepFor(absl::Milliseconds(200));
    }
  }
};

// The head's pending reason cannot be written; the gang behind it still runs.
TEST_F(WriteFailureE2e, AGangWhosePodsCannotBeWrittenDoesNotHoldUpTheQueue) {
  AddNodes("n", 1, 4);
  Submit({.name = "locked", .gpus = 8, .position = 1});  // Fits no node: it waits, with a reason.
  Submit({.name = "next", .gpus = 2, .position = 2});
  ASSERT_NO_FATAL_FAILURE(Lock("locked-r0-0"));
  StartExtender(8);
  ASSERT_TRUE(WaitUntil([&] { return Running("next"); })) << "a refused write held up the queue";
  EXPECT_TRUE(Gated("locked"));
  EXPECT_EQ(PendingReason("locked"), "");
}

}  // namespace
}  // namespace phalanx::e2e

// The phalanx CLI against a real master (service_fixture.h): login, experiments, jobs, tasks, and
// the master's refusals printed with their code.
#include "cli/cli.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tests/master/service_fixture.h"

namespace phalanx::master {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class CliTest : public ServiceTest {
 protected:
  void SetUp() override {
    ServiceTest::SetUp();
    char dir[] = "/tmp/phalanx-cli-XXXXXX";
    dir_ = mkdtemp(dir);
    setenv("PHALANX_TOKEN_FILE", (dir_ + "/token").c_str(), 1);
    setenv("PHALANX_MASTER", absl::StrCat("127.0.0.1:", server_->port()).c_str(), 1);
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  // Runs the CLI; returns its exit code, output in out_ and err_.
  int Run(std::vector<std::string> args) {
    std::ostringstream out, err;
    const int rc = cli::RunCli(args, out, err);
    out_ = out.str();
    err_ = err.str();
    return rc;
  }

  std::string File(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  std::string dir_, out_, err_;
};

TEST_F(CliTest, LoginThenManageExperimentsAndJobs) {
  EXPECT_EQ(Run({"experiment", "list"}), 1);
  EXPECT_THAT(err_, HasSubstr("UNAUTHENTICATED"));
  EXPECT_EQ(Run({"login", "admin", "--password", "wrong"}), 1);
  ASSERT_EQ(Run({"login", "admin", "--password=pw"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("Logged in as admin (admin)"));

  ASSERT_EQ(Run({"experiment", "create",
                 File("e.yaml", "name: mnist\nresources: {slots_per_trial: 8}\n")}),
            0)
      << err_;
  EXPECT_THAT(out_, HasSubstr("Created experiment 1 (mnist): 1 trial(s) of 8 slot(s) in pool gpu"));
  ASSERT_EQ(Run({"experiment", "list"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("mnist"));
  EXPECT_THAT(out_, HasSubstr("ACTIVE"));
  ASSERT_EQ(Run({"experiment", "describe", "1"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("(PENDING)"));
  ASSERT_EQ(Run({"job", "list"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("exp-1"));
  EXPECT_THAT(out_, HasSubstr("QUEUED"));
  ASSERT_EQ(Run({"job", "set-priority", "exp-1", "100"}), 0) << err_;
  ASSERT_EQ(Run({"job", "stats"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("gpu"));
  ASSERT_EQ(Run({"experiment", "kill", "1"}), 0) << err_;

  EXPECT_EQ(Run({"experiment", "create", File("bad.yaml", "resources: {slots_per_trial: 6}\n")}),
            1);
  EXPECT_THAT(err_, HasSubstr("INVALID_ARGUMENT: resources.slots_per_trial: 6 slots are not "
                              "divisible by max_slots_per_pod 4"));
  EXPECT_EQ(Run({"frobnicate"}), 2);
}

TEST_F(CliTest, Tasks) {
  ASSERT_EQ(Run({"login", "determined", "--password", "pw"}), 0) << err_;
  ASSERT_EQ(Run({"cmd", "start", "--", "sleep", "30"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("Started cmd cmd-1"));
  ASSERT_EQ(Run({"tensorboard", "start"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("(0 slot(s) in pool cpu)"));
  ASSERT_EQ(Run({"cmd", "list"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("cmd-1"));
  EXPECT_THAT(out_, Not(HasSubstr("tb-2")));
  ASSERT_EQ(Run({"cmd", "kill", "cmd-1"}), 0) << err_;
  EXPECT_EQ(Run({"cmd", "start"}), 1);  // A command needs an entrypoint.
  EXPECT_THAT(err_, HasSubstr("entrypoint: required"));
}

// The trial's side with the allocation's own token from its pod: watch, checkpoint, acknowledge.
TEST_F(CliTest, TrialCommandsUseTheAllocationToken) {
  const v1::Experiment exp = Create("resources: {slots_per_trial: 4}\n");
  const std::string a = Get(exp.id()).trials(0).allocation_id();
  Play(a, core::PodPhase::kRunning);
  std::string token;
  const nlohmann::json pod = pods_.pods().begin()->second;
  for (const nlohmann::json& c : pod["spec"]["containers"]) {
    for (const nlohmann::json& e : c.value("env", nlohmann::json::array())) {
      if (e["name"] == "PHALANX_ALLOCATION_TOKEN") token = e["value"];
    }
  }
  ASSERT_FALSE(token.empty());
  setenv("PHALANX_ALLOCATION_TOKEN", "not-the-token", 1);
  EXPECT_EQ(Run({"trial", "preemption", a}), 1);
  EXPECT_THAT(err_, HasSubstr("UNAUTHENTICATED"));
  setenv("PHALANX_ALLOCATION_TOKEN", token.c_str(), 1);
  EXPECT_EQ(Run({"trial", "preemption", a, "--wait", "1"}), 3) << err_;
  EXPECT_EQ(out_, "continue\n");
  EXPECT_EQ(Run({"trial", "preemption", a, "--wait", "99"}), 2);
  EXPECT_THAT(err_, HasSubstr("--wait: seconds from 1 to 50"));

  Play(a, core::PodPhase::kRunning, /*preempt=*/true);
  EXPECT_EQ(Run({"trial", "preemption", a}), 0) << err_;
  EXPECT_EQ(out_, "preempt\n");
  ASSERT_EQ(Run({"trial", "checkpoint", a, "ckpt-7", "--steps", "700"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("Checkpoint ckpt-7 of " + a + " recorded"));
  ASSERT_EQ(Run({"trial", "ack", a}), 0) << err_;
  EXPECT_EQ(pods_.deleted().size(), 1u);
  ReapDeleted();
  EXPECT_EQ(Get(exp.id()).trials(0).latest_checkpoint(), "ckpt-7");
  unsetenv("PHALANX_ALLOCATION_TOKEN");
  EXPECT_EQ(Run({"trial", "frob", a}), 2);
}

}  // namespace
}  // namespace phalanx::master

// The phalanx CLI against a real master (service_fixture.h): login, experiments, jobs, tasks, and
// the master's refusals printed with their code.
#include "cli/cli.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "kube/status.h"
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

// Options are checked against what the command takes; --help and -h print the usage.
TEST_F(CliTest, UnknownOptionsAreRefusedAndHelpPrintsUsage) {
  ASSERT_EQ(Run({"login", "admin", "--password", "pw"}), 0) << err_;
  EXPECT_EQ(Run({"experiment", "list", "--stat", "ACTIVE"}), 2);
  EXPECT_THAT(err_, HasSubstr("unknown option --stat"));
  EXPECT_EQ(Run({"experiment", "list", "--pool", "gpu"}), 2);  // Another command's option.
  EXPECT_THAT(err_, HasSubstr("--pool is not an option here (this command takes --limit, "
                              "--offset, --state)"));
  EXPECT_EQ(Run({"job", "list", "--paused"}), 2);
  EXPECT_THAT(err_, HasSubstr("--paused is not an option here"));
  EXPECT_EQ(Run({"cmd", "kill", "cmd-1", "--", "now"}), 2);
  EXPECT_THAT(err_, HasSubstr("no words after -- here (this command takes none)"));
  EXPECT_EQ(Run({"job", "list", "--paused=yes"}), 2);
  EXPECT_THAT(err_, HasSubstr("--paused takes no value"));

  EXPECT_EQ(Run({"--help"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("usage: phalanx [--master HOST:PORT]"));
  EXPECT_EQ(Run({"-h"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("phalanx COMMAND --help"));
  EXPECT_EQ(Run({"experiment", "--help"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("usage: phalanx experiment create FILE [--paused]"));
  EXPECT_EQ(Run({"job", "list", "-h"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("usage: phalanx job list [--pool P] [--limit N] [--offset N]"));
  for (const char* command : {"login", "user", "cmd", "trial"}) {
    EXPECT_EQ(Run({command, "--help"}), 0) << command << ": " << err_;
    EXPECT_THAT(out_, HasSubstr("usage: phalanx " + std::string(command))) << command;
  }
  EXPECT_TRUE(err_.empty()) << err_;
}

// Listings take --limit and --offset and say how many there are in all.
TEST_F(CliTest, ListsPageAndCount) {
  ASSERT_EQ(Run({"login", "admin", "--password", "pw"}), 0) << err_;
  for (int i = 0; i < 3; ++i) {
    Create("resources: {slots_per_trial: 4}\n");
    ASSERT_EQ(Run({"cmd", "start", "--", "sleep", "30"}), 0) << err_;
  }
  ASSERT_EQ(Run({"job", "list", "--limit", "2", "--offset", "1"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("2 of 6 job(s), from #2"));
  ASSERT_EQ(Run({"cmd", "list", "--limit=2"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("2 of 3 cmd(s)\n"));
  ASSERT_EQ(Run({"experiment", "list", "--offset", "2"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("1 of 3 experiment(s), from #3"));
  EXPECT_EQ(Run({"job", "list", "--limit", "-1"}), 2);
  EXPECT_THAT(err_, HasSubstr("--limit: expected a number >= 0, got \"-1\""));
}

// describe shows why a trial is in ERROR: here the API server refused its pods.
TEST_F(CliTest, DescribeShowsWhyATrialFailed) {
  ASSERT_EQ(Run({"login", "admin", "--password", "pw"}), 0) << err_;
  pods_.OnCreate([](const nlohmann::json&) {
    return kube::HttpError(404, "NotFound", "namespaces \"gpu-ns\" not found");
  });
  EXPECT_EQ(Run({"experiment", "create", File("e.yaml", "resources: {slots_per_trial: 4}\n")}), 1);
  ASSERT_EQ(Run({"experiment", "describe", "1"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("trial 1: creating pods of exp-1-trial-1-r1: "));
  EXPECT_THAT(out_, HasSubstr("namespaces \"gpu-ns\" not found"));
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

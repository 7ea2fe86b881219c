// The phalanx CLI against a real master (cli_fixture.h): login, experiments, jobs, tasks, and the
// master's refusals printed with their code. Passwords: cli_password_test.cc.
#include <sys/stat.h>

#include <cstdio>

#include "kube/status.h"
#include "tests/master/testing/cli_fixture.h"

namespace phalanx::master {
namespace {

using ::testing::ContainsRegex;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// A newer master's answers: enum values this CLI does not know.
constexpr int kNewValue = 17;

class NewerExperiments : public v1::ExperimentService::Service {
  grpc::Status GetExperiment(grpc::ServerContext*, const v1::GetExperimentRequest* req,
                             v1::GetExperimentResponse* resp) override {
    Fill(*resp->mutable_experiment());
    v1::Trial* trial = resp->add_trials();
    trial->set_id(1);
    trial->set_state(static_cast<v1::TrialState>(kNewValue));
    trial->set_allocation_id("exp-1-trial-1-r1");
    trial->set_allocation_state(static_cast<v1::AllocationState>(kNewValue));
    return grpc::Status::OK;
  }
  grpc::Status ListExperiments(grpc::ServerContext*, const v1::ListExperimentsRequest*,
                               v1::ListExperimentsResponse* resp) override {
    Fill(*resp->add_experiments());
    return grpc::Status::OK;
  }
  static void Fill(v1::Experiment& e) {
    e.set_id(1);
    e.set_name("mnist");
    e.set_state(static_cast<v1::ExperimentState>(kNewValue));
  }
};

class NewerJobs : public v1::JobService::Service {
  grpc::Status GetJobs(grpc::ServerContext*, const v1::GetJobsRequest*,
                       v1::GetJobsResponse* resp) override {
    v1::Job* job = resp->add_jobs();
    job->set_job_id("exp-1");
    job->set_type(static_cast<v1::TaskType>(kNewValue));
    job->set_state(static_cast<v1::JobState>(kNewValue));
    return grpc::Status::OK;
  }
};

class NewerTasks : public v1::TaskService::Service {
  grpc::Status ListTasks(grpc::ServerContext*, const v1::ListTasksRequest*,
                         v1::ListTasksResponse* resp) override {
    v1::Task* task = resp->add_tasks();
    task->set_id("cmd-1");
    task->set_state(static_cast<v1::TaskState>(kNewValue));
    task->set_allocation_id("cmd-1-r1");
    task->set_allocation_state(static_cast<v1::AllocationState>(kNewValue));
    return grpc::Status::OK;
  }
};

// Logs anyone in, noting the call's deadline and the password.
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
  EXPECT_THAT(out_, ContainsRegex("TRIAL +STATE +HPARAMS +RUNS +RESTARTS +CHECKPOINT +ALLOCATION"));
  EXPECT_THAT(out_, HasSubstr("(PENDING)"));
  ASSERT_EQ(Run({"job", "list"}), 0) << err_;
  EXPECT_THAT(
      out_,
      ContainsRegex("PRIORITY +SLOTS +USER +SUBMITTED \\(UTC\\) +ETA \\(UTC\\) +PENDING REASON"));
  EXPECT_THAT(out_,
              ContainsRegex("exp-1 +EXPERIMENT +mnist +QUEUED +[0-9]+ +0/8 +admin +"
                            "20[0-9][0-9]-[01][0-9]-[0-3][0-9] [0-2][0-9]:[0-5][0-9]:[0-5][0-9] "));
  ASSERT_EQ(Run({"job", "set-priority", "exp-1", "100"}), 0) << err_;
  EXPECT_EQ(out_, "Priority of exp-1 set to 100\n");
  ASSERT_EQ(Run({"job", "stats"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("gpu"));
  ASSERT_EQ(Run({"experiment", "kill", "1"}), 0) << err_;

  EXPECT_EQ(Run({"experiment", "create", File("bad.yaml", "resources: {slots_per_trial: 6}\n")}),
            1);
  EXPECT_THAT(err_, HasSubstr("INVALID_ARGUMENT: resources.slots_per_trial: 6 slots are not "
                              "divisible by max_slots_per_pod 4"));
  EXPECT_EQ(Run({"frobnicate"}), 2);
}

// Each change to a job is logged with the user who made it, once stored; a refused one is not.
TEST_F(CliTest, ChangesToJobsAreLoggedWithTheirUser) {
  std::vector<std::string> events;
  jobs_->SetEventLog([&](const std::string& line) {
    if (line.find(" by ") != std::string::npos) events.push_back(line);
  });
  ASSERT_EQ(Run({"login", "determined", "--password", "pw"}), 0) << err_;
  const std::string spec = File("e.yaml", "resources: {slots_per_trial: 4, priority: 40}\n");
  ASSERT_EQ(Run({"experiment", "create", spec}), 0) << err_;
  ASSERT_EQ(Run({"experiment", "create", spec}), 0) << err_;
  ASSERT_EQ(Run({"job", "move", "exp-2", "--ahead-of", "exp-1"}), 0) << err_;
  ASSERT_EQ(Run({"job", "set-priority", "exp-1", "60"}), 0) << err_;
  ASSERT_EQ(Run({"job", "set-pool", "exp-1", "cpu"}), 0) << err_;
  ASSERT_EQ(Run({"experiment", "pause", "2"}), 0) << err_;
  ASSERT_EQ(Run({"experiment", "activate", "2"}), 0) << err_;
  ASSERT_EQ(Run({"experiment", "kill", "1"}), 0) << err_;
  EXPECT_EQ(Run({"experiment", "kill", "1"}), 1);
  ASSERT_EQ(Run({"cmd", "start", "--", "sleep", "30"}), 0) << err_;
  ASSERT_EQ(Run({"cmd", "kill", "cmd-1"}), 0) << err_;
  EXPECT_THAT(
      events,
      ElementsAre(
          HasSubstr("exp-1 submitted by determined"), HasSubstr("exp-2 submitted by determined"),
          "exp-2 moved ahead of exp-1 by determined", "exp-1 priority 40 -> 60 by determined",
          "exp-1 resource pool gpu -> cpu by determined", "exp-2 paused by determined",
          "exp-2 activated by determined", "exp-1 killed by determined",
          HasSubstr("cmd-1 submitted by determined"), "cmd-1 killed by determined"));
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
  EXPECT_EQ(Run({"notebook", "start", "jupyter", "lab"}), 2);  // Not dropped: refused.
  EXPECT_THAT(err_,
              HasSubstr("put the entrypoint after --: phalanx notebook start -- jupyter lab"));
  ASSERT_EQ(Run({"notebook", "list"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("0 of 0 notebook(s)"));
}

// --master and $PHALANX_MASTER take http:// and https:// URLs too; https:// and --ca mean TLS.
TEST_F(CliTest, MasterMayBeAUrl) {
  const std::string address = absl::StrCat("127.0.0.1:", server_->port());
  ASSERT_EQ(Run({"--master", "http://" + address + "/", "login", "admin", "--password", "pw"}), 0)
      << err_;
  setenv("PHALANX_MASTER", ("HTTP://" + address).c_str(), 1);
  EXPECT_EQ(Run({"job", "list"}), 0) << err_;
  // The test master speaks no TLS, so a TLS handshake with it fails.
  EXPECT_EQ(Run({"--master", "https://" + address, "job", "list"}), 1);
  EXPECT_THAT(err_, HasSubstr("UNAVAILABLE"));
  EXPECT_THAT(err_, Not(HasSubstr("DNS resolution failed")));
  EXPECT_EQ(Run({"job", "list", "--ca", dir_ + "/ca.pem"}), 2);
  EXPECT_THAT(err_, HasSubstr("PHALANX_MASTER: http:// is without TLS, but --tls or --ca asks "
                              "for it; use https://"));
  EXPECT_EQ(Run({"--master", address, "job", "list", "--ca", dir_ + "/ca.pem"}), 2);
  EXPECT_THAT(err_, HasSubstr("cannot read --ca " + dir_ + "/ca.pem"));

  EXPECT_EQ(Run({"--master", "grpc://" + address, "job", "list"}), 2);
  EXPECT_THAT(err_, HasSubstr("--master: expected HOST:PORT, http://HOST:PORT or "
                              "https://HOST:PORT, got \"grpc://" +
                              address + "\""));
  setenv("PHALANX_MASTER", ("https://" + address + "/api").c_str(), 1);
  EXPECT_EQ(Run({"job", "list"}), 2);
  EXPECT_THAT(err_, HasSubstr("PHALANX_MASTER: expected HOST:PORT"));
}

// A master serving TLS (a self-signed certificate for localhost): reached with --ca, or as task
// pods reach it, with the PEM in $PHALANX_MASTER_CA; refused by a client that trusts neither.
TEST_F(CliTest, ATlsMasterIsReachedWithWhatTheClientTrusts) {
  const std::string cert = dir_ + "/tls.crt", key = dir_ + "/tls.key";
  ASSERT_EQ(std::system(("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
                         "-addext subjectAltName=DNS:localhost -keyout " +
                         key + " -out " + cert + " 2>/dev/null")
                            .c_str()),
            0);
  absl::StatusOr<std::unique_ptr<MasterServer>> tls =
      MasterServer::Start("127.0.0.1:0", TlsConfig{.cert = cert, .key = key}, *store_, *jobs_);
  ASSERT_TRUE(tls.ok()) << tls.status();
  const std::string url = absl::StrCat("https://localhost:", (*tls)->port());
  ASSERT_EQ(Run({"--master", url, "--ca", cert, "login", "admin", "--password", "pw"}), 0) << err_;
  setenv("PHALANX_MASTER", url.c_str(), 1);
  EXPECT_EQ(Run({"job", "list"}), 1);
  EXPECT_THAT(err_, HasSubstr("UNAVAILABLE"));
  std::ifstream in(cert);
  const std::string pem((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  setenv("PHALANX_MASTER_CA", pem.c_str(), 1);
  EXPECT_EQ(Run({"job", "list"}), 0) << err_;
  unsetenv("PHALANX_MASTER_CA");
  (*tls)->Shutdown();
}

// The token is saved readable by its owner only; a failed save is an error naming the file.
TEST_F(CliTest, LoginSavesTheTokenPrivately) {
  const std::string token = File("token", "old");
  ASSERT_EQ(chmod(token.c_str(), 0644), 0);
  ASSERT_EQ(Run({"login", "admin", "--password", "pw"}), 0) << err_;
  struct stat st;
  ASSERT_EQ(stat(token.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(std::remove(token.c_str()), 0);
  ASSERT_EQ(Run({"login", "admin", "--password", "pw"}), 0) << err_;
  ASSERT_EQ(stat(token.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  const std::string missing = dir_ + "/no-such-dir/token";
  setenv("PHALANX_TOKEN_FILE", missing.c_str(), 1);
  EXPECT_EQ(Run({"login", "admin", "--password", "pw"}), 1);
  EXPECT_THAT(err_, HasSubstr("cannot write the token to " + missing + ": "));
  EXPECT_THAT(out_, Not(HasSubstr("Logged in")));
}

// State values take any case; an unknown pool is an error naming it, not an empty queue.
TEST_F(CliTest, StatesInAnyCaseAndUnknownPools) {
  ASSERT_EQ(Run({"login", "admin", "--password", "pw"}), 0) << err_;
  Create("name: mnist\nresources: {slots_per_trial: 4}\n");
  ASSERT_EQ(Run({"experiment", "list", "--state", "active"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("mnist"));
  ASSERT_EQ(Run({"experiment", "list", "--state", "Paused"}), 0) << err_;
  EXPECT_THAT(out_, Not(HasSubstr("mnist")));
  EXPECT_EQ(Run({"job", "list", "--pool", "gpus"}), 1);
  EXPECT_THAT(err_, HasSubstr("INVALID_ARGUMENT: resource_pool: no resource pool named \"gpus\""));
}

// Running trials keep their pods' priority until their next run, and set-priority says so.
TEST_F(CliTest, SetPrioritySaysRunningTrialsKeepTheirs) {
  ASSERT_EQ(Run({"login", "admin", "--password", "pw"}), 0) << err_;
  const v1::Experiment exp = Create("resources: {slots_per_trial: 4}\n");
  Play(Get(exp.id()).trials(0).allocation_id(), core::PodPhase::kRunning);
  const std::string kept =
      "; its 1 running trial(s) keep the priority they started with until they next start\n";
  ASSERT_EQ(Run({"experiment", "set-priority", std::to_string(exp.id()), "70"}), 0) << err_;
  EXPECT_EQ(out_, "Priority of exp-1 set to 70" + kept);
  ASSERT_EQ(Run({"job", "set-priority", "exp-1", "80"}), 0) << err_;
  EXPECT_EQ(out_, "Priority of exp-1 set to 80" + kept);
  ASSERT_EQ(Run({"job", "list"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("SCHEDULED  80 (runs at 50)"));
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
  EXPECT_THAT(out_,
              HasSubstr("usage: phalanx [--master [http[s]://]HOST:PORT] [--tls] [--ca FILE]"));
  EXPECT_EQ(Run({"-h"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("phalanx COMMAND --help"));
  EXPECT_EQ(Run({"experiment", "--help"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("usage: phalanx experiment create FILE [--paused]"));
  EXPECT_EQ(Run({"job", "list", "-h"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("usage: phalanx job list [--pool P] [--limit N] [--offset N]"));
  for (const char* command : {"login", "logout", "whoami", "user", "cmd", "trial"}) {
    EXPECT_EQ(Run({command, "--help"}), 0) << command << ": " << err_;
    EXPECT_THAT(out_, HasSubstr("usage: phalanx " + std::string(command))) << command;
    EXPECT_TRUE(err_.empty()) << command << ": " << err_;  // Help goes to stdout only.
  }
  EXPECT_THAT(out_, HasSubstr("preemption prints preempt (exit 0) or continue (exit 3)"));
}

// --help and usage errors connect to nothing: a bad --master or --ca is reported only by a command
// that calls the master.
TEST_F(CliTest, HelpAndUsageErrorsNeedNoMaster) {
  EXPECT_EQ(Run({"--ca", dir_ + "/no-ca.pem", "job", "list", "-h"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("usage: phalanx job list"));
  setenv("PHALANX_MASTER", "grpc://nowhere", 1);
  EXPECT_EQ(Run({"experiment", "--help"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("usage: phalanx experiment create FILE"));
  EXPECT_EQ(Run({"experiment", "kill"}), 2);
  EXPECT_THAT(err_, HasSubstr("usage: phalanx experiment"));
  EXPECT_THAT(err_, Not(HasSubstr("PHALANX_MASTER")));
  EXPECT_EQ(Run({"frobnicate"}), 2);
  EXPECT_THAT(err_, HasSubstr("unknown command \"frobnicate\""));
  EXPECT_EQ(Run({"experiment", "list"}), 2);
  EXPECT_THAT(err_, HasSubstr("PHALANX_MASTER: expected HOST:PORT"));
}

// Every command takes exactly its arguments: one more is an error naming it, and nothing is done.
TEST_F(CliTest, ExtraArgumentsAreRefused) {
  ASSERT_EQ(Run({"login", "admin", "--password", "pw"}), 0) << err_;
  const v1::Experiment exp = Create("resources: {slots_per_trial: 4}\n");
  EXPECT_EQ(Run({"experiment", "kill", std::to_string(exp.id()), "2"}), 2);
  EXPECT_THAT(err_, HasSubstr("extra argument \"2\"\nusage: phalanx experiment"));
  EXPECT_EQ(Get(exp.id()).experiment().state(), v1::EXPERIMENT_STATE_ACTIVE);
  const std::string file = File("e.yaml", "resources: {slots_per_trial: 4}\n");
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"login", "admin", "x", "--password", "pw"},
           {"user", "create", "bob", "x", "--password", "pw"},
           {"user", "set-password", "bob", "x", "--password", "pw"},
           {"logout", "x"},
           {"whoami", "x"},
           {"experiment", "create", file, "x"},
           {"experiment", "list", "x"},
           {"experiment", "describe", "1", "x"},
           {"experiment", "set-priority", "1", "5", "x"},
           {"job", "list", "x"},
           {"job", "stats", "x"},
           {"job", "move", "exp-1", "x", "--ahead-of", "exp-2"},
           {"job", "set-priority", "exp-1", "5", "x"},
           {"job", "set-pool", "exp-1", "cpu", "x"},
           {"cmd", "list", "x"},
           {"cmd", "kill", "cmd-1", "x"},
           {"cmd", "set-priority", "cmd-1", "5", "x"},
           {"trial", "ack", "a", "x"},
           {"trial", "checkpoint", "a", "uuid", "x"},
       }) {
    EXPECT_EQ(Run(args), 2) << args[0] << " " << args[1];
    EXPECT_THAT(err_, HasSubstr("extra argument \"x\"")) << args[0] << " " << args[1];
  }
  EXPECT_EQ(Get(exp.id()).experiment().priority(), exp.priority());
  ASSERT_EQ(Run({"experiment", "list"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("1 of 1 experiment(s)"));
}

// A number that is not one is an error naming the argument.
TEST_F(CliTest, ArgumentsThatAreNotNumbersAreNamed) {
  EXPECT_EQ(Run({"experiment", "describe", "abc"}), 2);
  EXPECT_THAT(err_, HasSubstr("experiment id \"abc\": expected a number"));
  EXPECT_EQ(Run({"experiment", "set-priority", "1", "high"}), 2);
  EXPECT_THAT(err_, HasSubstr("priority \"high\": expected a number"));
  EXPECT_EQ(Run({"job", "set-priority", "exp-1", "high"}), 2);
  EXPECT_THAT(err_, HasSubstr("priority \"high\": expected a number"));
  EXPECT_EQ(Run({"cmd", "set-priority", "cmd-1", "1.5"}), 2);
  EXPECT_THAT(err_, HasSubstr("priority \"1.5\": expected a number"));
}

// whoami names the logged-in user; set-password sets the own password by default (the token kept)
// and admins' for anyone; logout revokes the token and removes its file, also when the master no
// longer knows it.
TEST_F(CliTest, WhoAmISetPasswordAndLogout) {
  unsetenv("PHALANX_PASSWORD");
  EXPECT_EQ(Run({"whoami"}), 1);
  EXPECT_THAT(err_, HasSubstr("UNAUTHENTICATED"));
  EXPECT_EQ(Run({"logout"}), 0) << err_;
  EXPECT_EQ(out_, "Not logged in\n");
  ASSERT_EQ(Run({"login", "determined", "--password", "pw"}), 0) << err_;
  ASSERT_EQ(Run({"whoami"}), 0) << err_;
  EXPECT_EQ(out_, "Logged in as determined\n");

  EXPECT_EQ(Run({"user", "set-password"}), 2);
  EXPECT_THAT(err_, HasSubstr("user set-password: empty password"));
  EXPECT_EQ(Run({"user", "set-password", "--admin", "--password", "x"}), 2);
  EXPECT_THAT(err_, HasSubstr("--admin is not an option here (this command takes --password)"));
  EXPECT_EQ(Run({"whoami", "--password", "x"}), 2);
  EXPECT_THAT(err_, HasSubstr("--password is not an option here (this command takes none)"));
  ASSERT_EQ(Run({"user", "set-password", "--password", "new-pw"}), 0) << err_;
  EXPECT_EQ(out_, "Password of determined set (other logins of determined revoked)\n");
  EXPECT_TRUE(Login("determined", "pw").empty());
  ASSERT_EQ(Run({"whoami"}), 0) << err_;  // The caller's own token stays valid.
  EXPECT_EQ(Run({"user", "set-password", "admin", "--password", "x"}), 1);
  EXPECT_THAT(err_, HasSubstr("PERMISSION_DENIED: only admins set another user's password"));
  std::string determined = Text("token");
  ASSERT_FALSE(determined.empty());

  ASSERT_EQ(Run({"logout"}), 0) << err_;
  EXPECT_EQ(out_, "Logged out\n");
  EXPECT_FALSE(std::ifstream(dir_ + "/token").good());
  EXPECT_EQ(Run({"whoami"}), 1);
  EXPECT_THAT(err_, HasSubstr("UNAUTHENTICATED"));
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Bearer " + determined);
  v1::CurrentUserResponse me;
  EXPECT_EQ(auth_->CurrentUser(&ctx, {}, &me).error_code(), grpc::StatusCode::UNAUTHENTICATED);

  ASSERT_EQ(Run({"login", "determined", "--password", "new-pw"}), 0) << err_;
  determined = Text("token");
  ASSERT_EQ(Run({"login", "admin", "--password", "pw"}), 0) << err_;
  ASSERT_EQ(Run({"whoami"}), 0) << err_;
  EXPECT_EQ(out_, "Logged in as admin (admin)\n");
  setenv("PHALANX_PASSWORD", "reset", 1);
  ASSERT_EQ(Run({"user", "set-password", "determined"}), 0) << err_;
  unsetenv("PHALANX_PASSWORD");
  EXPECT_FALSE(Login("determined", "reset").empty());
  EXPECT_EQ(Run({"user", "set-password", "nobody", "--password", "x"}), 1);
  EXPECT_THAT(err_, HasSubstr("NOT_FOUND: no user \"nobody\""));
  File("token", determined);  // Revoked by the reset.
  ASSERT_EQ(Run({"logout"}), 0) << err_;
  EXPECT_EQ(out_, "Logged out\n");
  EXPECT_FALSE(std::ifstream(dir_ + "/token").good());
}

// login's call has a deadline, as every other call has.
TEST_F(CliTest, LoginHasADeadline) {
  RecordingAuth auth;
  std::string address;
  const std::unique_ptr<grpc::Server> fake = FakeMaster({&auth}, address);
  const auto before = std::chrono::system_clock::now();
  ASSERT_EQ(Run({"--master", address, "login", "admin", "--password", "pw"}), 0) << err_;
  EXPECT_GT(auth.deadline, before + std::chrono::seconds(50));
  EXPECT_LT(auth.deadline, before + std::chrono::seconds(70));
}

// A newer master's enum values show as numbers.
TEST_F(CliTest, UnknownEnumValuesShowAsNumbers) {
  NewerExperiments experiments;
  NewerJobs jobs;
  NewerTasks tasks;
  std::string address;
  const std::unique_ptr<grpc::Server> fake = FakeMaster({&experiments, &jobs, &tasks}, address);
  setenv("PHALANX_MASTER", address.c_str(), 1);
  ASSERT_EQ(Run({"experiment", "describe", "1"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("state STATE_17,"));
  EXPECT_THAT(out_, ContainsRegex("1 +STATE_17 .*exp-1-trial-1-r1 \\(STATE_17\\)"));
  ASSERT_EQ(Run({"experiment", "list"}), 0) << err_;
  EXPECT_THAT(out_, ContainsRegex("mnist +STATE_17 "));
  ASSERT_EQ(Run({"job", "list"}), 0) << err_;
  EXPECT_THAT(out_, ContainsRegex("exp-1 +TYPE_17 +STATE_17 "));
  ASSERT_EQ(Run({"cmd", "list"}), 0) << err_;
  EXPECT_THAT(out_, ContainsRegex("cmd-1 +STATE_17 +STATE_17 "));
}

// job list numbers each pool's queue from 1; a move names one anchor, not two.
TEST_F(CliTest, JobListCountsFromOneAndMoveTakesOneAnchor) {
  ASSERT_EQ(Run({"login", "admin", "--password", "pw"}), 0) << err_;
  Create("resources: {slots_per_trial: 4}\n");
  Create("resources: {slots_per_trial: 4}\n");
  ASSERT_EQ(Run({"job", "list"}), 0) << err_;
  EXPECT_THAT(out_, ContainsRegex("gpu +1 +exp-1 "));
  EXPECT_THAT(out_, ContainsRegex("gpu +2 +exp-2 "));
  EXPECT_EQ(Run({"job", "move", "exp-2", "--ahead-of", "exp-1", "--behind-of", "exp-1"}), 2);
  EXPECT_THAT(err_, HasSubstr("job move: give --ahead-of or --behind-of, not both"));
  ASSERT_EQ(Run({"job", "list"}), 0) << err_;
  EXPECT_THAT(out_, ContainsRegex("gpu +1 +exp-1 "));
  ASSERT_EQ(Run({"job", "move", "exp-2", "--ahead-of", "exp-1"}), 0) << err_;
  ASSERT_EQ(Run({"job", "list"}), 0) << err_;
  EXPECT_THAT(out_, ContainsRegex("gpu +1 +exp-2 "));
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

// A trial's metrics as a table, one column per name, every page read.
TEST_F(CliTest, TrialMetricsPrintEveryReport) {
  ASSERT_EQ(Run({"login", "admin", "--password", "pw"}), 0) << err_;
  const v1::Experiment exp =
      Create("searcher: {name: single, metric: loss}\nresources: {slots_per_trial: 4}\n");
  const v1::Trial trial = Get(exp.id()).trials(0);
  std::vector<MetricReport> reports;
  for (int64_t steps = 1; steps <= 1001; ++steps) {
    reports.push_back({.steps = steps, .metrics = {{"loss", 1.0 / steps}}});
  }
  reports.back().metrics.emplace_back("acc", 0.75);
  const std::vector<MetricReport> last = {reports.back()};
  reports.pop_back();
  for (const auto& part : {reports, last}) {
    ASSERT_TRUE(jobs_->ReportMetrics(trial.allocation_id(), MetricGroup::kTraining, part).ok());
  }
  ASSERT_EQ(Run({"trial", "metrics", std::to_string(trial.id())}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("STEPS  acc   loss"));
  EXPECT_THAT(out_, HasSubstr("1001   0.75  0.000999001"));
  EXPECT_THAT(out_, HasSubstr("1001 training report(s) of trial " + std::to_string(trial.id())));
  ASSERT_EQ(Run({"trial", "metrics", std::to_string(trial.id()), "--group", "validation"}), 0)
      << err_;
  EXPECT_THAT(out_, HasSubstr("0 validation report(s)"));
  EXPECT_EQ(Run({"trial", "metrics", std::to_string(trial.id()), "--group", "test"}), 2);
  EXPECT_THAT(err_, HasSubstr("--group: training or validation"));
  ASSERT_TRUE(jobs_
                  ->ReportMetrics(trial.allocation_id(), MetricGroup::kValidation,
                                  {{.steps = 10, .metrics = {{"loss", 0.25}}}})
                  .ok());
  ASSERT_EQ(Run({"experiment", "describe", std::to_string(exp.id())}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("best validation metric 0.25"));
  EXPECT_EQ(Run({"trial", "metrics", "999"}), 1);
  EXPECT_THAT(err_, HasSubstr("NOT_FOUND"));
}

// A trial's pod logs, each line prefixed with its run and rank.
TEST_F(CliTest, TrialLogsPrefixEachLine) {
  ASSERT_EQ(Run({"login", "admin", "--password", "pw"}), 0) << err_;
  const v1::Experiment exp = Create("resources: {slots_per_trial: 8}\n");
  const v1::Trial trial = Get(exp.id()).trials(0);
  const std::string a = trial.allocation_id(), id = std::to_string(trial.id());
  ASSERT_EQ(Run({"trial", "logs", id}), 0) << err_;
  EXPECT_EQ(out_, absl::StrCat("[r1 rank 0] ", a, "-0 line 1\n[r1 rank 0] ", a, "-0 line 2\n",
                               "[r1 rank 1] ", a, "-1 line 1\n[r1 rank 1] ", a, "-1 line 2\n"));
  ASSERT_EQ(Run({"trial", "logs", id, "--rank", "1", "--tail", "1"}), 0) << err_;
  EXPECT_EQ(out_, absl::StrCat("[r1 rank 1] ", a, "-1 line 2\n"));
  EXPECT_EQ(Run({"trial", "logs", id, "--tail", "0"}), 2);
  EXPECT_THAT(err_, HasSubstr("--tail: a number from 1 to 100000"));
  EXPECT_EQ(Run({"trial", "logs", id, "--rank", "x"}), 2);
  EXPECT_THAT(err_, HasSubstr("--rank: a number from 0 to 100000"));
  EXPECT_EQ(Run({"trial", "logs", "999"}), 1);
  EXPECT_THAT(err_, HasSubstr("NOT_FOUND"));
  // Followed (-f), the logs of a killed run's pods end with the pods.
  ASSERT_EQ(Run({"experiment", "kill", std::to_string(exp.id())}), 0) << err_;
  ReapDeleted();
  ASSERT_EQ(Run({"trial", "logs", id, "-f"}), 0) << err_;
  EXPECT_EQ(out_, "");
}

}  // namespace
}  // namespace phalanx::master

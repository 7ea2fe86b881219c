// The phalanx CLI against a real master (service_fixture.h): login (passwords from flags, a pipe or
// a pseudo-terminal), experiments, jobs, tasks, and the master's refusals printed with their code.
#include "cli/cli.h"

#include <poll.h>
#include <pty.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>

#include "cli/password.h"
#include "kube/status.h"
#include "tests/master/service_fixture.h"

namespace phalanx::master {
namespace {

using ::testing::ContainsRegex;
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

  // Runs the CLI with `input` piped to its stdin; returns its exit code, output in out_ and err_.
  int Run(std::vector<std::string> args, const std::string& input = "") {
    int pipe_fds[2];
    EXPECT_EQ(pipe(pipe_fds), 0);
    EXPECT_EQ(write(pipe_fds[1], input.data(), input.size()), static_cast<ssize_t>(input.size()));
    close(pipe_fds[1]);
    const int rc = RunAt(pipe_fds[0], args);
    close(pipe_fds[0]);
    return rc;
  }

  // Runs the CLI with stdin `in`.
  int RunAt(int in, std::vector<std::string> args) {
    std::ostringstream out, err;
    const int rc = cli::RunCli(args, in, out, err);
    out_ = out.str();
    err_ = err.str();
    return rc;
  }

  std::string File(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  // The text of `name` in the test's directory; "" when there is none.
  std::string Text(const std::string& name) {
    std::ifstream in(dir_ + "/" + name);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  std::string dir_, out_, err_;
};

// A server of `services` on a free local port, standing in for the master at `address`.
std::unique_ptr<grpc::Server> FakeMaster(const std::vector<grpc::Service*>& services,
                                         std::string& address) {
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  for (grpc::Service* service : services) builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  address = absl::StrCat("127.0.0.1:", port);
  return server;
}

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
class RecordingAuth : public v1::AuthService::Service {
 public:
  grpc::Status Login(grpc::ServerContext* ctx, const v1::LoginRequest* req,
                     v1::LoginResponse* resp) override {
    deadline = ctx->deadline();
    password = req->password();
    resp->set_token("token");
    resp->mutable_user()->set_username("admin");
    return grpc::Status::OK;
  }
  std::chrono::system_clock::time_point deadline;
  std::optional<std::string> password;  // Of the last login.
};

// A pseudo-terminal standing in for the user's: the CLI reads and prompts at tty(); the test reads
// the screen and types at the other end.
class FakeTerminal {
 public:
  FakeTerminal() { EXPECT_EQ(openpty(&keyboard_, &tty_, nullptr, nullptr, nullptr), 0); }
  ~FakeTerminal() {
    close(keyboard_);
    close(tty_);
  }
  int tty() const { return tty_; }
  bool Echoes() const {
    termios t;
    return tcgetattr(tty_, &t) == 0 && (t.c_lflag & ECHO) != 0;
  }
  // Waits up to 10 s until the screen shows `text` after what the last wait found; false when it
  // does not.
  bool WaitFor(const std::string& text) {
    size_t at;
    while ((at = screen_.find(text, seen_)) == std::string::npos) {
      pollfd ready = {.fd = keyboard_, .events = POLLIN, .revents = 0};
      char buf[256];
      const ssize_t n = poll(&ready, 1, 10000) == 1 ? read(keyboard_, buf, sizeof buf) : -1;
      if (n <= 0) return false;
      screen_.append(buf, n);
    }
    seen_ = at + text.size();
    return true;
  }
  // Everything the CLI wrote that the waits read.
  const std::string& screen() const { return screen_; }
  void Type(const std::string& line) {
    EXPECT_EQ(write(keyboard_, (line + "\n").data(), line.size() + 1),
              static_cast<ssize_t>(line.size() + 1));
  }

 private:
  int keyboard_ = -1, tty_ = -1;
  std::string screen_;
  size_t seen_ = 0;
};

// Answers the prompts on `terminal` one after another on its own thread: {prompt, line typed}.
// Notes whether the terminal echoed when each prompt came.
class Typist {
 public:
  Typist(FakeTerminal& terminal, std::vector<std::pair<std::string, std::string>> answers)
      : thread_([this, &terminal, answers] {
          for (const auto& [prompt, line] : answers) {
            if (!terminal.WaitFor(prompt)) {
              ADD_FAILURE() << "no prompt \"" << prompt << "\"";
              return;
            }
            echoed_ = echoed_ || terminal.Echoes();
            terminal.Type(line);
          }
        }) {}
  ~Typist() {
    if (thread_.joinable()) thread_.join();
  }
  // Waits for the typing to end; whether the terminal echoed at any prompt.
  bool Echoed() {
    thread_.join();
    return echoed_;
  }

 private:
  bool echoed_ = false;
  std::thread thread_;
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
  EXPECT_THAT(out_, ContainsRegex("TRIAL +STATE +HPARAMS +RUNS +RESTARTS +CHECKPOINT +ALLOCATION"));
  EXPECT_THAT(out_, HasSubstr("(PENDING)"));
  ASSERT_EQ(Run({"job", "list"}), 0) << err_;
  EXPECT_THAT(out_, ContainsRegex("PRIORITY +SLOTS +USER +SUBMITTED \\(UTC\\) +PENDING REASON"));
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

// user create takes the password from --password, else $PHALANX_PASSWORD, else stdin, and refuses
// an empty one.
TEST_F(CliTest, UserCreateNeedsAPassword) {
  ASSERT_EQ(Run({"login", "admin", "--password", "pw"}), 0) << err_;
  unsetenv("PHALANX_PASSWORD");
  EXPECT_EQ(Run({"user", "create", "bob"}), 2);
  EXPECT_THAT(err_, HasSubstr("user create: empty password; type one, pipe one line to stdin, or "
                              "give --password P or $PHALANX_PASSWORD"));
  EXPECT_EQ(Run({"user", "create", "bob", "--password="}, "from-stdin\n"), 2);
  setenv("PHALANX_PASSWORD", "from-env", 1);
  ASSERT_EQ(Run({"user", "create", "bob"}, "from-stdin\n"), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("Created user bob"));
  ASSERT_EQ(Run({"user", "create", "carol", "--password", "from-flag"}), 0) << err_;
  unsetenv("PHALANX_PASSWORD");
  EXPECT_EQ(Run({"login", "bob", "--password", "from-env"}), 0) << err_;
  EXPECT_EQ(Run({"login", "carol", "--password", "from-flag"}), 0) << err_;
}

// Without --password or $PHALANX_PASSWORD, the password is the first line of a piped stdin, read
// once (no second line for a new password) and without prompts; --password and $PHALANX_PASSWORD
// still win over stdin.
TEST_F(CliTest, PasswordsFromAPipe) {
  unsetenv("PHALANX_PASSWORD");
  EXPECT_EQ(Run({"login", "admin"}, "wrong\n"), 1);
  EXPECT_THAT(err_, HasSubstr("UNAUTHENTICATED"));
  ASSERT_EQ(Run({"login", "admin"}, "pw\n"), 0) << err_;
  EXPECT_EQ(out_, "Logged in as admin (admin)\n");
  EXPECT_EQ(err_, "");

  ASSERT_EQ(Run({"user", "create", "bob"}, "bob-pw\nnot-bob-pw\n"), 0) << err_;
  ASSERT_EQ(Run({"login", "bob"}, "bob-pw\n"), 0) << err_;
  EXPECT_EQ(out_, "Logged in as bob\n");
  ASSERT_EQ(Run({"user", "set-password"}, "last-line-unended"), 0) << err_;
  EXPECT_EQ(Run({"user", "set-password"}, "\nsecond\n"), 2);
  EXPECT_THAT(err_, HasSubstr("user set-password: empty password"));
  ASSERT_EQ(Run({"login", "bob"}, "last-line-unended\n"), 0) << err_;

  ASSERT_EQ(Run({"login", "admin", "--password", "pw"}, "wrong\n"), 0) << err_;
  EXPECT_EQ(Run({"login", "admin", "--password="}, "pw\n"), 1);  // An empty --password is one.
  setenv("PHALANX_PASSWORD", "pw", 1);
  ASSERT_EQ(Run({"login", "admin"}, "wrong\n"), 0) << err_;
  EXPECT_EQ(Run({"login", "admin", "--password", "wrong"}, "pw\n"), 1);
  unsetenv("PHALANX_PASSWORD");
}

// At a terminal, login asks for the password with echo off and restores the terminal; an empty
// line logs in with an empty password.
TEST_F(CliTest, LoginAsksAtATerminal) {
  unsetenv("PHALANX_PASSWORD");
  RecordingAuth auth;
  std::string address;
  const std::unique_ptr<grpc::Server> fake = FakeMaster({&auth}, address);
  setenv("PHALANX_MASTER", address.c_str(), 1);
  FakeTerminal terminal;
  Typist typist(terminal, {{"Password for admin: ", "s3cret"}});
  ASSERT_EQ(RunAt(terminal.tty(), {"login", "admin"}), 0) << err_;
  EXPECT_FALSE(typist.Echoed());
  EXPECT_EQ(auth.password, "s3cret");
  // The typed newline is echoed, the password is not.
  EXPECT_TRUE(terminal.WaitFor("\r\n"));
  EXPECT_EQ(terminal.screen(), "Password for admin: \r\n");
  EXPECT_TRUE(terminal.Echoes());

  Typist empty(terminal, {{"Password for root: ", ""}});
  ASSERT_EQ(RunAt(terminal.tty(), {"login", "root"}), 0) << err_;
  EXPECT_FALSE(empty.Echoed());
  EXPECT_EQ(auth.password, "");
  EXPECT_TRUE(terminal.Echoes());
}

// At a terminal, a new password is asked twice; two different answers, or an empty one, are
// refused before the master is called, and the terminal is restored either way.
TEST_F(CliTest, NewPasswordsAreAskedTwiceAtATerminal) {
  unsetenv("PHALANX_PASSWORD");
  ASSERT_EQ(Run({"login", "admin", "--password", "pw"}), 0) << err_;
  FakeTerminal terminal;
  Typist mistyped(terminal, {{"Password for bob: ", "one"}, {"Retype password for bob: ", "two"}});
  EXPECT_EQ(RunAt(terminal.tty(), {"user", "create", "bob"}), 2);
  EXPECT_FALSE(mistyped.Echoed());
  EXPECT_THAT(err_, HasSubstr("user create: the passwords do not match"));
  EXPECT_TRUE(terminal.Echoes());

  Typist blank(terminal, {{"Password for carol: ", ""}, {"Retype password for carol: ", ""}});
  EXPECT_EQ(RunAt(terminal.tty(), {"user", "create", "carol"}), 2);
  blank.Echoed();
  EXPECT_THAT(err_, HasSubstr("user create: empty password"));

  Typist typed(terminal,
               {{"Password for bob: ", "bob-pw"}, {"Retype password for bob: ", "bob-pw"}});
  ASSERT_EQ(RunAt(terminal.tty(), {"user", "create", "bob"}), 0) << err_;
  EXPECT_FALSE(typed.Echoed());
  EXPECT_TRUE(terminal.Echoes());
  Typist reset(terminal,
               {{"New password for bob: ", "new"}, {"Retype new password for bob: ", "new"}});
  ASSERT_EQ(RunAt(terminal.tty(), {"user", "set-password", "bob"}), 0) << err_;
  reset.Echoed();
  ASSERT_EQ(Run({"login", "bob"}, "new\n"), 0) << err_;
  Typist own(terminal, {{"New password: ", "newer"}, {"Retype new password: ", "newer"}});
  ASSERT_EQ(RunAt(terminal.tty(), {"user", "set-password"}), 0) << err_;
  own.Echoed();
  EXPECT_FALSE(Login("bob", "newer").empty());
}

// A signal that ends the CLI at the prompt restores the terminal's echo first.
TEST(PasswordPromptTest, ASignalAtThePromptRestoresTheTerminal) {
  FakeTerminal terminal;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    signal(SIGINT, SIG_DFL);  // Not ignored, whatever the test inherited.
    (void)cli::ReadPassword(terminal.tty(), "Password: ");
    _exit(0);
  }
  const bool prompted = terminal.WaitFor("Password: ");
  const bool echoed = terminal.Echoes();
  kill(pid, SIGINT);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(prompted);
  EXPECT_FALSE(echoed);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << status;
  EXPECT_TRUE(terminal.Echoes());
}

// A piped password is read up to its newline and no further, so the rest of stdin is left.
TEST(PasswordPromptTest, APipeIsReadALineAtATime) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  ASSERT_EQ(write(pipe_fds[1], "first\nsecond", 12), 12);
  close(pipe_fds[1]);
  EXPECT_EQ(cli::ReadPassword(pipe_fds[0], "unused: ", "unused: ").value_or("?"), "first");
  EXPECT_EQ(cli::ReadPassword(pipe_fds[0], "unused: ").value_or("?"), "second");
  EXPECT_EQ(cli::ReadPassword(pipe_fds[0], "unused: ").value_or("?"), "");
  close(pipe_fds[0]);
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

}  // namespace
}  // namespace phalanx::master

// The command line's test fixture: CliTest runs the CLI in-process against a real master
// (service_fixture.h) with its token file in a temp dir; FakeMaster and RecordingAuth stand in for
// a master where a test needs to see what the CLI sends.
#ifndef PHALANX_TESTS_MASTER_TESTING_CLI_FIXTURE_H_
#define PHALANX_TESTS_MASTER_TESTING_CLI_FIXTURE_H_

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "tests/master/testing/service_fixture.h"

namespace phalanx::master {

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
inline std::unique_ptr<grpc::Server> FakeMaster(const std::vector<grpc::Service*>& services,
                                                std::string& address) {
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  for (grpc::Service* service : services) builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  address = absl::StrCat("127.0.0.1:", port);
  return server;
}

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

}  // namespace phalanx::master

#endif  // PHALANX_TESTS_MASTER_TESTING_CLI_FIXTURE_H_

// phalanx CLI entry: global options, the session, login and users (see cli.h).
#include "cli/cli.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cli/session.h"
#include "phalanx/v1/auth.grpc.pb.h"
#include "proto/grpc_codes.h"

namespace phalanx::cli {
namespace {

std::string Env(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

std::shared_ptr<grpc::Channel> Connect(const Args& args, std::ostream& err) {
  const std::string master =
      args.Option("master").value_or(Env("PHALANX_MASTER", "localhost:8080"));
  if (!args.Has("tls")) return grpc::CreateChannel(master, grpc::InsecureChannelCredentials());
  grpc::SslCredentialsOptions ssl;
  if (std::optional<std::string> ca = args.Option("ca");
      ca && !ReadWholeFile(*ca, ssl.pem_root_certs)) {
    err << "phalanx: cannot read --ca " << *ca << "\n";
    return nullptr;
  }
  return grpc::CreateChannel(master, grpc::SslCredentials(ssl));
}

int Login(const Session& s, const Args& args) {
  if (args.positional.size() != 2) return s.Usage("usage: phalanx login USER [--password P]");
  v1::LoginRequest req;
  req.set_username(args.positional[1]);
  req.set_password(args.Option("password").value_or(Env("PHALANX_PASSWORD", "")));
  v1::LoginResponse resp;
  grpc::ClientContext ctx;
  if (int rc = s.Check(v1::AuthService::NewStub(s.channel)->Login(&ctx, req, &resp))) return rc;
  std::ofstream(s.token_file, std::ios::trunc) << resp.token();
  s.out << "Logged in as " << resp.user().username() << (resp.user().admin() ? " (admin)" : "")
        << "\n";
  return 0;
}

int CreateUser(const Session& s, const Args& args) {
  if (args.positional.size() != 3 || args.positional[1] != "create") {
    return s.Usage("usage: phalanx user create NAME [--password P] [--admin]");
  }
  v1::CreateUserRequest req;
  req.set_username(args.positional[2]);
  req.set_password(args.Option("password").value_or(""));
  req.set_admin(args.Has("admin"));
  v1::CreateUserResponse resp;
  if (int rc =
          s.Check(v1::AuthService::NewStub(s.channel)->CreateUser(s.Context().get(), req, &resp))) {
    return rc;
  }
  s.out << "Created user " << resp.user().username() << " (id " << resp.user().id() << ")\n";
  return 0;
}

}  // namespace

std::unique_ptr<grpc::ClientContext> Session::Context() const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  std::string token;
  if (ReadWholeFile(token_file, token) && !token.empty()) {
    ctx->AddMetadata("authorization", "Bearer " + token);
  }
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  return ctx;
}

int Session::Check(const grpc::Status& status) const {
  if (status.ok()) return 0;
  err << "phalanx: " << GrpcCodeName(status.error_code()) << ": " << status.error_message() << "\n";
  if (status.error_code() == grpc::StatusCode::UNAUTHENTICATED)
    err << "(run: phalanx login USER)\n";
  return 1;
}

int Session::Usage(const std::string& message) const {
  err << "phalanx: " << message << "\n";
  return 2;
}

void PrintTable(std::ostream& out, const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size() && c < width.size(); ++c)
      width[c] = std::max(width[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t c = 0; c < cells.size(); ++c) {
      out << cells[c];
      if (c + 1 < cells.size()) out << std::string(width[c] - cells[c].size() + 2, ' ');
    }
    out << "\n";
  };
  line(header);
  for (const auto& row : rows) line(row);
}

bool ReadWholeFile(const std::string& path, std::string& out) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

int RunCli(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Args args;
  if (std::string e = Args::Parse(argv, {"tls", "paused", "admin"}, args); !e.empty()) {
    err << "phalanx: " << e << "\n";
    return 2;
  }
  if (args.positional.empty()) {
    err << "usage: phalanx [--master HOST:PORT] [--tls [--ca FILE]] "
           "login|user|experiment|job|cmd|notebook|shell|tensorboard|trial ...\n";
    return 2;
  }
  std::shared_ptr<grpc::Channel> channel = Connect(args, err);
  if (channel == nullptr) return 2;
  const Session s{channel, Env("PHALANX_TOKEN_FILE", Env("HOME", ".") + "/.phalanx-token"), out,
                  err};
  const std::string& command = args.positional[0];
  if (command == "login") return Login(s, args);
  if (command == "user") return CreateUser(s, args);
  if (command == "experiment" || command == "e") return RunExperimentCommand(s, args);
  if (command == "job") return RunJobCommand(s, args);
  if (command == "trial") return RunTrialCommand(s, args);
  if (command == "cmd" || command == "notebook" || command == "shell" || command == "tensorboard") {
    return RunTaskCommand(s, command, args);
  }
  return s.Usage("unknown command \"" + command + "\"");
}

}  // namespace phalanx::cli

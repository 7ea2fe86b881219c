// phalanx CLI entry: global options, the session, login and users (see cli.h).
#include "cli/cli.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/password.h"
#include "cli/session.h"
#include "phalanx/v1/auth.grpc.pb.h"
#include "proto/grpc_codes.h"

namespace phalanx::cli {
namespace {

constexpr char kUsage[] =
    "usage: phalanx [--master [http[s]://]HOST:PORT] [--tls] [--ca FILE] COMMAND ...\n"
    "  login USER [--password P] | logout | whoami\n"
    "  user create NAME [--password P] [--admin] | set-password [NAME] [--password P]\n"
    "  experiment create|list|describe|pause|activate|kill|set-priority ...\n"
    "  job list|move|set-priority|set-pool|stats ...\n"
    "  cmd|notebook|shell|tensorboard start|list|kill|set-priority ...\n"
    "  trial preemption|checkpoint|ack|complete ALLOCATION ... | metrics|logs TRIAL ...\n"
    "Passwords not given by --password or $PHALANX_PASSWORD are read from stdin: typed at the\n"
    "prompt when it is a terminal, else its first line.\n"
    "phalanx COMMAND --help shows a command's usage.\n";

// Options every command takes, and every option name any command takes (the commands say which
// of them they accept).
const std::set<std::string> kGlobalOptions = {"master", "tls", "ca", "help"};
const std::set<std::string> kValueOptions = {
    "master",    "ca",     "password", "state", "limit", "offset", "pool", "ahead-of",
    "behind-of", "config", "wait",     "steps", "error", "group",  "rank", "tail"};
const std::set<std::string> kSwitches = {"tls", "paused", "admin", "follow"};

std::string Env(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

// The master as --master or $PHALANX_MASTER give it.
struct MasterAddress {
  enum class Scheme { kNone, kHttp, kHttps };
  std::string target;  // HOST:PORT, as gRPC takes it.
  Scheme scheme = Scheme::kNone;
};

// `value` is HOST:PORT, or an http:// or https:// URL of it with at most a trailing "/". Errors
// name `source`.
absl::StatusOr<MasterAddress> ParseMaster(const std::string& source, const std::string& value) {
  MasterAddress master{.target = value};
  bool known_scheme = true;
  if (const size_t end = value.find("://"); end != std::string::npos) {
    const std::string scheme = absl::AsciiStrToLower(value.substr(0, end));
    known_scheme = scheme == "http" || scheme == "https";
    master.scheme =
        scheme == "https" ? MasterAddress::Scheme::kHttps : MasterAddress::Scheme::kHttp;
    master.target = std::string(absl::StripSuffix(value.substr(end + 3), "/"));
  }
  if (!known_scheme || master.target.empty() || master.target.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": expected HOST:PORT, http://HOST:PORT or https://HOST:PORT, got \"",
                     value, "\""));
  }
  return master;
}

// A channel to the master; TLS with https://, --tls or --ca. nullptr, the error printed, when an
// option is bad.
std::shared_ptr<grpc::Channel> Connect(const Args& args, std::ostream& err) {
  const std::optional<std::string> flag = args.Option("master");
  const std::string source = flag ? "--master" : "PHALANX_MASTER";
  absl::StatusOr<MasterAddress> master =
      ParseMaster(source, flag.value_or(Env("PHALANX_MASTER", "localhost:8080")));
  if (!master.ok()) {
    err << "phalanx: " << master.status().message() << "\n";
    return nullptr;
  }
  const std::optional<std::string> ca = args.Option("ca");
  const bool tls_asked = args.Has("tls") || ca.has_value();
  if (tls_asked && master->scheme == MasterAddress::Scheme::kHttp) {
    err << "phalanx: " << source << ": http:// is without TLS, but --tls or --ca asks for it; "
        << "use https://\n";
    return nullptr;
  }
  // Reconnect often, so that a standby taking over is reached soon after it serves (with gRPC's
  // defaults a refused connection is tried again only after up to 20 s); a connection attempt
  // still gets 2 s.
  grpc::ChannelArguments channel_args;
  channel_args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  channel_args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  channel_args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 2000);
  if (!tls_asked && master->scheme != MasterAddress::Scheme::kHttps) {
    return grpc::CreateCustomChannel(master->target, grpc::InsecureChannelCredentials(),
                                     channel_args);
  }
  grpc::SslCredentialsOptions ssl;
  if (ca && !ReadWholeFile(*ca, ssl.pem_root_certs)) {
    err << "phalanx: cannot read --ca " << *ca << "\n";
    return nullptr;
  }
  if (!ca) ssl.pem_root_certs = Env("PHALANX_MASTER_CA", "");  // Set in task pods.
  return grpc::CreateCustomChannel(master->target, grpc::SslCredentials(ssl), channel_args);
}

// Writes the login token to `path`, readable by its owner only (an existing file is tightened).
absl::Status SaveToken(const std::string& path, const std::string& token) {
  errno = 0;
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  bool ok = fd >= 0 && fchmod(fd, 0600) == 0 &&
            write(fd, token.data(), token.size()) == static_cast<ssize_t>(token.size());
  ok = fd >= 0 && close(fd) == 0 && ok;
  if (ok) return absl::OkStatus();
  return absl::ErrnoToStatus(errno != 0 ? errno : EIO,
                             absl::StrCat("cannot write the token to ", path));
}

// A context with the deadline every call has.
std::unique_ptr<grpc::ClientContext> NewContext() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  return ctx;
}

// "NAME", with " (admin)" for an admin.
std::string Describe(const v1::User& user) {
  return user.username() + (user.admin() ? " (admin)" : "");
}

// The password from --password, else $PHALANX_PASSWORD, else stdin: typed after `prompt` at a
// terminal (and after `confirm` too when not empty), else its first line. 0, or a Usage error
// naming `command` when it cannot be read.
int GetPassword(const Session& s, const Args& args, const std::string& command,
                const std::string& prompt, const std::string& confirm, std::string& password) {
  if (std::optional<std::string> flag = args.Option("password")) {
    password = *flag;
    return 0;
  }
  password = Env("PHALANX_PASSWORD", "");
  if (!password.empty()) return 0;
  absl::StatusOr<std::string> read = ReadPassword(s.in, prompt, confirm);
  if (!read.ok()) return s.Usage(absl::StrCat(command, ": ", read.status().message()));
  password = *std::move(read);
  return 0;
}

// A password to set, `what` ("new password for bob") asked twice at a terminal; an empty one is a
// Usage error.
int GetNewPassword(const Session& s, const Args& args, const std::string& command,
                   const std::string& what, std::string& password) {
  std::string prompt = what + ": ";
  prompt[0] = absl::ascii_toupper(prompt[0]);
  if (int rc = GetPassword(s, args, command, prompt, "Retype " + what + ": ", password)) return rc;
  if (!password.empty()) return 0;
  return s.Usage(command +
                 ": empty password; type one, pipe one line to stdin, or give --password P or "
                 "$PHALANX_PASSWORD");
}

int Login(const Session& s, const Args& args) {
  constexpr char kLoginUsage[] =
      "usage: phalanx login USER [--password P]\n"
      "The password is --password, else $PHALANX_PASSWORD, else typed at the prompt when stdin\n"
      "is a terminal (an empty line is an empty password), else the first line of stdin.";
  if (args.Has("help")) return s.Help(kLoginUsage);
  if (int rc = s.CheckOptions(args, {"password"})) return rc;
  if (int rc = s.ExpectPositionals(args, 2, kLoginUsage)) return rc;
  v1::LoginRequest req;
  req.set_username(args.positional[1]);
  if (int rc = GetPassword(s, args, "login", "Password for " + req.username() + ": ", "",
                           *req.mutable_password())) {
    return rc;
  }
  auto stub = s.Stub<v1::AuthService>();
  if (stub == nullptr) return 2;
  v1::LoginResponse resp;
  if (int rc = s.Check(s.Retried([&](grpc::ClientContext* c) { return stub->Login(c, req, &resp); },
                                 NewContext)))
    return rc;
  if (absl::Status saved = SaveToken(s.token_file, resp.token()); !saved.ok()) {
    s.err << "phalanx: " << saved.message() << "\n";
    return 1;
  }
  s.out << "Logged in as " << Describe(resp.user()) << "\n";
  return 0;
}

// Revokes the saved token and removes its file. A token the master no longer knows is removed too.
int Logout(const Session& s, const Args& args) {
  constexpr char kLogoutUsage[] = "usage: phalanx logout";
  if (args.Has("help")) return s.Help(kLogoutUsage);
  if (int rc = s.CheckOptions(args, {})) return rc;
  if (int rc = s.ExpectPositionals(args, 1, kLogoutUsage)) return rc;
  std::string token;
  if (!ReadWholeFile(s.token_file, token) || token.empty()) {
    s.out << "Not logged in\n";
    return 0;
  }
  auto stub = s.Stub<v1::AuthService>();
  if (stub == nullptr) return 2;
  v1::LogoutResponse resp;
  const grpc::Status status =
      s.Retried([&](grpc::ClientContext* c) { return stub->Logout(c, {}, &resp); });
  if (status.error_code() != grpc::StatusCode::UNAUTHENTICATED) {
    if (int rc = s.Check(status)) return rc;
  }
  if (std::remove(s.token_file.c_str()) != 0) {
    s.err << "phalanx: cannot remove " << s.token_file << ": " << std::strerror(errno) << "\n";
    return 1;
  }
  s.out << "Logged out\n";
  return 0;
}

int WhoAmI(const Session& s, const Args& args) {
  constexpr char kWhoAmIUsage[] = "usage: phalanx whoami";
  if (args.Has("help")) return s.Help(kWhoAmIUsage);
  if (int rc = s.CheckOptions(args, {})) return rc;
  if (int rc = s.ExpectPositionals(args, 1, kWhoAmIUsage)) return rc;
  auto stub = s.Stub<v1::AuthService>();
  if (stub == nullptr) return 2;
  v1::CurrentUserResponse resp;
  if (int rc = s.Check(
          s.Retried([&](grpc::ClientContext* c) { return stub->CurrentUser(c, {}, &resp); })))
    return rc;
  s.out << "Logged in as " << Describe(resp.user()) << "\n";
  return 0;
}

constexpr char kUserUsage[] =
    "usage: phalanx user create NAME [--password P] [--admin]\n"
    "       phalanx user set-password [NAME] [--password P]\n"
    "The password is --password, else $PHALANX_PASSWORD, else typed twice at the prompt when\n"
    "stdin is a terminal, else the first line of stdin (read once). It may not be empty.";

int CreateUser(const Session& s, const Args& args) {
  if (int rc = s.ExpectPositionals(args, 3, kUserUsage)) return rc;
  v1::CreateUserRequest req;
  req.set_username(args.positional[2]);
  if (int rc = GetNewPassword(s, args, "user create", "password for " + req.username(),
                              *req.mutable_password())) {
    return rc;
  }
  req.set_admin(args.Has("admin"));
  auto stub = s.Stub<v1::AuthService>();
  if (stub == nullptr) return 2;
  v1::CreateUserResponse resp;
  if (int rc = s.Check(stub->CreateUser(s.Context().get(), req, &resp))) return rc;
  s.out << "Created user " << resp.user().username() << " (id " << resp.user().id() << ")\n";
  return 0;
}

// NAME defaults to the logged-in user (the master's reading of an empty username).
int SetPassword(const Session& s, const Args& args) {
  if (int rc = s.ExpectPositionals(args, std::min<size_t>(args.positional.size(), 3), kUserUsage)) {
    return rc;
  }
  v1::SetUserPasswordRequest req;
  if (args.positional.size() == 3) req.set_username(args.positional[2]);
  const std::string what =
      "new password" + (req.username().empty() ? "" : " for " + req.username());
  if (int rc = GetNewPassword(s, args, "user set-password", what, *req.mutable_password())) {
    return rc;
  }
  auto stub = s.Stub<v1::AuthService>();
  if (stub == nullptr) return 2;
  v1::SetUserPasswordResponse resp;
  if (int rc = s.Check(
          s.Retried([&](grpc::ClientContext* c) { return stub->SetUserPassword(c, req, &resp); })))
    return rc;
  const std::string& name = resp.user().username();
  s.out << "Password of " << name << " set (other logins of " << name << " revoked)\n";
  return 0;
}

int RunUserCommand(const Session& s, const Args& args) {
  if (args.Has("help")) return s.Help(kUserUsage);
  if (args.positional.size() < 2) return s.Usage(kUserUsage);
  const std::string& verb = args.positional[1];
  if (verb == "create") {
    if (int rc = s.CheckOptions(args, {"password", "admin"})) return rc;
    return CreateUser(s, args);
  }
  if (verb == "set-password") {
    if (int rc = s.CheckOptions(args, {"password"})) return rc;
    return SetPassword(s, args);
  }
  return s.Usage(kUserUsage);
}

}  // namespace

std::shared_ptr<grpc::Channel> Session::Channel() const {
  if (channel == nullptr) channel = Connect(args, err);
  return channel;
}

std::unique_ptr<grpc::ClientContext> Session::Context() const {
  std::unique_ptr<grpc::ClientContext> ctx = NewContext();
  std::string token;
  if (ReadWholeFile(token_file, token) && !token.empty()) {
    ctx->AddMetadata("authorization", "Bearer " + token);
  }
  return ctx;
}

grpc::Status Session::Retried(const Rpc& rpc, const ContextMaker& make) const {
  const absl::Time end = absl::Now() + absl::Seconds(30);
  for (absl::Duration wait = absl::Milliseconds(200);;
       wait = std::min(wait * 2, absl::Seconds(2))) {
    grpc::Status status = rpc((make ? make() : Context()).get());
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE ||
        absl::StrContains(absl::AsciiStrToLower(status.error_message()), "handshake") ||
        absl::Now() + wait > end) {
      return status;
    }
    absl::SleepFor(wait);
  }
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

int Session::Help(const std::string& usage) const {
  out << usage << (usage.ends_with('\n') ? "" : "\n");
  return 0;
}

int Session::CheckOptions(const Args& args, const std::set<std::string>& allowed) const {
  std::set<std::string> all = allowed;
  all.insert(kGlobalOptions.begin(), kGlobalOptions.end());
  const std::string name = args.FirstNotIn(all);
  if (name.empty()) return 0;
  std::vector<std::string> takes;
  for (const std::string& a : allowed) takes.push_back(a == "--" ? "-- ..." : "--" + a);
  return Usage(absl::StrCat(name == "--" ? "no words after --" : name + " is not an option",
                            " here (this command takes ",
                            takes.empty() ? "none" : absl::StrJoin(takes, ", "), ")"));
}

int Session::ReadPage(const Args& args, int& offset, int& limit) const {
  for (const auto& [name, value] : {std::pair{"offset", &offset}, std::pair{"limit", &limit}}) {
    *value = 0;
    if (std::optional<std::string> v = args.Option(name);
        v && (!absl::SimpleAtoi(*v, value) || *value < 0)) {
      return Usage(absl::StrCat("--", name, ": expected a number >= 0, got \"", *v, "\""));
    }
  }
  return 0;
}

int Session::ExpectPositionals(const Args& args, size_t n, const std::string& usage) const {
  if (args.positional.size() < n) return Usage(usage);
  if (args.positional.size() > n) {
    return Usage(absl::StrCat("extra argument \"", args.positional[n], "\"\n", usage));
  }
  return 0;
}

void Session::PrintCount(int shown, const v1::Pagination& page, const std::string& noun) const {
  out << shown << " of " << page.total() << " " << noun << "(s)";
  if (page.offset() > 0 && shown > 0) out << ", from #" << page.offset() + 1;
  out << "\n";
}

// `line` with its control characters (but tab) as \xNN: a trial's output must not drive the
// reader's terminal.
std::string Printable(absl::string_view line) {
  std::string out;
  for (unsigned char c : line) {
    if ((c < 0x20 && c != '\t') || c == 0x7f) {
      absl::StrAppend(&out, absl::StrFormat("\\x%02x", c));
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
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

std::string EnumName(const google::protobuf::EnumDescriptor* type, int value,
                     absl::string_view prefix) {
  if (const google::protobuf::EnumValueDescriptor* v = type->FindValueByNumber(value)) {
    return std::string(absl::StripPrefix(v->name(), prefix));
  }
  const absl::string_view words = absl::StripSuffix(prefix, "_");
  return absl::StrCat(words.substr(words.rfind('_') + 1), "_", value);
}

bool ReadWholeFile(const std::string& path, std::string& out) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

int RunCli(const std::vector<std::string>& argv, int in, std::ostream& out, std::ostream& err) {
  Args args;
  if (std::string e = Args::Parse(argv, kValueOptions, kSwitches, args); !e.empty()) {
    err << "phalanx: " << e << "\n";
    return 2;
  }
  if (args.positional.empty()) {
    (args.Has("help") ? out : err) << kUsage;
    return args.Has("help") ? 0 : 2;
  }
  const Session s{args, Env("PHALANX_TOKEN_FILE", Env("HOME", ".") + "/.phalanx-token"), in, out,
                  err};
  const std::string& command = args.positional[0];
  if (command == "login") return Login(s, args);
  if (command == "logout") return Logout(s, args);
  if (command == "whoami") return WhoAmI(s, args);
  if (command == "user") return RunUserCommand(s, args);
  if (command == "experiment" || command == "e") return RunExperimentCommand(s, args);
  if (command == "job") return RunJobCommand(s, args);
  if (command == "trial") return RunTrialCommand(s, args);
  if (command == "cmd" || command == "notebook" || command == "shell" || command == "tensorboard") {
    return RunTaskCommand(s, command, args);
  }
  return s.Usage("unknown command \"" + command + "\"");
}

}  // namespace phalanx::cli

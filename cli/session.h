// A CLI session: the channel to the master, the saved token, output streams, and a table printer.
#ifndef PHALANX_CLI_SESSION_H_
#define PHALANX_CLI_SESSION_H_

#include <functional>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "cli/args.h"
#include "google/protobuf/descriptor.h"
#include "grpcpp/grpcpp.h"
#include "phalanx/v1/common.pb.h"

namespace phalanx::cli {

struct Session {
  const Args& args;  // The global options --master, --tls and --ca say how to connect.
  std::string token_file;
  int in;  // stdin, where passwords are read (password.h).
  std::ostream& out;
  std::ostream& err;

  // Made by the first Channel(), so that --help and usage errors need none.
  mutable std::shared_ptr<grpc::Channel> channel;

  // The channel to the master; nullptr (the error printed: exit 2) when --master, $PHALANX_MASTER
  // or --ca is bad.
  std::shared_ptr<grpc::Channel> Channel() const;
  // A stub of `Service` on Channel(); nullptr when there is none.
  template <typename Service>
  std::unique_ptr<typename Service::Stub> Stub() const {
    std::shared_ptr<grpc::Channel> c = Channel();
    return c == nullptr ? nullptr : Service::NewStub(c);
  }
  // A context with the saved token and a 60 s deadline.
  std::unique_ptr<grpc::ClientContext> Context() const;
  using Rpc = std::function<grpc::Status(grpc::ClientContext*)>;
  using ContextMaker = std::function<std::unique_ptr<grpc::ClientContext>()>;
  // `rpc` on a fresh context from `make` (null: Context()) each try, tried again while the master
  // is UNAVAILABLE (restarting, or a standby taking over) for up to 30 s, 0.2 s apart doubling to
  // 2 s; a TLS handshake that fails is not retried. Only for calls that may be repeated: a
  // submission whose answer was lost may have been stored.
  grpc::Status Retried(const Rpc& rpc, const ContextMaker& make = nullptr) const;
  // Prints the master's refusal ("phalanx: INVALID_ARGUMENT: ...") and returns 1; 0 when ok.
  int Check(const grpc::Status& status) const;
  // Prints "phalanx: <message>" and returns 2.
  int Usage(const std::string& message) const;
  // Prints `usage` to `out` (for --help) and returns 0.
  int Help(const std::string& usage) const;
  // 0 when `args` has no option but the global ones and `allowed` (see Args::FirstNotIn); else
  // a Usage error naming it and what the command takes.
  int CheckOptions(const Args& args, const std::set<std::string>& allowed) const;
  // A listing's --offset and --limit (0 when absent: the master's default); a Usage error when
  // one is not a number >= 0.
  int ReadPage(const Args& args, int& offset, int& limit) const;
  // 0 when `args` has `n` positional arguments (the command's words included); else a Usage error:
  // `usage` when some are missing, naming the first extra one when there are more.
  int ExpectPositionals(const Args& args, size_t n, const std::string& usage) const;
  // 0 when `text` is a number, stored in `value`; else a Usage error naming `what`:
  // `experiment id "abc": expected a number`.
  template <typename T>
  int ReadNumber(absl::string_view what, const std::string& text, T& value) const {
    if (absl::SimpleAtoi(text, &value)) return 0;
    return Usage(absl::StrCat(what, " \"", text, "\": expected a number"));
  }
  // "N of TOTAL <noun>(s)" under a listing of `shown` rows, with where the page starts.
  void PrintCount(int shown, const v1::Pagination& page, const std::string& noun) const;
};

// The name of `value` of enum `type` without `prefix` ("EXPERIMENT_STATE_" makes "ACTIVE"); a value
// this CLI does not know (from a newer master) is shown as the prefix's last word and its number:
// "STATE_17".
std::string EnumName(const google::protobuf::EnumDescriptor* type, int value,
                     absl::string_view prefix);

// `line` with its control characters (but tab) as \xNN: text others wrote must not drive the
// reader's terminal.
std::string Printable(absl::string_view line);

// Rows printed as aligned columns under a header.
void PrintTable(std::ostream& out, const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows);

// Reads a whole file; false when it cannot.
bool ReadWholeFile(const std::string& path, std::string& out);

// "Priority of JOB set to P", saying how many of an experiment's trials run on, and keep until
// they next start, the priority they started with (a pod's priority cannot change).
void PrintPrioritySet(const Session& s, const std::string& job_id, int priority);

int RunExperimentCommand(const Session& s, const Args& args);
int RunJobCommand(const Session& s, const Args& args);
int RunTrialCommand(const Session& s, const Args& args);
// `kind` is cmd, notebook, shell or tensorboard.
int RunTaskCommand(const Session& s, const std::string& kind, const Args& args);

}  // namespace phalanx::cli

#endif  // PHALANX_CLI_SESSION_H_

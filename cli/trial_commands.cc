// phalanx trial preemption|checkpoint|ack|complete ALLOCATION: the trial process's side of
// AllocationService, for the harness or script that runs a trial. Authenticates with the
// allocation's own token ($PHALANX_ALLOCATION_TOKEN, which the master puts in every trial pod),
// else with the login's. phalanx trial metrics|logs TRIAL: a trial's reported metrics and its pods'
// logs, for users.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/session.h"
#include "phalanx/v1/allocation.grpc.pb.h"
#include "phalanx/v1/experiment.grpc.pb.h"

namespace phalanx::cli {
namespace {

constexpr char kUsage[] =
    "usage: phalanx trial preemption ALLOCATION [--wait SECONDS] | checkpoint ALLOCATION UUID "
    "[--steps N] | ack ALLOCATION | complete ALLOCATION [--error MESSAGE] | metrics TRIAL "
    "[--group training|validation] | logs TRIAL [--follow|-f] [--rank N] [--tail LINES]\n"
    "preemption prints preempt (exit 0) or continue (exit 3); metrics prints the trial's reports "
    "(training by default), one row per steps; logs prints its pods' lines as \"[r<run> rank "
    "<rank>] line\".";

// The options of each verb, the global ones aside.
std::set<std::string> OptionsOf(const std::string& verb) {
  if (verb == "preemption") return {"wait"};
  if (verb == "checkpoint") return {"steps"};
  if (verb == "complete") return {"error"};
  if (verb == "metrics") return {"group"};
  if (verb == "logs") return {"follow", "rank", "tail"};
  return {};
}

std::unique_ptr<grpc::ClientContext> TrialContext(const Session& s) {
  std::unique_ptr<grpc::ClientContext> ctx = s.Context();
  if (const char* token = std::getenv("PHALANX_ALLOCATION_TOKEN"); token && *token) {
    auto own = std::make_unique<grpc::ClientContext>();
    own->AddMetadata("authorization", std::string("Bearer ") + token);
    own->set_deadline(ctx->deadline());
    return own;
  }
  return ctx;
}

// Prints "preempt" (exit 0) or "continue" (exit 3, after waiting --wait seconds, default 1).
int Preemption(const Session& s, const Args& args) {
  v1::WatchPreemptionRequest req;
  req.set_allocation_id(args.positional[2]);
  int wait = 1;
  if (std::optional<std::string> w = args.Option("wait");
      w && (!absl::SimpleAtoi(*w, &wait) || wait < 1 || wait > 50)) {
    return s.Usage("--wait: seconds from 1 to 50");
  }
  req.set_timeout_seconds(wait);
  auto stub = s.Stub<v1::AllocationService>();
  if (stub == nullptr) return 2;
  v1::WatchPreemptionResponse resp;
  if (int rc = s.Check(
          s.Retried([&](grpc::ClientContext* c) { return stub->WatchPreemption(c, req, &resp); },
                    [&] { return TrialContext(s); })))
    return rc;
  s.out << (resp.preempt() ? "preempt" : "continue") << "\n";
  return resp.preempt() ? 0 : 3;
}

int Checkpoint(const Session& s, const Args& args) {
  v1::ReportCheckpointRequest req;
  req.set_allocation_id(args.positional[2]);
  req.set_uuid(args.positional[3]);
  int64_t steps = 0;
  if (std::optional<std::string> n = args.Option("steps"); n && !absl::SimpleAtoi(*n, &steps)) {
    return s.Usage("--steps: expected a number");
  }
  req.set_steps_completed(steps);
  auto stub = s.Stub<v1::AllocationService>();
  if (stub == nullptr) return 2;
  v1::ReportCheckpointResponse resp;
  if (int rc = s.Check(
          s.Retried([&](grpc::ClientContext* c) { return stub->ReportCheckpoint(c, req, &resp); },
                    [&] { return TrialContext(s); })))
    return rc;
  s.out << "Checkpoint " << req.uuid() << " of " << req.allocation_id() << " recorded\n";
  return 0;
}

int Ack(const Session& s, const Args& args) {
  v1::AckPreemptionRequest req;
  req.set_allocation_id(args.positional[2]);
  auto stub = s.Stub<v1::AllocationService>();
  if (stub == nullptr) return 2;
  v1::AckPreemptionResponse resp;
  if (int rc = s.Check(
          s.Retried([&](grpc::ClientContext* c) { return stub->AckPreemption(c, req, &resp); },
                    [&] { return TrialContext(s); })))
    return rc;
  s.out << req.allocation_id() << " acknowledged preemption: its pods are deleted\n";
  return 0;
}

int Complete(const Session& s, const Args& args) {
  v1::ReportCompletionRequest req;
  req.set_allocation_id(args.positional[2]);
  const std::optional<std::string> error = args.Option("error");
  req.set_success(!error.has_value());
  req.set_error(error.value_or(""));
  auto stub = s.Stub<v1::AllocationService>();
  if (stub == nullptr) return 2;
  v1::ReportCompletionResponse resp;
  if (int rc = s.Check(
          s.Retried([&](grpc::ClientContext* c) { return stub->ReportCompletion(c, req, &resp); },
                    [&] { return TrialContext(s); })))
    return rc;
  s.out << req.allocation_id() << (error ? " reported failure" : " reported success") << "\n";
  return 0;
}

// Every report of the group, page by page, as a table: STEPS, then each metric name.
int Metrics(const Session& s, const Args& args) {
  v1::GetTrialMetricsRequest req;
  int64_t trial = 0;
  if (int rc = s.ReadNumber("trial id", args.positional[2], trial)) return rc;
  req.set_trial_id(trial);
  const std::string group = args.Option("group").value_or("training");
  if (group != "training" && group != "validation") {
    return s.Usage("--group: training or validation");
  }
  req.set_group(group == "training" ? v1::METRIC_GROUP_TRAINING : v1::METRIC_GROUP_VALIDATION);
  req.set_after_steps(-1);
  auto stub = s.Stub<v1::ExperimentService>();
  if (stub == nullptr) return 2;
  std::vector<v1::MetricReport> reports;
  std::set<std::string> names;
  for (bool more = true; more;) {
    v1::GetTrialMetricsResponse resp;
    if (int rc = s.Check(s.Retried(
            [&](grpc::ClientContext* c) { return stub->GetTrialMetrics(c, req, &resp); })))
      return rc;
    for (const v1::MetricReport& r : resp.reports()) {
      for (const auto& [name, value] : r.metrics()) names.insert(name);
      reports.push_back(r);
      req.set_after_steps(r.steps_completed());
    }
    more = resp.more() && resp.reports_size() > 0;
  }
  std::vector<std::string> header = {"STEPS"};
  header.insert(header.end(), names.begin(), names.end());
  std::vector<std::vector<std::string>> rows;
  for (const v1::MetricReport& r : reports) {
    std::vector<std::string> row = {std::to_string(r.steps_completed())};
    for (const std::string& name : names) {
      auto it = r.metrics().find(name);
      row.push_back(it == r.metrics().end() ? "" : absl::StrFormat("%.6g", it->second));
    }
    rows.push_back(std::move(row));
  }
  PrintTable(s.out, header, rows);
  s.out << rows.size() << " " << group << " report(s) of trial " << trial << "\n";
  return 0;
}

// An optional number option from `min` to `max`; false (after the usage error) when malformed.
bool NumberOption(const Session& s, const Args& args, const std::string& name, int min, int max,
                  std::optional<int>& out) {
  const std::optional<std::string> v = args.Option(name);
  if (!v) return true;
  int n = 0;
  if (!absl::SimpleAtoi(*v, &n) || n < min || n > max) {
    s.Usage(absl::StrCat("--", name, ": a number from ", min, " to ", max));
    return false;
  }
  out = n;
  return true;
}

// The pods' lines as they come; --follow goes on until they end (or Ctrl-C).
int Logs(const Session& s, const Args& args) {
  v1::GetTrialLogsRequest req;
  int64_t trial = 0;
  if (int rc = s.ReadNumber("trial id", args.positional[2], trial)) return rc;
  req.set_trial_id(trial);
  std::optional<int> rank, tail;
  if (!NumberOption(s, args, "rank", 0, 100000, rank) ||
      !NumberOption(s, args, "tail", 1, 100000, tail)) {
    return 2;
  }
  if (rank) req.set_rank(*rank);
  req.set_tail_lines(tail.value_or(0));
  req.set_follow(args.Has("follow"));
  auto stub = s.Stub<v1::ExperimentService>();
  if (stub == nullptr) return 2;
  // The master ends a read after 10 minutes, a follow after an hour.
  std::unique_ptr<grpc::ClientContext> ctx = s.Context();
  ctx->set_deadline(req.follow() ? std::chrono::system_clock::time_point::max()
                                 : std::chrono::system_clock::now() + std::chrono::minutes(11));
  std::unique_ptr<grpc::ClientReader<v1::GetTrialLogsResponse>> reader =
      stub->GetTrialLogs(ctx.get(), req);
  const bool terminal = &s.out == &std::cout && isatty(STDOUT_FILENO);
  v1::GetTrialLogsResponse line;
  while (reader->Read(&line)) {
    s.out << "[r" << line.run() << " rank " << line.rank() << "] "
          << (terminal ? Printable(line.line()) : line.line()) << "\n";
    s.out.flush();
  }
  return s.Check(reader->Finish());
}

}  // namespace

int RunTrialCommand(const Session& s, const Args& args) {
  if (args.Has("help")) return s.Help(kUsage);
  if (args.positional.size() < 2) return s.Usage(kUsage);
  const std::string& verb = args.positional[1];
  if (int rc = s.CheckOptions(args, OptionsOf(verb))) return rc;
  if (verb != "preemption" && verb != "checkpoint" && verb != "ack" && verb != "complete" &&
      verb != "metrics" && verb != "logs") {
    return s.Usage(kUsage);
  }
  if (int rc = s.ExpectPositionals(args, verb == "checkpoint" ? 4 : 3, kUsage)) return rc;
  if (verb == "preemption") return Preemption(s, args);
  if (verb == "checkpoint") return Checkpoint(s, args);
  if (verb == "ack") return Ack(s, args);
  if (verb == "metrics") return Metrics(s, args);
  if (verb == "logs") return Logs(s, args);
  return Complete(s, args);
}

}  // namespace phalanx::cli

// phalanx job list|why|move|set-priority|set-pool|stats, and the task commands
// (cmd|notebook|shell|tensorboard start|list|kill|set-priority).
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "cli/session.h"
#include "phalanx/v1/job.grpc.pb.h"
#include "phalanx/v1/task.grpc.pb.h"

namespace phalanx::cli {
namespace {

// "70", or "70 (runs at 50)" when running pods carry priorities from before a change.
std::string PriorityText(const v1::Job& j) {
  if (j.running_priorities().empty()) return std::to_string(j.priority());
  return absl::StrCat(j.priority(), " (runs at ", absl::StrJoin(j.running_priorities(), ", "), ")");
}

// The forecast start as the list shows it: "2026-11-29 16:05" (UTC), "none" when the forecast
// has none, "-" when there is no forecast (running, or none made yet).
std::string EtaText(const v1::Job& j) {
  if (j.eta_ms() > 0) {
    return absl::FormatTime("%Y-%m-%d %H:%M", absl::FromUnixMillis(j.eta_ms()),
                            absl::UTCTimeZone());
  }
  return j.eta_note().empty() ? "-" : "none";
}

// "exp-12 (alice)", or the gang when phalanx-master did not create it.
std::string RefText(const v1::JobRef& r) {
  if (r.job_id().empty()) return Printable(r.gang());
  return r.username().empty() ? r.job_id() : absl::StrCat(r.job_id(), " (", r.username(), ")");
}

std::string RefsText(const google::protobuf::RepeatedPtrField<v1::JobRef>& refs) {
  std::vector<std::string> out;
  for (const v1::JobRef& r : refs) out.push_back(RefText(r));
  return absl::StrJoin(out, ", ");
}

constexpr char kJobUsage[] =
    "usage: phalanx job list [--pool P] [--limit N] [--offset N] | why JOB "
    "| move JOB (--ahead-of J | --behind-of J) | set-priority JOB PRIORITY | set-pool JOB POOL "
    "| stats";

// The options of each verb, the global ones aside.
std::set<std::string> JobOptions(const std::string& verb) {
  if (verb == "list") return {"pool", "limit", "offset"};
  if (verb == "move") return {"ahead-of", "behind-of"};
  return {};
}

std::set<std::string> TaskOptions(const std::string& verb) {
  if (verb == "start") return {"config", "--"};
  if (verb == "list") return {"limit", "offset"};
  return {};
}

int ListJobs(const Session& s, const Args& args) {
  if (int rc = s.ExpectPositionals(args, 2, kJobUsage)) return rc;
  v1::GetJobsRequest req;
  req.set_resource_pool(args.Option("pool").value_or(""));
  int offset = 0, limit = 0;
  if (int rc = s.ReadPage(args, offset, limit)) return rc;
  req.set_offset(offset);
  req.set_limit(limit);
  auto stub = s.Stub<v1::JobService>();
  if (stub == nullptr) return 2;
  v1::GetJobsResponse resp;
  if (int rc =
          s.Check(s.Retried([&](grpc::ClientContext* c) { return stub->GetJobs(c, req, &resp); })))
    return rc;
  std::vector<std::vector<std::string>> rows;
  for (const v1::Job& j : resp.jobs()) {
    // position is 0-based; # counts from 1, as the count under the table does.
    rows.push_back({j.resource_pool(), std::to_string(j.position() + 1), j.job_id(),
                    EnumName(v1::TaskType_descriptor(), j.type(), "TASK_TYPE_"), j.name(),
                    EnumName(v1::JobState_descriptor(), j.state(), "JOB_STATE_"), PriorityText(j),
                    absl::StrCat(j.allocated_slots(), "/", j.requested_slots()), j.username(),
                    absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixMillis(j.submit_time_ms()),
                                     absl::UTCTimeZone()),
                    EtaText(j), j.pending_reason().empty() ? "-" : j.pending_reason()});
  }
  PrintTable(s.out,
             {"POOL", "#", "JOB", "TYPE", "NAME", "STATE", "PRIORITY", "SLOTS", "USER",
              "SUBMITTED (UTC)", "ETA (UTC)", "PENDING REASON"},
             rows);
  s.PrintCount(resp.jobs_size(), resp.pagination(), "job");
  return 0;
}

// phalanx job why JOB: why it waits, when it is expected to start, and what would start it now.
int Why(const Session& s, const Args& args) {
  if (int rc = s.ExpectPositionals(args, 3, kJobUsage)) return rc;
  v1::GetJobRequest req;
  req.set_job_id(args.positional[2]);
  auto stub = s.Stub<v1::JobService>();
  if (stub == nullptr) return 2;
  v1::GetJobResponse resp;
  if (int rc =
          s.Check(s.Retried([&](grpc::ClientContext* c) { return stub->GetJob(c, req, &resp); })))
    return rc;
  const v1::Job& j = resp.job();
  s.out << "Job " << j.job_id() << " (" << j.username() << "), "
        << EnumName(v1::JobState_descriptor(), j.state(), "JOB_STATE_") << ": #" << j.position() + 1
        << " in pool " << j.resource_pool() << ", " << j.jobs_ahead() << " queued ahead, priority "
        << PriorityText(j) << "\n";
  if (j.state() != v1::JOB_STATE_QUEUED) return 0;
  s.out << "Why: "
        << (j.pending_reason().empty() ? "no reason written yet" : Printable(j.pending_reason()))
        << "\n";
  if (j.eta_ms() > 0) {
    const absl::Duration in = absl::FromUnixMillis(j.eta_ms()) - absl::Now();
    s.out << "Expected start: " << EtaText(j) << " UTC ("
          << (in > absl::ZeroDuration()
                  ? absl::StrCat("in ", absl::FormatDuration(absl::Trunc(in, absl::Minutes(1))))
                  : "due")
          << ")\n";
  } else {
    s.out << "Expected start: none"
          << (j.eta_note().empty() ? " yet (no forecast made)"
                                   : absl::StrCat(": ", Printable(j.eta_note())))
          << "\n";
  }
  if (!j.eta_basis().empty()) s.out << "  its runtime: " << Printable(j.eta_basis()) << "\n";
  if (!j.has_what_if()) return 0;
  const v1::WhatIf& w = j.what_if();
  if (w.has_slots() || w.has_priority() || w.has_pool()) s.out << "It would start now:\n";
  if (w.has_slots()) s.out << "  with at most " << w.slots() << " slots\n";
  if (w.has_priority()) {
    s.out << "  at priority >= " << w.priority();
    if (w.victims_size() > 0) s.out << ", preempting " << RefsText(w.victims());
    s.out << "\n";
  }
  if (w.has_pool()) {
    s.out << "  in resource pool " << Printable(w.pool()) << " (phalanx job set-pool)\n";
  }
  if (w.ahead_size() > 0) s.out << "Waiting ahead of it: " << RefsText(w.ahead()) << "\n";
  return 0;
}

int Stats(const Session& s, const Args& args) {
  if (int rc = s.ExpectPositionals(args, 2, kJobUsage)) return rc;
  auto stub = s.Stub<v1::JobService>();
  if (stub == nullptr) return 2;
  v1::GetJobQueueStatsResponse resp;
  if (int rc = s.Check(
          s.Retried([&](grpc::ClientContext* c) { return stub->GetJobQueueStats(c, {}, &resp); })))
    return rc;
  std::vector<std::vector<std::string>> rows;
  for (const v1::QueueStats& q : resp.results()) {
    rows.push_back({q.resource_pool(), std::to_string(q.queued_count()),
                    std::to_string(q.scheduled_count()), std::to_string(q.backfilled_count()),
                    absl::StrCat(q.allocated_slots(), "/", q.requested_slots())});
  }
  PrintTable(s.out, {"POOL", "QUEUED", "SCHEDULED", "BACKFILLED", "SLOTS"}, rows);
  return 0;
}

// move, set-priority or set-pool.
int Update(const Session& s, const Args& args) {
  const std::string& verb = args.positional[1];
  v1::UpdateJobQueueRequest req;
  v1::QueueControl* u = req.add_updates();
  int priority = 0;
  if (verb == "move") {
    if (int rc = s.ExpectPositionals(args, 3, kJobUsage)) return rc;
    const std::optional<std::string> ahead = args.Option("ahead-of");
    const std::optional<std::string> behind = args.Option("behind-of");
    if (ahead && behind) return s.Usage("job move: give --ahead-of or --behind-of, not both");
    if (ahead) {
      u->set_ahead_of(*ahead);
    } else if (behind) {
      u->set_behind_of(*behind);
    } else {
      return s.Usage(kJobUsage);
    }
  } else if (verb == "set-priority") {
    if (int rc = s.ExpectPositionals(args, 4, kJobUsage)) return rc;
    if (int rc = s.ReadNumber("priority", args.positional[3], priority)) return rc;
    u->set_priority(priority);
  } else if (verb == "set-pool") {
    if (int rc = s.ExpectPositionals(args, 4, kJobUsage)) return rc;
    u->set_resource_pool(args.positional[3]);
  } else {
    return s.Usage(kJobUsage);
  }
  u->set_job_id(args.positional[2]);
  auto stub = s.Stub<v1::JobService>();
  if (stub == nullptr) return 2;
  v1::UpdateJobQueueResponse resp;
  if (int rc = s.Check(
          s.Retried([&](grpc::ClientContext* c) { return stub->UpdateJobQueue(c, req, &resp); })))
    return rc;
  if (verb == "set-priority") {
    PrintPrioritySet(s, u->job_id(), priority);
  } else {
    s.out << "Job " << u->job_id() << ": " << verb << " done\n";
  }
  return 0;
}

v1::TaskType TypeOf(const std::string& kind) {
  if (kind == "cmd") return v1::TASK_TYPE_COMMAND;
  if (kind == "notebook") return v1::TASK_TYPE_NOTEBOOK;
  if (kind == "shell") return v1::TASK_TYPE_SHELL;
  return v1::TASK_TYPE_TENSORBOARD;
}

int StartTask(const Session& s, const std::string& kind, const Args& args) {
  v1::LaunchTaskRequest req;
  req.set_type(TypeOf(kind));
  if (std::optional<std::string> file = args.Option("config");
      file && !ReadWholeFile(*file, *req.mutable_config())) {
    return s.Usage("cannot read --config " + *file);
  }
  if (args.positional.size() > 2) {
    const std::vector<std::string> words(args.positional.begin() + 2, args.positional.end());
    return s.Usage(absl::StrCat("put the entrypoint after --: phalanx ", kind, " start -- ",
                                absl::StrJoin(words, " ")));
  }
  for (const std::string& word : args.rest) req.add_entrypoint(word);
  auto stub = s.Stub<v1::TaskService>();
  if (stub == nullptr) return 2;
  v1::LaunchTaskResponse resp;
  if (int rc = s.Check(stub->LaunchTask(s.Context().get(), req, &resp))) return rc;
  s.out << "Started " << kind << " " << resp.task().id() << " (" << resp.task().slots()
        << " slot(s) in pool " << resp.task().resource_pool() << ")\n";
  return 0;
}

int ListTasks(const Session& s, const std::string& kind, const Args& args,
              const std::string& usage) {
  if (int rc = s.ExpectPositionals(args, 2, usage)) return rc;
  v1::ListTasksRequest req;
  req.set_type(TypeOf(kind));
  int offset = 0, limit = 0;
  if (int rc = s.ReadPage(args, offset, limit)) return rc;
  req.set_offset(offset);
  req.set_limit(limit);
  auto stub = s.Stub<v1::TaskService>();
  if (stub == nullptr) return 2;
  v1::ListTasksResponse resp;
  if (int rc = s.Check(
          s.Retried([&](grpc::ClientContext* c) { return stub->ListTasks(c, req, &resp); })))
    return rc;
  std::vector<std::vector<std::string>> rows;
  for (const v1::Task& t : resp.tasks()) {
    rows.push_back(
        {t.id(), t.name(), EnumName(v1::TaskState_descriptor(), t.state(), "TASK_STATE_"),
         t.allocation_id().empty() ? "-"
                                   : EnumName(v1::AllocationState_descriptor(),
                                              t.allocation_state(), "ALLOCATION_STATE_"),
         t.resource_pool(), std::to_string(t.slots()), std::to_string(t.priority()), t.username()});
  }
  PrintTable(s.out, {"ID", "NAME", "STATE", "ALLOCATION", "POOL", "SLOTS", "PRIORITY", "USER"},
             rows);
  s.PrintCount(resp.tasks_size(), resp.pagination(), kind);
  return 0;
}

}  // namespace

int RunJobCommand(const Session& s, const Args& args) {
  if (args.Has("help")) return s.Help(kJobUsage);
  if (args.positional.size() < 2) return s.Usage(kJobUsage);
  const std::string& verb = args.positional[1];
  if (int rc = s.CheckOptions(args, JobOptions(verb))) return rc;
  if (verb == "list") return ListJobs(s, args);
  if (verb == "why") return Why(s, args);
  if (verb == "stats") return Stats(s, args);
  return Update(s, args);
}

int RunTaskCommand(const Session& s, const std::string& kind, const Args& args) {
  const std::string usage = absl::StrCat("usage: phalanx ", kind,
                                         " start [--config FILE] [-- ENTRYPOINT...] "
                                         "| list [--limit N] [--offset N] | kill ID "
                                         "| set-priority ID PRIORITY");
  if (args.Has("help")) return s.Help(usage);
  if (args.positional.size() < 2) return s.Usage(usage);
  const std::string& verb = args.positional[1];
  if (int rc = s.CheckOptions(args, TaskOptions(verb))) return rc;
  if (verb == "start") return StartTask(s, kind, args);
  if (verb == "list") return ListTasks(s, kind, args, usage);
  const bool set_priority = verb == "set-priority";
  if (!set_priority && verb != "kill") return s.Usage(usage);
  if (int rc = s.ExpectPositionals(args, set_priority ? 4 : 3, usage)) return rc;
  const std::string& id = args.positional[2];
  int priority = 0;
  if (set_priority) {
    if (int rc = s.ReadNumber("priority", args.positional[3], priority)) return rc;
  }
  auto stub = s.Stub<v1::TaskService>();
  if (stub == nullptr) return 2;
  grpc::Status status;
  if (set_priority) {
    v1::SetTaskPriorityRequest req;
    req.set_id(id);
    req.set_priority(priority);
    v1::SetTaskPriorityResponse resp;
    status =
        s.Retried([&](grpc::ClientContext* c) { return stub->SetTaskPriority(c, req, &resp); });
  } else {
    v1::KillTaskRequest req;
    req.set_id(id);
    v1::KillTaskResponse resp;
    status = s.Retried([&](grpc::ClientContext* c) { return stub->KillTask(c, req, &resp); });
  }
  if (int rc = s.Check(status)) return rc;
  s.out << kind << " " << id << ": " << verb << " done\n";
  return 0;
}

}  // namespace phalanx::cli

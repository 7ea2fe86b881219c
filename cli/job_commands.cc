// phalanx job list|move|set-priority|set-pool|stats, and the task commands
// (cmd|notebook|shell|tensorboard start|list|kill|set-priority).
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "cli/session.h"
#include "phalanx/v1/job.grpc.pb.h"
#include "phalanx/v1/task.grpc.pb.h"

namespace phalanx::cli {
namespace {

constexpr char kJobUsage[] =
    "usage: phalanx job list [--pool P] [--limit N] [--offset N] "
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

std::string Suffix(const std::string& enum_name, const std::string& prefix) {
  return enum_name.substr(prefix.size());
}

int ListJobs(const Session& s, v1::JobService::Stub& stub, const Args& args) {
  v1::GetJobsRequest req;
  req.set_resource_pool(args.Option("pool").value_or(""));
  int offset = 0, limit = 0;
  if (int rc = s.ReadPage(args, offset, limit)) return rc;
  req.set_offset(offset);
  req.set_limit(limit);
  v1::GetJobsResponse resp;
  if (int rc = s.Check(stub.GetJobs(s.Context().get(), req, &resp))) return rc;
  std::vector<std::vector<std::string>> rows;
  for (const v1::Job& j : resp.jobs()) {
    rows.push_back({j.resource_pool(), std::to_string(j.position()), j.job_id(),
                    Suffix(v1::TaskType_Name(j.type()), "TASK_TYPE_"), j.name(),
                    Suffix(v1::JobState_Name(j.state()), "JOB_STATE_"),
                    std::to_string(j.priority()),
                    absl::StrCat(j.allocated_slots(), "/", j.requested_slots()), j.username(),
                    absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixMillis(j.submit_time_ms()),
                                     absl::UTCTimeZone()),
                    j.pending_reason().empty() ? "-" : j.pending_reason()});
  }
  PrintTable(s.out,
             {"POOL", "#", "JOB", "TYPE", "NAME", "STATE", "PRIORITY", "SLOTS", "USER",
              "SUBMITTED (UTC)", "PENDING REASON"},
             rows);
  s.PrintCount(resp.jobs_size(), resp.pagination(), "job");
  return 0;
}

int Stats(const Session& s, v1::JobService::Stub& stub) {
  v1::GetJobQueueStatsResponse resp;
  if (int rc = s.Check(stub.GetJobQueueStats(s.Context().get(), {}, &resp))) return rc;
  std::vector<std::vector<std::string>> rows;
  for (const v1::QueueStats& q : resp.results()) {
    rows.push_back({q.resource_pool(), std::to_string(q.queued_count()),
                    std::to_string(q.scheduled_count()), std::to_string(q.backfilled_count()),
                    absl::StrCat(q.allocated_slots(), "/", q.requested_slots())});
  }
  PrintTable(s.out, {"POOL", "QUEUED", "SCHEDULED", "BACKFILLED", "SLOTS"}, rows);
  return 0;
}

int Update(const Session& s, v1::JobService::Stub& stub, const Args& args) {
  const std::string& verb = args.positional[1];
  if (args.positional.size() < 3) return s.Usage(kJobUsage);
  v1::UpdateJobQueueRequest req;
  v1::QueueControl* u = req.add_updates();
  u->set_job_id(args.positional[2]);
  int priority = 0;
  if (verb == "move" && args.Option("ahead-of")) {
    u->set_ahead_of(*args.Option("ahead-of"));
  } else if (verb == "move" && args.Option("behind-of")) {
    u->set_behind_of(*args.Option("behind-of"));
  } else if (verb == "set-priority" && args.positional.size() == 4 &&
             absl::SimpleAtoi(args.positional[3], &priority)) {
    u->set_priority(priority);
  } else if (verb == "set-pool" && args.positional.size() == 4) {
    u->set_resource_pool(args.positional[3]);
  } else {
    return s.Usage(kJobUsage);
  }
  v1::UpdateJobQueueResponse resp;
  if (int rc = s.Check(stub.UpdateJobQueue(s.Context().get(), req, &resp))) return rc;
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

int StartTask(const Session& s, v1::TaskService::Stub& stub, const std::string& kind,
              const Args& args) {
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
  v1::LaunchTaskResponse resp;
  if (int rc = s.Check(stub.LaunchTask(s.Context().get(), req, &resp))) return rc;
  s.out << "Started " << kind << " " << resp.task().id() << " (" << resp.task().slots()
        << " slot(s) in pool " << resp.task().resource_pool() << ")\n";
  return 0;
}

int ListTasks(const Session& s, v1::TaskService::Stub& stub, const std::string& kind,
              const Args& args) {
  v1::ListTasksRequest req;
  req.set_type(TypeOf(kind));
  int offset = 0, limit = 0;
  if (int rc = s.ReadPage(args, offset, limit)) return rc;
  req.set_offset(offset);
  req.set_limit(limit);
  v1::ListTasksResponse resp;
  if (int rc = s.Check(stub.ListTasks(s.Context().get(), req, &resp))) return rc;
  std::vector<std::vector<std::string>> rows;
  for (const v1::Task& t : resp.tasks()) {
    rows.push_back(
        {t.id(), t.name(), Suffix(v1::TaskState_Name(t.state()), "TASK_STATE_"),
         t.allocation_id().empty()
             ? "-"
             : Suffix(v1::AllocationState_Name(t.allocation_state()), "ALLOCATION_STATE_"),
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
  auto stub = v1::JobService::NewStub(s.channel);
  if (verb == "list") return ListJobs(s, *stub, args);
  if (verb == "stats") return Stats(s, *stub);
  return Update(s, *stub, args);
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
  auto stub = v1::TaskService::NewStub(s.channel);
  if (verb == "start") return StartTask(s, *stub, kind, args);
  if (verb == "list") return ListTasks(s, *stub, kind, args);
  if (args.positional.size() < 3) return s.Usage(usage);
  const std::string& id = args.positional[2];
  grpc::Status status;
  int priority = 0;
  if (verb == "kill") {
    v1::KillTaskRequest req;
    req.set_id(id);
    v1::KillTaskResponse resp;
    status = stub->KillTask(s.Context().get(), req, &resp);
  } else if (verb == "set-priority" && args.positional.size() == 4 &&
             absl::SimpleAtoi(args.positional[3], &priority)) {
    v1::SetTaskPriorityRequest req;
    req.set_id(id);
    req.set_priority(priority);
    v1::SetTaskPriorityResponse resp;
    status = stub->SetTaskPriority(s.Context().get(), req, &resp);
  } else {
    return s.Usage(usage);
  }
  if (int rc = s.Check(status)) return rc;
  s.out << kind << " " << id << ": " << verb << " done\n";
  return 0;
}

}  // namespace phalanx::cli

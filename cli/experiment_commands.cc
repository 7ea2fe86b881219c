// phalanx experiment create|list|describe|pause|activate|kill|set-priority.
#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "cli/session.h"
#include "phalanx/v1/experiment.grpc.pb.h"

namespace phalanx::cli {
namespace {

constexpr char kUsage[] =
    "usage: phalanx experiment create FILE [--paused] | list [--state S] [--limit N] [--offset N] "
    "| describe ID | pause ID | activate ID | kill ID | set-priority ID PRIORITY";

// The options of each verb, the global ones aside.
std::set<std::string> OptionsOf(const std::string& verb) {
  if (verb == "create") return {"paused"};
  if (verb == "list") return {"state", "limit", "offset"};
  return {};
}

std::string StateName(v1::ExperimentState s) {
  return EnumName(v1::ExperimentState_descriptor(), s, "EXPERIMENT_STATE_");
}

int Create(const Session& s, const Args& args) {
  if (int rc = s.ExpectPositionals(args, 3, kUsage)) return rc;
  v1::CreateExperimentRequest req;
  if (!ReadWholeFile(args.positional[2], *req.mutable_config())) {
    return s.Usage("cannot read " + args.positional[2]);
  }
  req.set_activate(!args.Has("paused"));
  auto stub = s.Stub<v1::ExperimentService>();
  if (stub == nullptr) return 2;
  v1::CreateExperimentResponse resp;
  if (int rc = s.Check(stub->CreateExperiment(s.Context().get(), req, &resp))) return rc;
  const v1::Experiment& e = resp.experiment();
  s.out << "Created experiment " << e.id() << " (" << e.name() << "): " << e.num_trials()
        << " trial(s) of " << e.slots_per_trial() << " slot(s) in pool " << e.resource_pool()
        << ", priority " << e.priority() << ", " << StateName(e.state()) << "\n";
  return 0;
}

int List(const Session& s, const Args& args) {
  if (int rc = s.ExpectPositionals(args, 2, kUsage)) return rc;
  v1::ListExperimentsRequest req;
  if (std::optional<std::string> state = args.Option("state")) {
    v1::ExperimentState st;
    if (!v1::ExperimentState_Parse("EXPERIMENT_STATE_" + absl::AsciiStrToUpper(*state), &st)) {
      return s.Usage("--state: one of ACTIVE, PAUSED, COMPLETED, CANCELED, ERROR");
    }
    req.add_states(st);
  }
  int offset = 0, limit = 0;
  if (int rc = s.ReadPage(args, offset, limit)) return rc;
  req.set_offset(offset);
  req.set_limit(limit);
  auto stub = s.Stub<v1::ExperimentService>();
  if (stub == nullptr) return 2;
  v1::ListExperimentsResponse resp;
  if (int rc = s.Check(
          s.Retried([&](grpc::ClientContext* c) { return stub->ListExperiments(c, req, &resp); })))
    return rc;
  std::vector<std::vector<std::string>> rows;
  for (const v1::Experiment& e : resp.experiments()) {
    rows.push_back({std::to_string(e.id()), e.name(), StateName(e.state()), e.resource_pool(),
                    std::to_string(e.priority()), std::to_string(e.slots_per_trial()),
                    e.username()});
  }
  PrintTable(s.out, {"ID", "NAME", "STATE", "POOL", "PRIORITY", "SLOTS/TRIAL", "USER"}, rows);
  s.PrintCount(resp.experiments_size(), resp.pagination(), "experiment");
  return 0;
}

int Describe(const Session& s, v1::ExperimentService::Stub& stub, int64_t id) {
  v1::GetExperimentRequest req;
  req.set_id(id);
  v1::GetExperimentResponse resp;
  if (int rc = s.Check(stub.GetExperiment(s.Context().get(), req, &resp))) return rc;
  const v1::Experiment& e = resp.experiment();
  s.out << "Experiment " << e.id() << " (" << e.name() << ")  job " << e.job_id() << "\n"
        << "  state " << StateName(e.state()) << ", pool " << e.resource_pool() << ", priority "
        << e.priority() << ", " << e.slots_per_trial() << " slot(s) per trial, by " << e.username()
        << "\n";
  if (e.has_best_validation_metric()) {
    s.out << "  best validation metric " << absl::StrFormat("%.6g", e.best_validation_metric())
          << "\n";
  }
  s.out << "\n";
  bool searched = false;  // adaptive_asha: where each trial is in its bracket.
  for (const v1::Trial& t : resp.trials()) searched = searched || !t.searcher_progress().empty();
  std::vector<std::vector<std::string>> rows;
  for (const v1::Trial& t : resp.trials()) {
    std::string alloc = t.allocation_id().empty()
                            ? "-"
                            : absl::StrCat(t.allocation_id(), " (",
                                           EnumName(v1::AllocationState_descriptor(),
                                                    t.allocation_state(), "ALLOCATION_STATE_"),
                                           ")");
    rows.push_back({std::to_string(t.id()),
                    EnumName(v1::TrialState_descriptor(), t.state(), "TRIAL_STATE_"),
                    t.hparams_json(), std::to_string(t.runs()), std::to_string(t.restarts()),
                    t.latest_checkpoint().empty() ? "-" : t.latest_checkpoint(), alloc,
                    t.has_best_validation_metric()
                        ? absl::StrFormat("%.6g", t.best_validation_metric())
                        : "-"});
    if (searched) rows.back().push_back(t.searcher_progress());
  }
  std::vector<std::string> header = {"TRIAL",      "STATE",      "HPARAMS", "RUNS", "RESTARTS",
                                     "CHECKPOINT", "ALLOCATION", "BEST"};
  if (searched) header.push_back("SEARCHER");
  PrintTable(s.out, header, rows);
  for (const v1::Trial& t : resp.trials()) {
    if (!t.error().empty()) s.out << "trial " << t.id() << ": " << t.error() << "\n";
  }
  return 0;
}

// The trials of experiment job `job_id` ("exp-N") whose pods are scheduled; 0 for other jobs and
// when the master cannot say.
int ScheduledTrials(const Session& s, const std::string& job_id) {
  absl::string_view number = job_id;
  int64_t id = 0;
  if (!absl::ConsumePrefix(&number, "exp-") || !absl::SimpleAtoi(number, &id)) return 0;
  v1::GetExperimentRequest req;
  req.set_id(id);
  v1::GetExperimentResponse resp;
  auto stub = s.Stub<v1::ExperimentService>();
  if (stub == nullptr ||
      !s.Retried([&](grpc::ClientContext* c) { return stub->GetExperiment(c, req, &resp); }).ok())
    return 0;
  return static_cast<int>(
      std::count_if(resp.trials().begin(), resp.trials().end(), [](const v1::Trial& t) {
        return t.allocation_state() == v1::ALLOCATION_STATE_SCHEDULED ||
               t.allocation_state() == v1::ALLOCATION_STATE_RUNNING ||
               t.allocation_state() == v1::ALLOCATION_STATE_PREEMPTING;
      }));
}

int SetPriority(const Session& s, v1::ExperimentService::Stub& stub, int64_t id, int priority) {
  v1::SetExperimentPriorityRequest req;
  req.set_id(id);
  req.set_priority(priority);
  v1::SetExperimentPriorityResponse resp;
  if (int rc = s.Check(stub.SetExperimentPriority(s.Context().get(), req, &resp))) return rc;
  PrintPrioritySet(s, absl::StrCat("exp-", id), priority);
  return 0;
}

// pause, activate or kill.
int Act(const Session& s, v1::ExperimentService::Stub& stub, const std::string& verb, int64_t id) {
  grpc::Status status;
  if (verb == "pause") {
    v1::PauseExperimentRequest req;
    req.set_id(id);
    v1::PauseExperimentResponse resp;
    status = stub.PauseExperiment(s.Context().get(), req, &resp);
  } else if (verb == "activate") {
    v1::ActivateExperimentRequest req;
    req.set_id(id);
    v1::ActivateExperimentResponse resp;
    status = stub.ActivateExperiment(s.Context().get(), req, &resp);
  } else {
    v1::KillExperimentRequest req;
    req.set_id(id);
    v1::KillExperimentResponse resp;
    status = stub.KillExperiment(s.Context().get(), req, &resp);
  }
  if (int rc = s.Check(status)) return rc;
  s.out << "Experiment " << id << ": " << verb << " done\n";
  return 0;
}

}  // namespace

int RunExperimentCommand(const Session& s, const Args& args) {
  if (args.Has("help")) return s.Help(kUsage);
  if (args.positional.size() < 2) return s.Usage(kUsage);
  const std::string& verb = args.positional[1];
  if (int rc = s.CheckOptions(args, OptionsOf(verb))) return rc;
  if (verb == "create") return Create(s, args);
  if (verb == "list") return List(s, args);
  const bool set_priority = verb == "set-priority";
  if (!set_priority && verb != "describe" && verb != "pause" && verb != "activate" &&
      verb != "kill") {
    return s.Usage(kUsage);
  }
  if (int rc = s.ExpectPositionals(args, set_priority ? 4 : 3, kUsage)) return rc;
  int64_t id = 0;
  if (int rc = s.ReadNumber("experiment id", args.positional[2], id)) return rc;
  int priority = 0;
  if (set_priority) {
    if (int rc = s.ReadNumber("priority", args.positional[3], priority)) return rc;
  }
  auto stub = s.Stub<v1::ExperimentService>();
  if (stub == nullptr) return 2;
  if (verb == "describe") return Describe(s, *stub, id);
  if (set_priority) return SetPriority(s, *stub, id, priority);
  return Act(s, *stub, verb, id);
}

void PrintPrioritySet(const Session& s, const std::string& job_id, int priority) {
  s.out << "Priority of " << job_id << " set to " << priority;
  if (const int n = ScheduledTrials(s, job_id); n > 0) {
    s.out << "; its " << n
          << " running trial(s) keep the priority they started with until they next start";
  }
  s.out << "\n";
}

}  // namespace phalanx::cli

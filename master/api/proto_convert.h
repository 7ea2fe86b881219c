// The only place that knows both the master's records and phalanx.v1 messages: conversions both
// ways, and absl::Status → grpc::Status (same code numbering).
#ifndef PHALANX_MASTER_API_PROTO_CONVERT_H_
#define PHALANX_MASTER_API_PROTO_CONVERT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/support/status.h"
#include "master/jobs/job_manager.h"
#include "master/store/records.h"
#include "phalanx/v1/auth.pb.h"
#include "phalanx/v1/experiment.pb.h"
#include "phalanx/v1/job.pb.h"
#include "phalanx/v1/metrics.pb.h"
#include "phalanx/v1/task.pb.h"

namespace phalanx::master {

grpc::Status ToGrpcStatus(const absl::Status& status);

// A request's page size: 0 (or less) means 100; at most 1000.
int PageLimit(int requested);

// "exp-12" ↔ 12.
std::string ExperimentJobId(int64_t id);
int64_t ExperimentNumber(const std::string& job_id);

std::optional<TaskType> FromProto(v1::TaskType type);
v1::TaskType ToProto(TaskType type);
std::optional<RunState> FromProto(v1::ExperimentState state);
std::optional<RunState> FromProto(v1::TaskState state);
std::optional<QueueState> FromProto(v1::JobState state);
// A list request's `states` (values of `Enum`: ExperimentState or TaskState for run states,
// JobState for queue states) as `State`s; InvalidArgument naming states[i] for a value that is
// none.
template <typename State, typename Enum>
absl::StatusOr<std::vector<State>> StatesOf(const google::protobuf::RepeatedField<int>& states) {
  std::vector<State> out;
  for (int i = 0; i < states.size(); ++i) {
    std::optional<State> state = FromProto(static_cast<Enum>(states[i]));
    if (!state) {
      return absl::InvalidArgumentError(
          absl::StrCat("states[", i, "]: ", states[i], " is not a state to list by"));
    }
    out.push_back(*state);
  }
  return out;
}

void ToProto(const User& user, v1::User* out);
void ToProto(const JobRecord& job, v1::Experiment* out);
void ToProto(const TrialView& trial, int64_t experiment_id, v1::Trial* out);
// A task's view: the job and its one trial.
void ToProto(const JobView& task, v1::Task* out);
v1::JobState ToProto(QueueState state);
std::optional<MetricGroup> FromProto(v1::MetricGroup group);
MetricReport FromProto(const v1::MetricReport& report);
void ToProto(const MetricReport& report, v1::MetricReport* out);
// Sets the experiment's best_validation_metric and its trials' (those that have one).
void ToProto(const BestValidationValues& best, v1::GetExperimentResponse* out);
void ToProto(const QueueEntry& entry, v1::Job* out);

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_API_PROTO_CONVERT_H_

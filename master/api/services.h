// The phalanx.v1 gRPC services. Each handler authenticates the caller, translates the request
// (proto_convert.h), delegates to the JobManager or the Store, and translates the answer back.
#ifndef PHALANX_MASTER_API_SERVICES_H_
#define PHALANX_MASTER_API_SERVICES_H_

#include <functional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "master/api/login_limiter.h"
#include "master/jobs/job_manager.h"
#include "master/store/store.h"
#include "phalanx/v1/allocation.grpc.pb.h"
#include "phalanx/v1/auth.grpc.pb.h"
#include "phalanx/v1/experiment.grpc.pb.h"
#include "phalanx/v1/job.grpc.pb.h"
#include "phalanx/v1/task.grpc.pb.h"

namespace phalanx::master {

// The caller's identity from metadata "authorization: Bearer <token>". A token the store vouched
// for is trusted without asking again for kTrustFor (Logout and SetUserPassword forget the tokens
// they revoke at once). Tokens whose trust ran out are swept when the trusted ones grow to twice
// as many as the last sweep left (and more than kSweepAbove), so memory follows the tokens seen
// in the last kTrustFor, at amortized O(1) per call.
class Authenticator {
 public:
  static constexpr absl::Duration kTrustFor = absl::Seconds(30);
  static constexpr size_t kSweepAbove = 64;

  // `now` is the clock trust is timed by.
  explicit Authenticator(Store& store, std::function<absl::Time()> now = absl::Now)
      : store_(store), now_(std::move(now)) {}
  // Unauthenticated without a valid token.
  absl::StatusOr<User> Authenticate(const grpc::ServerContext& context) const;
  // Authenticate of the raw bearer token.
  absl::StatusOr<User> AuthenticateToken(const std::string& token) const;
  // Call after the store revoked the token (or the user's tokens), so that an Authenticate that
  // asked the store before does not trust it again.
  void Forget(const std::string& token) const;
  void ForgetUser(int64_t user_id) const;
  // The raw bearer token, or "" when there is none.
  static std::string BearerToken(const grpc::ServerContext& context);
  // How many tokens are held as trusted, those whose trust ran out but are not swept yet included.
  size_t trusted_count() const;

 private:
  // Trusts `hash` until now + kTrustFor; sweeps when the trusted tokens have grown (see above).
  void Trust(const std::string& hash, const User& user, absl::Time now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Store& store_;
  const std::function<absl::Time()> now_;
  mutable absl::Mutex mu_;
  // By token hash: the user and until when it is trusted.
  mutable absl::flat_hash_map<std::string, std::pair<User, absl::Time>> trusted_
      ABSL_GUARDED_BY(mu_);
  // The size of trusted_ past which Trust sweeps.
  mutable size_t sweep_above_ ABSL_GUARDED_BY(mu_) = kSweepAbove;
  // Counts Forget and ForgetUser calls: Authenticate trusts what the store said only when none
  // came in between.
  mutable uint64_t forgets_ ABSL_GUARDED_BY(mu_) = 0;
};

// Creates the built-in users admin (an admin) and determined with `default_password` unless they
// exist. An empty `default_password` is used only with `allow_empty_password`; otherwise a random
// password is generated and, when a user was created with it, passed to `log` (once: later starts
// create nobody).
absl::Status EnsureBuiltinUsers(Store& store, const std::string& default_password,
                                bool allow_empty_password = false,
                                const std::function<void(const std::string&)>& log = nullptr);

// Login checks the password of unknown users against a dummy hash (the same time as a wrong
// password) and refuses, with RESOURCE_EXHAUSTED and trailing metadata `retry-after` (seconds),
// user names and peers with too many recent failures (LoginLimiter).
class AuthServiceImpl final : public v1::AuthService::Service {
 public:
  AuthServiceImpl(Store& store, const Authenticator& auth) : store_(store), auth_(auth) {}
  grpc::Status Login(grpc::ServerContext*, const v1::LoginRequest*, v1::LoginResponse*) override;
  grpc::Status Logout(grpc::ServerContext*, const v1::LogoutRequest*, v1::LogoutResponse*) override;
  grpc::Status CurrentUser(grpc::ServerContext*, const v1::CurrentUserRequest*,
                           v1::CurrentUserResponse*) override;
  grpc::Status CreateUser(grpc::ServerContext*, const v1::CreateUserRequest*,
                          v1::CreateUserResponse*) override;
  grpc::Status SetUserPassword(grpc::ServerContext*, const v1::SetUserPasswordRequest*,
                               v1::SetUserPasswordResponse*) override;

 private:
  Store& store_;
  const Authenticator& auth_;
  LoginLimiter limiter_;
};

class ExperimentServiceImpl final : public v1::ExperimentService::Service {
 public:
  ExperimentServiceImpl(JobManager& jobs, const Authenticator& auth) : jobs_(jobs), auth_(auth) {}
  grpc::Status CreateExperiment(grpc::ServerContext*, const v1::CreateExperimentRequest*,
                                v1::CreateExperimentResponse*) override;
  grpc::Status GetExperiment(grpc::ServerContext*, const v1::GetExperimentRequest*,
                             v1::GetExperimentResponse*) override;
  grpc::Status ListExperiments(grpc::ServerContext*, const v1::ListExperimentsRequest*,
                               v1::ListExperimentsResponse*) override;
  grpc::Status PauseExperiment(grpc::ServerContext*, const v1::PauseExperimentRequest*,
                               v1::PauseExperimentResponse*) override;
  grpc::Status ActivateExperiment(grpc::ServerContext*, const v1::ActivateExperimentRequest*,
                                  v1::ActivateExperimentResponse*) override;
  grpc::Status KillExperiment(grpc::ServerContext*, const v1::KillExperimentRequest*,
                              v1::KillExperimentResponse*) override;
  grpc::Status SetExperimentPriority(grpc::ServerContext*, const v1::SetExperimentPriorityRequest*,
                                     v1::SetExperimentPriorityResponse*) override;
  // trial_metrics_service.cc
  grpc::Status GetTrialMetrics(grpc::ServerContext*, const v1::GetTrialMetricsRequest*,
                               v1::GetTrialMetricsResponse*) override;
  // trial_logs_service.cc
  grpc::Status GetTrialLogs(grpc::ServerContext*, const v1::GetTrialLogsRequest*,
                            grpc::ServerWriter<v1::GetTrialLogsResponse>*) override;

 private:
  JobManager& jobs_;
  const Authenticator& auth_;
};

class TaskServiceImpl final : public v1::TaskService::Service {
 public:
  TaskServiceImpl(JobManager& jobs, const Authenticator& auth) : jobs_(jobs), auth_(auth) {}
  grpc::Status LaunchTask(grpc::ServerContext*, const v1::LaunchTaskRequest*,
                          v1::LaunchTaskResponse*) override;
  grpc::Status GetTask(grpc::ServerContext*, const v1::GetTaskRequest*,
                       v1::GetTaskResponse*) override;
  grpc::Status ListTasks(grpc::ServerContext*, const v1::ListTasksRequest*,
                         v1::ListTasksResponse*) override;
  grpc::Status KillTask(grpc::ServerContext*, const v1::KillTaskRequest*,
                        v1::KillTaskResponse*) override;
  grpc::Status SetTaskPriority(grpc::ServerContext*, const v1::SetTaskPriorityRequest*,
                               v1::SetTaskPriorityResponse*) override;

 private:
  JobManager& jobs_;
  const Authenticator& auth_;
};

class JobServiceImpl final : public v1::JobService::Service {
 public:
  JobServiceImpl(JobManager& jobs, const Authenticator& auth) : jobs_(jobs), auth_(auth) {}
  grpc::Status GetJobs(grpc::ServerContext*, const v1::GetJobsRequest*,
                       v1::GetJobsResponse*) override;
  grpc::Status GetJob(grpc::ServerContext*, const v1::GetJobRequest*,
                      v1::GetJobResponse*) override;
  grpc::Status UpdateJobQueue(grpc::ServerContext*, const v1::UpdateJobQueueRequest*,
                              v1::UpdateJobQueueResponse*) override;
  grpc::Status GetJobQueueStats(grpc::ServerContext*, const v1::GetJobQueueStatsRequest*,
                                v1::GetJobQueueStatsResponse*) override;

 private:
  JobManager& jobs_;
  const Authenticator& auth_;
};

class AllocationServiceImpl final : public v1::AllocationService::Service {
 public:
  AllocationServiceImpl(JobManager& jobs, const Authenticator& auth) : jobs_(jobs), auth_(auth) {}
  grpc::Status WatchPreemption(grpc::ServerContext*, const v1::WatchPreemptionRequest*,
                               v1::WatchPreemptionResponse*) override;
  grpc::Status AckPreemption(grpc::ServerContext*, const v1::AckPreemptionRequest*,
                             v1::AckPreemptionResponse*) override;
  grpc::Status ReportCheckpoint(grpc::ServerContext*, const v1::ReportCheckpointRequest*,
                                v1::ReportCheckpointResponse*) override;
  grpc::Status ReportCompletion(grpc::ServerContext*, const v1::ReportCompletionRequest*,
                                v1::ReportCompletionResponse*) override;
  // trial_metrics_service.cc
  grpc::Status ReportMetrics(grpc::ServerContext*, const v1::ReportMetricsRequest*,
                             v1::ReportMetricsResponse*) override;
  grpc::Status GetSearcherOperation(grpc::ServerContext*, const v1::GetSearcherOperationRequest*,
                                    v1::GetSearcherOperationResponse*) override;

 private:
  // The allocation's own token, or the token of its job's owner or of an admin.
  absl::Status Authorize(const grpc::ServerContext& context, const std::string& allocation_id);
  JobManager& jobs_;
  const Authenticator& auth_;
};

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_API_SERVICES_H_

// ExperimentService.GetTrialLogs (see services.h and experiment.proto): the logs of a trial's pods
// through the Kubernetes API, one message per line. Without follow the pods are read one after the
// other; with follow, each pod by its own thread into a queue bounded in bytes that the call's
// thread writes out, until every pod's log ends or the caller leaves. A watchdog per call stops
// the reads when the caller cancels and cancels the call at its time limit, so a caller that
// never reads holds its slot no longer than that.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kube/json.h"
#include "master/api/proto_convert.h"
#include "master/api/services.h"

namespace phalanx::master {
namespace {

constexpr int kMaxLogStreams = 64;        // GetTrialLogs calls at once,
constexpr int kMaxLogStreamsPerUser = 4;  // and of one user.
constexpr size_t kMaxFollowedPods = 64;   // Pods one call follows.
constexpr int kMaxTailLines = 100000;
constexpr int64_t kMaxLogBytes = 16 << 20;   // Read of each pod's log without follow.
constexpr size_t kMaxLine = 64 << 10;        // Longer lines come in pieces.
constexpr size_t kMaxQueuedBytes = 4 << 20;  // Followed lines not yet written.
constexpr absl::Duration kReadLimit = absl::Minutes(10);
constexpr absl::Duration kFollowLimit = absl::Hours(1);

// The calls running, in all and by user.
class StreamSlots {
 public:
  bool Take(const std::string& user) {
    std::lock_guard<std::mutex> lock(mu_);
    if (total_ >= kMaxLogStreams || by_user_[user] >= kMaxLogStreamsPerUser) return false;
    ++total_;
    ++by_user_[user];
    return true;
  }
  void Give(const std::string& user) {
    std::lock_guard<std::mutex> lock(mu_);
    --total_;
    if (--by_user_[user] == 0) by_user_.erase(user);
  }

 private:
  std::mutex mu_;
  int total_ = 0;
  std::map<std::string, int> by_user_;
};
StreamSlots slots;

// One slot for the life of a call.
class Slot {
 public:
  explicit Slot(std::string user) : user_(std::move(user)), held_(slots.Take(user_)) {}
  ~Slot() {
    if (held_) slots.Give(user_);
  }
  bool held() const { return held_; }

 private:
  std::string user_;
  bool held_;
};

// Sets `stop` once the caller cancels, and cancels the call at `limit`; ends with the call.
class Watchdog {
 public:
  Watchdog(grpc::ServerContext& ctx, absl::Duration limit)
      : thread_([this, &ctx, deadline = absl::Now() + limit] {
          std::unique_lock<std::mutex> lock(mu_);
          while (!done_ && !ctx.IsCancelled() && absl::Now() < deadline) {
            cv_.wait_for(lock, std::chrono::milliseconds(200));
          }
          if (!done_ && !ctx.IsCancelled()) ctx.TryCancel();
          stop = true;
        }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  std::atomic<bool> stop{false};

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// Cuts a pod's chunks into lines (without newlines) for `emit`, which returns false to stop.
class LineSplitter {
 public:
  explicit LineSplitter(std::function<bool(std::string)> emit) : emit_(std::move(emit)) {}
  bool Feed(absl::string_view chunk) {
    for (char c : chunk) {
      if (c != '\n') pending_.push_back(c);
      if ((c == '\n' || pending_.size() >= kMaxLine) && !Flush()) return false;
    }
    return true;
  }
  bool Flush() {
    if (pending_.empty()) return true;
    std::string line;
    line.swap(pending_);
    return emit_(std::move(line));
  }

 private:
  std::function<bool(std::string)> emit_;
  std::string pending_;
};

v1::GetTrialLogsResponse LineOf(const LogPod& pod, std::string line) {
  v1::GetTrialLogsResponse out;
  out.set_pod(pod.name);
  out.set_run(pod.run);
  out.set_rank(pod.rank);
  out.set_line(std::move(line));
  return out;
}

LogOptions OptionsOf(const v1::GetTrialLogsRequest& req, const std::atomic<bool>* stop) {
  return LogOptions{.follow = req.follow(),
                    .tail_lines = req.tail_lines(),
                    .limit_bytes = req.follow() ? 0 : kMaxLogBytes,
                    .timeout = req.follow() ? kFollowLimit : kReadLimit,
                    .stop = stop};
}

// The answer when no pod had a line: the first read error (a pod whose container has not started
// yet), else OK.
absl::Status NoLines(const absl::Status& first) {
  if (first.ok()) return first;
  return absl::FailedPreconditionError(
      absl::StrCat("no pod of the trial has a log to read yet: ", first.message()));
}

// Each pod in turn. A pod that is gone has no lines, nor has one whose log cannot be read.
absl::Status ReadInTurn(JobManager& jobs, grpc::ServerContext& ctx, const std::vector<LogPod>& pods,
                        const LogOptions& options,
                        grpc::ServerWriter<v1::GetTrialLogsResponse>& writer) {
  absl::Status first;
  bool any = false;
  for (const LogPod& pod : pods) {
    LineSplitter lines([&](std::string line) {
      any = true;
      return !ctx.IsCancelled() && writer.Write(LineOf(pod, std::move(line)));
    });
    absl::Status s =
        jobs.StreamLog(pod, options, [&](absl::string_view chunk) { return lines.Feed(chunk); });
    if (!absl::IsNotFound(s)) first.Update(s);
    if (!lines.Flush() || ctx.IsCancelled()) break;
  }
  return any ? absl::OkStatus() : NoLines(first);
}

// Every pod at once: one reader thread each, lines through a queue bounded in bytes.
class Follower {
 public:
  Follower(JobManager& jobs, const std::vector<LogPod>& pods, LogOptions options)
      : jobs_(jobs), pods_(pods), options_(options) {}
  ~Follower() {
    Stop();
    for (std::thread& t : readers_) t.join();
  }
  // RESOURCE_EXHAUSTED when a reader thread cannot start (those started stop).
  absl::Status Start() {
    readers_left_ = pods_.size();
    for (const LogPod& pod : pods_) {
      try {
        readers_.emplace_back([this, &pod] { Read(pod); });
      } catch (const std::system_error&) {
        return absl::ResourceExhaustedError("cannot start a log reader thread; try again later");
      }
    }
    return absl::OkStatus();
  }
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
  }
  // Writes lines as they come until every reader ended or the caller left; the first read error
  // when no pod had a line.
  absl::Status WriteOut(grpc::ServerContext& ctx,
                        grpc::ServerWriter<v1::GetTrialLogsResponse>& writer) {
    std::unique_lock<std::mutex> lock(mu_);
    while (!ctx.IsCancelled() && (readers_left_ > 0 || !queue_.empty())) {
      cv_.wait_for(lock, std::chrono::milliseconds(200),
                   [this] { return !queue_.empty() || readers_left_ == 0; });
      while (!queue_.empty()) {
        v1::GetTrialLogsResponse line = std::move(queue_.front());
        queue_.pop_front();
        queued_bytes_ -= line.line().size();
        cv_.notify_all();
        lock.unlock();
        const bool written = writer.Write(line);
        lock.lock();
        if (!written) return absl::OkStatus();
      }
    }
    return any_ ? absl::OkStatus() : NoLines(first_);
  }

 private:
  void Read(const LogPod& pod) {
    LineSplitter lines([&](std::string line) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return queued_bytes_ < kMaxQueuedBytes || stop_; });
      if (stop_) return false;
      any_ = true;
      queued_bytes_ += line.size();
      queue_.push_back(LineOf(pod, std::move(line)));
      cv_.notify_all();
      return true;
    });
    const absl::Status s =
        jobs_.StreamLog(pod, options_, [&](absl::string_view chunk) { return lines.Feed(chunk); });
    lines.Flush();
    std::lock_guard<std::mutex> lock(mu_);
    if (!absl::IsNotFound(s)) first_.Update(s);
    --readers_left_;
    cv_.notify_all();
  }

  JobManager& jobs_;
  const std::vector<LogPod>& pods_;
  const LogOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::deque<v1::GetTrialLogsResponse> queue_;
  size_t queued_bytes_ = 0;
  size_t readers_left_ = 0;
  bool any_ = false;
  absl::Status first_;
  std::vector<std::thread> readers_;
};

absl::Status CheckRequest(const v1::GetTrialLogsRequest& req) {
  if (req.has_rank() && req.rank() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("rank: must be 0 or more, got ", req.rank()));
  }
  if (req.tail_lines() < 0 || req.tail_lines() > kMaxTailLines) {
    return absl::InvalidArgumentError(
        absl::StrCat("tail_lines: 0 to ", kMaxTailLines, ", got ", req.tail_lines()));
  }
  return absl::OkStatus();
}

absl::Status Follow(JobManager& jobs, grpc::ServerContext& ctx, const std::vector<LogPod>& pods,
                    const LogOptions& options,
                    grpc::ServerWriter<v1::GetTrialLogsResponse>& writer) {
  Follower follower(jobs, pods, options);
  KUBE_RETURN_IF_ERROR(follower.Start());
  return follower.WriteOut(ctx, writer);
}

}  // namespace

grpc::Status ExperimentServiceImpl::GetTrialLogs(
    grpc::ServerContext* ctx, const v1::GetTrialLogsRequest* req,
    grpc::ServerWriter<v1::GetTrialLogsResponse>* writer) {
  absl::StatusOr<User> user = auth_.Authenticate(*ctx);
  if (!user.ok()) return ToGrpcStatus(user.status());
  if (absl::Status s = CheckRequest(*req); !s.ok()) return ToGrpcStatus(s);
  const std::optional<int> rank = req->has_rank() ? std::optional<int>(req->rank()) : std::nullopt;
  absl::StatusOr<std::vector<LogPod>> pods = jobs_.TrialLogPods(req->trial_id(), rank, *user);
  if (!pods.ok()) return ToGrpcStatus(pods.status());
  if (req->follow() && pods->size() > kMaxFollowedPods) {
    return ToGrpcStatus(absl::InvalidArgumentError(
        absl::StrCat("follow: takes at most ", kMaxFollowedPods, " pods, trial ", req->trial_id(),
                     " has ", pods->size(), "; give a rank")));
  }
  const Slot slot(user->username);
  if (!slot.held()) {
    return ToGrpcStatus(absl::ResourceExhaustedError(
        absl::StrCat("at most ", kMaxLogStreams, " log reads at once, ", kMaxLogStreamsPerUser,
                     " of one user; try again later")));
  }
  Watchdog watchdog(*ctx, req->follow() ? kFollowLimit : kReadLimit);
  const LogOptions options = OptionsOf(*req, &watchdog.stop);
  return ToGrpcStatus(req->follow() ? Follow(jobs_, *ctx, *pods, options, *writer)
                                    : ReadInTurn(jobs_, *ctx, *pods, options, *writer));
}

}  // namespace phalanx::master

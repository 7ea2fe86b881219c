// ExperimentService.GetTrialLogs (see services.h and experiment.proto): the logs of a trial's pods
// through the Kubernetes API, one message per line. Without follow the pods are read one after the
// other; with follow, each pod by its own thread into a bounded queue that the call's thread
// writes out, until every pod's log ends or the caller cancels.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "master/api/proto_convert.h"
#include "master/api/services.h"

namespace phalanx::master {
namespace {

constexpr int kMaxLogStreams = 64;       // GetTrialLogs calls at once.
constexpr size_t kMaxFollowedPods = 64;  // Pods one call follows.
constexpr int kMaxTailLines = 100000;
constexpr int64_t kMaxLogBytes = 16 << 20;  // Read of each pod's log.
constexpr size_t kMaxLine = 64 << 10;       // Longer lines come in pieces.
constexpr size_t kMaxQueuedLines = 1000;    // Followed lines not yet written.

std::atomic<int> log_streams{0};

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
                    .limit_bytes = kMaxLogBytes,
                    .timeout = req.follow() ? absl::Hours(1) : absl::Minutes(5),
                    .stop = stop};
}

// Each pod in turn. A pod that is gone has no lines; nor has one the API server cannot read (its
// container has not started): its error is the answer only when no pod had a line.
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
  return any ? absl::OkStatus() : first;
}

// Every pod at once: one reader thread each, lines through a bounded queue.
class Follower {
 public:
  Follower(JobManager& jobs, const std::vector<LogPod>& pods, const LogOptions& options)
      : jobs_(jobs), pods_(pods), options_(options) {
    options_.stop = &stop_;
    readers_left_ = pods.size();
    for (const LogPod& pod : pods_) readers_.emplace_back([this, &pod] { Read(pod); });
  }
  ~Follower() {
    Stop();
    for (std::thread& t : readers_) t.join();
  }
  void Stop() {
    stop_ = true;
    cv_.notify_all();
  }
  // Writes lines as they come until every reader ended or the caller left.
  void WriteOut(grpc::ServerContext& ctx, grpc::ServerWriter<v1::GetTrialLogsResponse>& writer) {
    std::unique_lock<std::mutex> lock(mu_);
    while (!ctx.IsCancelled() && (readers_left_ > 0 || !queue_.empty())) {
      cv_.wait_for(lock, std::chrono::milliseconds(200),
                   [this] { return !queue_.empty() || readers_left_ == 0; });
      while (!queue_.empty()) {
        v1::GetTrialLogsResponse line = std::move(queue_.front());
        queue_.pop_front();
        cv_.notify_all();
        lock.unlock();
        const bool written = writer.Write(line);
        lock.lock();
        if (!written) return;
      }
    }
  }

 private:
  void Read(const LogPod& pod) {
    LineSplitter lines([&](std::string line) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return queue_.size() < kMaxQueuedLines || stop_; });
      if (stop_) return false;
      queue_.push_back(LineOf(pod, std::move(line)));
      cv_.notify_all();
      return true;
    });
    (void)jobs_.StreamLog(pod, options_,
                          [&](absl::string_view chunk) { return lines.Feed(chunk); });
    lines.Flush();
    std::lock_guard<std::mutex> lock(mu_);
    --readers_left_;
    cv_.notify_all();
  }

  JobManager& jobs_;
  const std::vector<LogPod>& pods_;
  LogOptions options_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<v1::GetTrialLogsResponse> queue_;
  size_t readers_left_ = 0;
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
  if (log_streams.fetch_add(1) >= kMaxLogStreams) {
    log_streams.fetch_sub(1);
    return ToGrpcStatus(absl::ResourceExhaustedError(
        absl::StrCat("at most ", kMaxLogStreams, " log reads at once; try again later")));
  }
  absl::Status s;
  if (req->follow()) {
    Follower follower(jobs_, *pods, OptionsOf(*req, nullptr));
    follower.WriteOut(*ctx, *writer);
  } else {
    s = ReadInTurn(jobs_, *ctx, *pods, OptionsOf(*req, nullptr), *writer);
  }
  log_streams.fetch_sub(1);
  return ToGrpcStatus(s);
}

}  // namespace phalanx::master

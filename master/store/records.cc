// State names as stored in Postgres and run ids (see records.h).
#include "master/store/records.h"

#include <array>

#include "absl/strings/str_cat.h"

namespace phalanx::master {
namespace {

constexpr std::array<absl::string_view, 5> kRunStates = {"ACTIVE", "PAUSED", "COMPLETED",
                                                         "CANCELED", "ERROR"};
constexpr std::array<absl::string_view, 6> kAllocStates = {
    "PENDING", "SCHEDULED", "RUNNING", "PREEMPTING", "TERMINATING", "TERMINATED"};

template <typename E, size_t N>
std::optional<E> FromName(const std::array<absl::string_view, N>& names, absl::string_view name) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<E>(i);
  }
  return std::nullopt;
}

}  // namespace

absl::string_view RunStateName(RunState s) { return kRunStates[static_cast<int>(s)]; }
absl::string_view AllocStateName(AllocState s) { return kAllocStates[static_cast<int>(s)]; }

std::optional<RunState> RunStateFromName(absl::string_view name) {
  return FromName<RunState>(kRunStates, name);
}

std::optional<AllocState> AllocStateFromName(absl::string_view name) {
  return FromName<AllocState>(kAllocStates, name);
}

bool IsTerminal(RunState s) {
  return s == RunState::kCompleted || s == RunState::kCanceled || s == RunState::kError;
}

std::string RunId(const std::string& job_id, std::optional<int64_t> trial_id, int run) {
  return trial_id ? absl::StrCat(job_id, "-trial-", *trial_id, "-r", run)
                  : absl::StrCat(job_id, "-r", run);
}

bool OwnsOrAdmin(const JobRecord& job, const User& user) {
  return user.admin || user.username == job.username;
}

}  // namespace phalanx::master

// A master's role label on its own pod (role_label.h).
#include "master/k8s/role_label.h"

#include <cstdio>

namespace phalanx::master {

PodRoleLabel::PodRoleLabel(KubePodClient& pods, std::string ns, std::string name)
    : pods_(pods), ns_(std::move(ns)), name_(std::move(name)) {
  if (!ns_.empty() && !name_.empty()) thread_ = std::thread([this] { Run(); });
}

PodRoleLabel::~PodRoleLabel() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void PodRoleLabel::Set(const std::string& role) {
  absl::MutexLock lock(&mu_);
  wanted_ = role;
}

bool PodRoleLabel::WaitApplied(absl::Duration timeout) {
  if (!thread_.joinable()) return true;
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(
                                  +[](PodRoleLabel* self) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                    return self->applied_ == self->wanted_;
                                  },
                                  this),
                              timeout);
}

void PodRoleLabel::Run() {
  bool told = false;
  while (true) {
    std::string role;
    {
      absl::MutexLock lock(&mu_);
      auto due = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return stop_ || wanted_ != applied_; };
      mu_.AwaitWithTimeout(absl::Condition(&due), absl::Seconds(2));
      if (stop_) return;
      if (wanted_ == applied_) continue;
      role = wanted_;
    }
    absl::Status s = pods_.SetPodLabel(ns_, name_, kRoleLabel, role);
    absl::MutexLock lock(&mu_);
    if (s.ok()) {
      applied_ = role;
      told = false;
    } else if (!told) {
      std::fprintf(stderr, "phalanx-master: labelling pod %s/%s %s=%s (retrying): %s\n",
                   ns_.c_str(), name_.c_str(), kRoleLabel, role.c_str(), s.ToString().c_str());
      told = true;
    }
    if (!s.ok()) {
      // Try again in 2 s, not at once.
      mu_.AwaitWithTimeout(absl::Condition(&stop_), absl::Seconds(2));
      if (stop_) return;
    }
  }
}

}  // namespace phalanx::master

// Following kube-scheduler's leader-election Lease (leadership.h).
#include "scheduler_extender/leadership.h"

#include <unistd.h>

#include <cstdio>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "kube/json.h"

namespace phalanx::extender {
namespace {

// Lease durations past a day are not a leader election this follows.
constexpr int64_t kMaxLeaseSeconds = 86'400;

absl::StatusOr<int64_t> MicroTimeMs(std::string_view text, const char* field) {
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, kube::Sv(text), &t, &err)) {
    return absl::InvalidArgumentError(
        absl::StrCat("lease ", field, ": invalid RFC 3339 time \"", kube::Sv(text), "\""));
  }
  return absl::ToUnixMillis(t);
}

}  // namespace

absl::StatusOr<LeaseRecord> ParseLease(absl::string_view json) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(json.data(), json.size()).get(root) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError("lease: the API server's answer is not JSON");
  }
  KUBE_ASSIGN_OR_RETURN(kube::JsonObject obj, kube::JsonObject::Of(root, ""));
  KUBE_ASSIGN_OR_RETURN(kube::JsonObject spec, obj.Object("spec"));
  LeaseRecord out;
  KUBE_ASSIGN_OR_RETURN(std::string_view holder, spec.String("holderIdentity"));
  out.holder = std::string(holder);
  KUBE_ASSIGN_OR_RETURN(int64_t seconds, spec.Int("leaseDurationSeconds"));
  if (seconds < 0 || seconds > kMaxLeaseSeconds) {
    return absl::InvalidArgumentError(absl::StrCat("lease spec.leaseDurationSeconds: must be 0 to ",
                                                   kMaxLeaseSeconds, ", got ", seconds));
  }
  out.duration_ms = seconds * 1000;
  for (const char* field : {"renewTime", "acquireTime"}) {
    KUBE_ASSIGN_OR_RETURN(std::string_view text, spec.String(field));
    if (text.empty()) continue;
    KUBE_ASSIGN_OR_RETURN(out.renew_ms, MicroTimeMs(text, field));
    break;
  }
  return out;
}

bool HeldBy(const LeaseRecord& lease, absl::string_view holder_prefix, int64_t now_ms,
            int64_t unchanged_ms) {
  if (holder_prefix.empty() || !absl::StartsWith(lease.holder, holder_prefix)) return false;
  if (lease.renew_ms < 0 || lease.duration_ms <= 0) return false;
  const int64_t fresh_ms = lease.duration_ms / 2;
  return now_ms - lease.renew_ms < fresh_ms && unchanged_ms < fresh_ms;
}

std::string DefaultHolderPrefix() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "";
  return absl::StrCat(name, "_");
}

absl::StatusOr<std::string> HolderPrefix(const std::string& configured,
                                         const std::string& host_prefix,
                                         const std::string& pod_name) {
  if (!configured.empty()) return configured;
  if (!pod_name.empty() && host_prefix != absl::StrCat(pod_name, "_")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "follow_lease: this host's name \"", absl::StripSuffix(host_prefix, "_"),
        "\" is not this pod's name \"", pod_name,
        "\" (Kubernetes cuts host names to 63 characters), so another replica may share it and "
        "lead too: shorten the release's name, or set lease_holder_prefix"));
  }
  if (host_prefix.size() < 2) {
    return absl::InvalidArgumentError(
        "follow_lease: this host has no name; set lease_holder_prefix");
  }
  return host_prefix;
}

void Leadership::Poll() {
  absl::StatusOr<std::string> body =
      client_->Get(kLeases, options_.lease_namespace, options_.lease_name);
  absl::StatusOr<LeaseRecord> lease =
      body.ok() ? ParseLease(*body) : absl::StatusOr<LeaseRecord>(body.status());
  absl::MutexLock lock(&mu_);
  if (lease.ok()) {
    if (lease->holder != last_.holder || lease->renew_ms != last_.renew_ms) {
      changed_ = std::chrono::steady_clock::now();
    }
    last_ = *std::move(lease);
    warned_ = false;
    return;
  }
  // Not found: no kube-scheduler has taken it yet. Other errors age the last record out.
  if (absl::IsNotFound(lease.status())) last_ = LeaseRecord{};
  if (!warned_) {
    std::fprintf(stderr, "phalanx-extender: reading lease %s/%s: %s\n",
                 options_.lease_namespace.c_str(), options_.lease_name.c_str(),
                 std::string(lease.status().message()).c_str());
    warned_ = true;
  }
}

void Leadership::Run(const std::atomic<bool>& stop) {
  bool led = false;
  while (!stop.load()) {
    Poll();
    if (const bool leads = Leads(); leads != led) {
      led = leads;
      std::fprintf(stderr, "phalanx-extender: %s (lease %s/%s held by \"%s\")\n",
                   leads ? "leading: admission rounds run here" : "following: no admission rounds",
                   options_.lease_namespace.c_str(), options_.lease_name.c_str(), Holder().c_str());
    }
    absl::SleepFor(absl::Milliseconds(options_.poll_ms));
  }
}

bool Leadership::Leads() const {
  absl::MutexLock lock(&mu_);
  const auto unchanged = std::chrono::steady_clock::now() - changed_;
  return HeldBy(last_, options_.holder_prefix, now_ms_(),
                std::chrono::duration_cast<std::chrono::milliseconds>(unchanged).count());
}

std::string Leadership::Holder() const {
  absl::MutexLock lock(&mu_);
  return last_.holder;
}

}  // namespace phalanx::extender

// The extender's forecaster: a thread that, every interval, runs the pure forecast
// (forecast/forecast.h) and the what-if questions (forecast/what_if.h) for the first waiting gangs
// on the informer's latest snapshot, with the admission loop's options, off every request path.
// Runtimes come from the pods' phalanx.io/expected-runtime (core::PodInfo::expected_runtime_ms):
// a running gang has its start plus that left (unknown once past it: an overrun is no sign the
// end is near), a waiting one that much once started. What-if questions stop once a refresh has
// spent kWhatIfBudget on them; the gangs left get none that time. The latest
// outlook is read by the admission loop (/debug/queue, the phalanx.io/eta and phalanx.io/what-if
// annotations) and sets the forecast gauges.
#ifndef PHALANX_SCHEDULER_EXTENDER_FORECASTER_H_
#define PHALANX_SCHEDULER_EXTENDER_FORECASTER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "core/snapshot.h"
#include "forecast/forecast.h"
#include "forecast/what_if.h"
#include "preemption/admission.h"
#include "scheduler_extender/metrics.h"

namespace phalanx::extender {

// What the forecast says of one waiting gang.
struct GangOutlook {
  forecast::GangEta eta;
  std::optional<forecast::WhatIf> what_if;  // For the first what_if_gangs in queue order.
};

struct Outlook {
  int64_t at_ms = 0;  // When it was computed.
  absl::flat_hash_map<std::string, GangOutlook> gangs;
};

inline constexpr std::chrono::milliseconds kWhatIfBudget{2000};

// The forecast's runtimes from the pods' expected runtimes at `now_ms`.
forecast::RuntimeModel RuntimesOf(const core::ClusterSnapshot& snap, int64_t now_ms);

// The phalanx.io/eta text: the start as RFC 3339 (UTC, seconds), or "none: <why>".
std::string EtaText(const forecast::GangEta& eta);
// The phalanx.io/what-if text: {"slots":N,"priority":P,"victims":[..],"ahead":[..]}, fields left
// out when unanswered.
std::string WhatIfJson(const forecast::WhatIf& w);

// The phalanx.io/eta and phalanx.io/what-if texts last written on a gang's pods.
struct WrittenOutlook {
  std::string eta;
  std::optional<int64_t> eta_ms;
  std::string what_if;
  int64_t at_ms = 0;
};
inline constexpr int64_t kOutlookIntervalMs = 60'000;
// What to write on a waiting gang's pods beside its reason, given what was written `last` (and
// updated to it): nothing while the texts match; else, unless `force` (the reason is written
// anyway), only once kOutlookIntervalMs have passed since the last write, and an estimate only
// when it moved by more than max(5 minutes, 10% of the wait), or appeared, or went.
std::optional<WrittenOutlook> OutlookDue(const WrittenOutlook& last, const GangOutlook& now,
                                         int64_t now_ms, bool force);

// When the next refresh starts, one that took `took_ms` having finished at `finished_ms`: an
// interval later, and never sooner than 3 times its own time, so that the forecaster takes at most
// a quarter of a core from the admission loop and kube-scheduler's calls on a large cluster.
inline constexpr int64_t kForecastRestFactor = 3;
int64_t NextForecastMs(int64_t finished_ms, int64_t interval_ms, int64_t took_ms);

struct ForecasterDeps {
  std::function<std::shared_ptr<const core::ClusterSnapshot>()> snapshot;
  std::function<int64_t()> now_ms;
  Metrics* metrics = nullptr;
};

class Forecaster {
 public:
  Forecaster(preemption::AdmissionOptions admission, int64_t interval_ms, int what_if_gangs,
             ForecasterDeps deps);

  // Computes an outlook from `snap` now and makes it the latest.
  void RunOnce(std::shared_ptr<const core::ClusterSnapshot> snap);
  // Every interval until `stop` is set.
  void Run(const std::atomic<bool>& stop);
  // The latest outlook; null before the first.
  std::shared_ptr<const Outlook> Latest() const;

 private:
  forecast::ForecastOptions options_;
  int64_t interval_ms_;
  int what_if_gangs_;
  ForecasterDeps deps_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const Outlook> latest_ ABSL_GUARDED_BY(mu_);
};

}  // namespace phalanx::extender

#endif  // PHALANX_SCHEDULER_EXTENDER_FORECASTER_H_

// Prometheus metrics of phalanx-extender (prometheus-cpp registry, text exposition on /metrics).
#ifndef PHALANX_SCHEDULER_EXTENDER_METRICS_H_
#define PHALANX_SCHEDULER_EXTENDER_METRICS_H_

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "core/snapshot.h"
#include "forecast/forecast.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace phalanx::extender {

class Metrics {
 public:
  Metrics();

  // One served HTTP request: its verb (path without "/"), status code and duration.
  void ObserveRequest(absl::string_view verb, int code, double seconds);
  // One request the HTTP server answered itself (404, 405, 413, 500): counted, not timed.
  void CountRequest(absl::string_view verb, int code);
  void ObserveRound(double seconds);
  // Gangs per state after a round: "pending", "preempting" and "infeasible" in its queue.
  void SetGangs(absl::string_view state, double count);
  // Gangs "admitted" and "backfilled" among those holding capacity in `snap`: a scan of every
  // gang, so done when /metrics is read rather than every round.
  void CountRunningGangs(const core::ClusterSnapshot& snap);
  void AddPreemptions(double victim_gangs);
  void AddReplans(double gangs);
  // A gang's writes of a round that the API server refused or that failed.
  void AddFailedWrites(double gangs);
  void SetCacheObjects(absl::string_view kind, double count);
  // 1 while this replica runs admission rounds (leadership.h), else 0.
  void SetLeader(bool leads);
  // One forecast of `snap`'s waiting gangs and how long it took: the longest forecast wait per
  // pool and priority (series of pools and priorities no longer waiting go), and the gangs with
  // and without an estimate.
  void SetForecast(const core::ClusterSnapshot& snap, const forecast::ForecastResult& r,
                   double seconds) ABSL_LOCKS_EXCLUDED(forecast_mu_);
  // Raises the restart counter to the informer's running total (callers may race).
  void SetWatchRestarts(double total) ABSL_LOCKS_EXCLUDED(restarts_mu_);

  // The text exposition format (version 0.0.4).
  std::string Serialize() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Histogram>& request_seconds_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Histogram& round_seconds_;
  prometheus::Family<prometheus::Gauge>& gangs_;
  prometheus::Counter& preemptions_;
  prometheus::Counter& replans_;
  prometheus::Counter& failed_writes_;
  prometheus::Family<prometheus::Gauge>& cache_objects_;
  prometheus::Gauge& leader_;
  prometheus::Histogram& forecast_seconds_;
  prometheus::Family<prometheus::Gauge>& forecast_delay_;
  prometheus::Family<prometheus::Gauge>& forecast_gangs_;
  absl::Mutex forecast_mu_;
  // (pool, priority) -> its series in forecast_delay_.
  std::map<std::pair<std::string, int32_t>, prometheus::Gauge*> delay_series_
      ABSL_GUARDED_BY(forecast_mu_);
  absl::Mutex restarts_mu_;
  prometheus::Counter& watch_restarts_ ABSL_GUARDED_BY(restarts_mu_);
};

}  // namespace phalanx::extender

#endif  // PHALANX_SCHEDULER_EXTENDER_METRICS_H_

// Metric families and their exposition.
#include "scheduler_extender/metrics.h"

#include <algorithm>
#include <optional>
#include <sstream>

#include "prometheus/text_serializer.h"

namespace phalanx::extender {
namespace {

prometheus::Histogram::BucketBoundaries LatencyBuckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
          0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
}

}  // namespace

Metrics::Metrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      request_seconds_(prometheus::BuildHistogram()
                           .Name("phalanx_extender_request_duration_seconds")
                           .Help("Time to serve an extender HTTP request, by verb.")
                           .Register(*registry_)),
      requests_(prometheus::BuildCounter()
                    .Name("phalanx_extender_requests_total")
                    .Help("Extender HTTP requests served, by verb and status code.")
                    .Register(*registry_)),
      round_seconds_(prometheus::BuildHistogram()
                         .Name("phalanx_extender_admission_round_duration_seconds")
                         .Help("Time of one admission round (snapshot to decisions).")
                         .Register(*registry_)
                         .Add({}, LatencyBuckets())),
      gangs_(prometheus::BuildGauge()
                 .Name("phalanx_extender_gangs")
                 .Help("Gangs by state after the last admission round: pending, preempting and "
                       "infeasible in its queue; admitted and backfilled among those holding "
                       "capacity.")
                 .Register(*registry_)),
      preemptions_(prometheus::BuildCounter()
                       .Name("phalanx_extender_preemptions_total")
                       .Help("Victim gangs marked for preemption.")
                       .Register(*registry_)
                       .Add({})),
      replans_(prometheus::BuildCounter()
                   .Name("phalanx_extender_replans_total")
                   .Help("Admitted gangs marked for recreation because a planned node was gone, "
                         "closed to them or full.")
                   .Register(*registry_)
                   .Add({})),
      failed_writes_(prometheus::BuildCounter()
                         .Name("phalanx_extender_failed_writes_total")
                         .Help("Gangs whose pod writes of an admission round failed; the round "
                               "went on with the other gangs and the next one tries again.")
                         .Register(*registry_)
                         .Add({})),
      cache_objects_(prometheus::BuildGauge()
                         .Name("phalanx_extender_cache_objects")
                         .Help("Objects in the informer cache, by kind.")
                         .Register(*registry_)),
      leader_(prometheus::BuildGauge()
                  .Name("phalanx_extender_leader")
                  .Help("1 while this replica runs admission rounds: its kube-scheduler holds "
                        "the followed Lease, or none is followed; else 0.")
                  .Register(*registry_)
                  .Add({})),
      forecast_seconds_(prometheus::BuildHistogram()
                            .Name("phalanx_extender_forecast_duration_seconds")
                            .Help("Time of one start-time forecast of every waiting gang, with "
                                  "its what-if questions.")
                            .Register(*registry_)
                            .Add({}, LatencyBuckets())),
      forecast_delay_(prometheus::BuildGauge()
                          .Name("phalanx_extender_forecast_queue_delay_seconds")
                          .Help("The longest forecast wait from now to start among waiting "
                                "gangs with an estimate, by resource pool and priority.")
                          .Register(*registry_)),
      forecast_gangs_(prometheus::BuildGauge()
                          .Name("phalanx_extender_forecast_gangs")
                          .Help("Waiting gangs in the last forecast, with an estimated start "
                                "(estimate=yes) or without one (estimate=none).")
                          .Register(*registry_)),
      watch_restarts_(prometheus::BuildCounter()
                          .Name("phalanx_extender_watch_restarts_total")
                          .Help("Watch streams restarted since start (relists included).")
                          .Register(*registry_)
                          .Add({})) {}

void Metrics::ObserveRequest(absl::string_view verb, int code, double seconds) {
  request_seconds_.Add({{"verb", std::string(verb)}}, LatencyBuckets()).Observe(seconds);
  CountRequest(verb, code);
}

void Metrics::CountRequest(absl::string_view verb, int code) {
  requests_.Add({{"verb", std::string(verb)}, {"code", std::to_string(code)}}).Increment();
}

void Metrics::ObserveRound(double seconds) { round_seconds_.Observe(seconds); }

void Metrics::SetGangs(absl::string_view state, double count) {
  gangs_.Add({{"state", std::string(state)}}).Set(count);
}

void Metrics::CountRunningGangs(const core::ClusterSnapshot& snap) {
  double admitted = 0, backfilled = 0;
  snap.Gangs([&](const core::ClusterSnapshot::GangEntry& e) {
    if (e.summary.Running()) (e.summary.backfilled ? backfilled : admitted) += 1;
    return false;
  });
  SetGangs("admitted", admitted);
  SetGangs("backfilled", backfilled);
}

void Metrics::AddPreemptions(double victim_gangs) { preemptions_.Increment(victim_gangs); }

void Metrics::AddReplans(double gangs) { replans_.Increment(gangs); }

void Metrics::AddFailedWrites(double gangs) { failed_writes_.Increment(gangs); }

void Metrics::SetCacheObjects(absl::string_view kind, double count) {
  cache_objects_.Add({{"kind", std::string(kind)}}).Set(count);
}

void Metrics::SetLeader(bool leads) { leader_.Set(leads ? 1 : 0); }

void Metrics::SetForecast(const core::ClusterSnapshot& snap, const forecast::ForecastResult& r,
                          double seconds) {
  forecast_seconds_.Observe(seconds);
  const int64_t now = r.now_ms;
  std::map<std::pair<std::string, int32_t>, double> delays;
  double with = 0, without = 0;
  for (const forecast::GangEta& e : r.gangs) {
    if (!e.start_ms) {
      ++without;
      continue;
    }
    ++with;
    std::optional<core::Gang> g = snap.FindGang(e.gang);
    double& d = delays[{g ? g->pool : "", e.priority}];
    d = std::max(d, static_cast<double>(*e.start_ms - now) / 1000.0);
  }
  forecast_gangs_.Add({{"estimate", "yes"}}).Set(with);
  forecast_gangs_.Add({{"estimate", "none"}}).Set(without);
  absl::MutexLock lock(&forecast_mu_);
  for (auto it = delay_series_.begin(); it != delay_series_.end();) {
    if (delays.contains(it->first)) {
      ++it;
      continue;
    }
    forecast_delay_.Remove(it->second);
    it = delay_series_.erase(it);
  }
  for (const auto& [key, delay] : delays) {
    prometheus::Gauge*& series = delay_series_[key];
    if (series == nullptr) {
      series = &forecast_delay_.Add({{"pool", key.first}, {"priority", std::to_string(key.second)}});
    }
    series->Set(delay);
  }
}

void Metrics::SetWatchRestarts(double total) {
  absl::MutexLock lock(&restarts_mu_);
  if (total > watch_restarts_.Value()) watch_restarts_.Increment(total - watch_restarts_.Value());
}

std::string Metrics::Serialize() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

}  // namespace phalanx::extender

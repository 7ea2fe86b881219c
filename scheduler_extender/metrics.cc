// Metric families and their exposition.
#include "scheduler_extender/metrics.h"

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

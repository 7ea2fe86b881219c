// The extender's forecast thread (forecaster.h).
#include "scheduler_extender/forecaster.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "kube/json.h"

namespace phalanx::extender {
namespace {

std::string JsonList(const std::vector<std::string>& items) {
  std::vector<std::string> quoted;
  for (const std::string& s : items) quoted.push_back(kube::EncodeJsonString(s));
  return absl::StrCat("[", absl::StrJoin(quoted, ","), "]");
}

}  // namespace

forecast::RuntimeModel RuntimesOf(const core::ClusterSnapshot& snap, int64_t now_ms) {
  forecast::RuntimeModel model;
  for (const core::Gang& g : snap.Gangs()) {
    int64_t runtime = -1;
    for (const core::PodInfo* p : g.members) runtime = std::max(runtime, p->expected_runtime_ms);
    if (runtime < 0) continue;
    if (g.Pending() || g.start_ms <= 0) {
      model[g.key] = runtime;
    } else if (g.start_ms + runtime > now_ms) {  // Past its expected end: unknown, not imminent.
      model[g.key] = g.start_ms + runtime - now_ms;
    }
  }
  return model;
}

std::string EtaText(const forecast::GangEta& eta) {
  if (!eta.start_ms) return absl::StrCat("none: ", forecast::NoEstimateText(eta.none));
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixMillis(*eta.start_ms),
                          absl::UTCTimeZone());
}

std::string WhatIfJson(const forecast::WhatIf& w) {
  std::vector<std::string> fields;
  if (w.slots_now) fields.push_back(absl::StrCat("\"slots\":", *w.slots_now));
  if (w.priority_now) {
    fields.push_back(absl::StrCat("\"priority\":", *w.priority_now));
    fields.push_back(absl::StrCat("\"victims\":", JsonList(w.victims)));
  }
  if (w.pool_now) fields.push_back(absl::StrCat("\"pool\":", kube::EncodeJsonString(*w.pool_now)));
  fields.push_back(absl::StrCat("\"ahead\":", JsonList(w.ahead)));
  return absl::StrCat("{", absl::StrJoin(fields, ","), "}");
}

std::optional<WrittenOutlook> OutlookDue(const WrittenOutlook& last, const GangOutlook& now,
                                         int64_t now_ms, bool force) {
  WrittenOutlook next{EtaText(now.eta), now.eta.start_ms,
                      now.what_if ? WhatIfJson(*now.what_if) : std::string(), now_ms};
  if (next.eta == last.eta && next.what_if == last.what_if) return std::nullopt;
  if (force) return next;
  if (now_ms - last.at_ms < kOutlookIntervalMs) return std::nullopt;
  bool eta_moved = next.eta != last.eta;
  if (eta_moved && next.eta_ms && last.eta_ms) {
    const int64_t wait = std::max<int64_t>(*last.eta_ms - now_ms, 0);
    eta_moved = std::abs(*next.eta_ms - *last.eta_ms) > std::max<int64_t>(5 * 60'000, wait / 10);
  }
  if (!eta_moved && next.what_if == last.what_if) return std::nullopt;
  if (!eta_moved) {
    next.eta = last.eta;
    next.eta_ms = last.eta_ms;
  }
  return next;
}

Forecaster::Forecaster(preemption::AdmissionOptions admission, int64_t interval_ms,
                       int what_if_gangs, ForecasterDeps deps)
    : interval_ms_(interval_ms), what_if_gangs_(what_if_gangs), deps_(std::move(deps)) {
  options_.admission = std::move(admission);
}

void Forecaster::RunOnce(std::shared_ptr<const core::ClusterSnapshot> snap) {
  const auto started = std::chrono::steady_clock::now();
  forecast::ForecastOptions opts = options_;
  opts.admission.now_ms = deps_.now_ms();
  const forecast::ForecastResult r =
      forecast::Forecast(snap, opts, RuntimesOf(*snap, opts.admission.now_ms));
  auto out = std::make_shared<Outlook>();
  out->at_ms = opts.admission.now_ms;
  int asked = 0;
  const auto what_if_deadline = std::chrono::steady_clock::now() + kWhatIfBudget;
  for (const forecast::GangEta& e : r.gangs) {
    GangOutlook& g = out->gangs[e.gang];
    g.eta = e;
    if (e.start_ms == opts.admission.now_ms || e.none == forecast::NoEstimate::kInfeasible ||
        asked >= what_if_gangs_ || std::chrono::steady_clock::now() > what_if_deadline) {
      continue;
    }
    ++asked;
    absl::StatusOr<forecast::WhatIf> w = forecast::AskWhatIf(
        snap, opts.admission, e.gang, forecast::kDefaultWhatIfChecks, &r.first_round);
    if (w.ok()) g.what_if = *std::move(w);
  }
  if (deps_.metrics != nullptr) {
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
    deps_.metrics->SetForecast(*snap, r, took.count());
  }
  absl::MutexLock lock(&mu_);
  latest_ = std::move(out);
}

int64_t NextForecastMs(int64_t finished_ms, int64_t interval_ms, int64_t took_ms) {
  return finished_ms + std::max(interval_ms, kForecastRestFactor * std::max<int64_t>(took_ms, 0));
}

void Forecaster::Run(const std::atomic<bool>& stop) {
  int64_t next = 0;
  while (!stop.load()) {
    if (deps_.now_ms() >= next) {
      const auto started = std::chrono::steady_clock::now();
      std::shared_ptr<const core::ClusterSnapshot> snap = deps_.snapshot();
      if (snap != nullptr) RunOnce(std::move(snap));
      const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - started);
      next = NextForecastMs(deps_.now_ms(), interval_ms_, took.count());
    }
    absl::SleepFor(absl::Milliseconds(std::min<int64_t>(200, interval_ms_)));
  }
}

std::shared_ptr<const Outlook> Forecaster::Latest() const {
  absl::MutexLock lock(&mu_);
  return latest_;
}

}  // namespace phalanx::extender

// WhatIf: for one waiting gang, the cheapest changes that would start it now, each checked by
// running the admission round on a snapshot with the change made. Pure.
//
// Algorithm, for gang G of S slots in P equal pods (GPU slots), at maxSlotsPerPod M of its pool:
//   - fewer slots: the totals below S that the master can split (at most M, or a multiple of M),
//     largest first; the first at which G is admitted or backfilled in this round is the answer;
//   - a higher priority: one above each priority of the running gangs and of the gangs ahead of G,
//     lowest first; the first at which G is admitted, backfilled or preempts is the answer, with
//     the victims it would take;
//   - another resource pool: each pool other than G's, in name order, whose placement the snapshot
//     shows: the nodeSelector, tolerations and required node affinity that every pod created by
//     phalanx-master in that pool carries alike (a pool whose pods differ, or that has none, is not
//     asked: its own constraints cannot be told from a job's). G is checked with that placement,
//     its slots split at that pool's maxSlotsPerPod (a pool that cannot split them is skipped); the
//     first pool in which it is admitted or backfilled is the answer;
//   - the gangs G waits behind: those ahead of it in the queue that this round does not start.
// At most max_checks rounds in all (fewer slots, then priority, then pools), besides the round as
// it is (`now`, when the caller has it); a question whose checks ran out, or whose candidates all
// fail, has no answer.
// A gang with members still missing is not asked (it waits for them whatever changes).
#ifndef PHALANX_FORECAST_WHAT_IF_H_
#define PHALANX_FORECAST_WHAT_IF_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/snapshot.h"
#include "preemption/admission.h"

namespace phalanx::forecast {

struct WhatIf {
  std::optional<int64_t> slots_now;     // It starts now with at most this many slots.
  std::optional<int32_t> priority_now;  // It starts now, or preempts, at this priority.
  std::vector<std::string> victims;     // Whom it preempts at priority_now (the first kMaxNamed).
  std::optional<std::string> pool_now;  // It starts now in this resource pool.
  std::vector<std::string> ahead;       // Waiting gangs ahead of it, in queue order (kMaxNamed).
};

inline constexpr size_t kMaxNamed = 10;
inline constexpr int kDefaultWhatIfChecks = 16;
inline constexpr int64_t kMaxPriority = 1'000'000;

// An error when `gang` is not waiting in `snapshot`, or not complete. `now`, when given, is
// RunAdmissionRound(*snapshot, options).
absl::StatusOr<WhatIf> AskWhatIf(std::shared_ptr<const core::ClusterSnapshot> snapshot,
                                 const preemption::AdmissionOptions& options,
                                 const std::string& gang, int max_checks = kDefaultWhatIfChecks,
                                 const preemption::RoundResult* now = nullptr);

}  // namespace phalanx::forecast

#endif  // PHALANX_FORECAST_WHAT_IF_H_

// A gang: the pods that must run together, summarized for queue order and victim selection.
#ifndef PHALANX_CORE_GANG_H_
#define PHALANX_CORE_GANG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/pod.h"
#include "core/resources.h"

namespace phalanx::core {

struct Gang {
  std::string key;                           // "namespace/name".
  std::vector<const PodInfo*> members;       // Live (non-terminal) members, sorted by pod name.
  int32_t expected_size = 1;                 // From the members' gang-size label (the largest).
  int32_t priority = 0;                      // Highest member priority.
  double queue_position = kNoQueuePosition;  // Lowest member position.
  int64_t creation_ms = 0;                   // Earliest member creation.
  int64_t start_ms = 0;                      // Earliest member start; 0 when none started.
  bool preemptible = true;                   // Every member preemptible.
  bool gated = false;                        // Some member still carries the admission gate.
  bool preempt_requested = false;            // Some member is marked for preemption.
  bool backfilled = false;                   // Some member was admitted as backfill.
  bool placing = false;                      // Some member is planned on a node, not bound yet.
  bool managed = false;                      // Some member was created by phalanx-master.
  std::string preempted_by;                  // The preemptor's gang key when marked.
  std::string backfilled_behind;             // Some member's; see core/pod.h.
  int64_t checkpoint_ms = 0;                 // Latest member checkpoint; 0 when none.
  std::vector<int64_t> preempted_ms;         // The longest member history (core/pod.h).
  std::string pool;                          // The first live member's non-empty resource pool.
  Resources total;                           // Sum of live member requests.
  std::string contract_error;                // The first live member's with one, if any.

  // Waiting for admission: gated, no member holding capacity yet.
  bool Pending() const;
  // Planned but still gated: every member holds its planned node; ungating is all that is left.
  bool Admitting() const;
  // Holding capacity (bound or planned) and not gated.
  bool Running() const;
};

// Builds the summary of `key` from its pods; terminal pods are left out of `members`.
Gang SummarizeGang(std::string key, std::vector<const PodInfo*> pods);

}  // namespace phalanx::core

#endif  // PHALANX_CORE_GANG_H_

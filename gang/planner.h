// All-or-nothing gang placement onto free capacity, with slot packing.
//
// Algorithm: members are placed largest slot request first (ties: in a gang of mixed pods, the one
// eligible on fewer nodes; then pod name). Each member goes to
// a node eligible for it (its own selector, tolerations and affinity) where it fits and leaves the
// fewest free slots, then the fewest free millicores, then the least free memory; the node name
// (index order) breaks the last tie. This best-fit packs 1-slot pods onto partially used nodes,
// gives maxSlotsPerPod-sized pods nodes whole (two 4-slot pods share one 8-GPU node before a second
// node is opened), and leaves large empty nodes for large gangs. If any member finds no node, the
// gang gets no node at all.
#ifndef PHALANX_GANG_PLANNER_H_
#define PHALANX_GANG_PLANNER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "core/gang.h"
#include "core/resources.h"
#include "core/snapshot.h"
#include "gang/slots.h"

namespace phalanx::gang {

// Free resources per node index of a snapshot; mutated as a round reserves capacity.
using Capacity = std::vector<core::Resources>;

// Each node's free capacity less `held` (per node index; empty: nothing held outside the snapshot).
Capacity FreeCapacity(const core::ClusterSnapshot& snapshot, const Capacity& held = {});
Capacity AllocatableCapacity(const core::ClusterSnapshot& snapshot);

struct GangPlan {
  enum class Outcome { kPlaced, kWait, kInfeasible };
  Outcome outcome = Outcome::kWait;
  std::vector<int> nodes;  // Node index per gang member (same order as Gang::members).
  std::string reason;      // Why it waits or can never run; empty when placed.

  bool placed() const { return outcome == Outcome::kPlaced; }
};

// The member with the most slots (the last of equals), as the unit for counting copies.
core::Resources LargestMember(const core::Gang& gang, const SlotPolicy& slots);
// How many copies of LargestMember a gang needs room for: its members that take slots (a CPU
// launcher beside GPU workers takes none), or all of them when none does.
int64_t CopiesNeeded(const core::Gang& gang, const SlotPolicy& slots);

class GangPlanner {
 public:
  GangPlanner(const core::ClusterSnapshot& snapshot, const SlotPolicy& slots);

  // Places every member of `gang` onto `free`, or none, on no node `closed` marks (per node
  // index; nullptr: none closed). Never reports kInfeasible.
  GangPlan Plan(const core::Gang& gang, const Capacity& free,
                const std::vector<bool>* closed = nullptr) const;
  // kInfeasible with a reason when `gang` can never run on this cluster (slots against
  // maxSlotsPerPod, or too large for the whole pool), else kWait for a gang not yet complete,
  // else kPlaced with no nodes.
  GangPlan CheckFeasible(const core::Gang& gang) const;
  // Node indexes eligible for `pod` (selector, tolerations, node affinity), ascending.
  const std::vector<int>& EligibleNodes(const core::PodInfo& pod) const;
  // Node indexes eligible for some member of `gang`, ascending; the same vector for gangs whose
  // members' eligibility is alike.
  const std::vector<int>& EligibleNodes(const core::Gang& gang) const;
  // Index of the node called `name`, or -1 (a hash look-up, built on first use).
  int NodeIndex(absl::string_view name) const;
  // Subtracts the plan's requests from `free`.
  static void Reserve(const core::Gang& gang, const GangPlan& plan, Capacity& free);

  const core::ClusterSnapshot& snapshot() const { return snapshot_; }
  const SlotPolicy& slots() const { return slots_; }

 private:
  // A quick sufficient test for a gang of like members (same requests and eligibility): as many
  // copies of one fit on empty eligible nodes as the gang has members. False for other gangs.
  bool FitsOnEmptyPool(const core::Gang& gang) const;
  const std::vector<int>& EligibleFor(const std::string& signature,
                                      const std::vector<const core::PodInfo*>& pods) const;
  // "needs 16 GPUs on 4 nodes; 12 <what> on 3 fitting nodes" (nodes with room for one of its pods
  // in `free`); "needs 16 GPUs on 4 nodes; <none>" when no node has. Node pod counts that bind add
  // "; too many pods: room for 2 more" (on the fitting nodes), or "; too many pods on 3 nodes"
  // (eligible nodes that are full) when no node fits. Members that avoid nodes add "; avoids n1
  // (kube-scheduler refused it there)".
  std::string WaitReason(const core::Gang& gang, const Capacity& free, absl::string_view what,
                         absl::string_view none) const;

  const core::ClusterSnapshot& snapshot_;
  SlotPolicy slots_;
  Capacity allocatable_;
  // Eligible nodes per scheduling signature (selector, tolerations, node affinity; for a mixed
  // gang, its members' signatures joined), filled lazily.
  mutable absl::flat_hash_map<std::string, std::unique_ptr<std::vector<int>>> eligible_;
  mutable absl::flat_hash_map<absl::string_view, int> node_index_;
};

}  // namespace phalanx::gang

#endif  // PHALANX_GANG_PLANNER_H_

// The extender verbs' decisions for one pod, over the cached snapshot:
// - Filter: a pod whose phalanx labels cannot be read passes nowhere (the error is the reason); a
//   pod with a placement passes only on its planned node; an ungated gang member
//   without one gets a filter-time all-or-nothing reservation for its whole gang, its own seat on
//   a node kube-scheduler offered (its filters passed there); a member whose seat is not among the
//   nodes offered to it moves alone to an offered node with room, or keeps its seat; any other pod
//   passes where free capacity minus reservations fits its requests and the node is a best fit:
//   among fitting nodes only those leaving the fewest slots free pass, the first
//   `best_fit_candidates` of them in kube-scheduler's order (0 keeps every fitting node). The other
//   fitting nodes are left out of the reply altogether: they need no diagnosis (the pod fits), and
//   listing hundreds of them with reasons cost kube-scheduler more than the narrowing saves.
//   Packing needs no more, and kube-scheduler then scores only those few nodes. When no node fits
//   by the cache, the offered nodes where only bound pods are in the way (no pod planned and not
//   bound, none marked for preemption, no reservation) pass: kube-scheduler offered them after its own NodeResourcesFit, and
//   counts bound pods as recently as the cache or more.
// - Prioritize: 10 on a pod's planned or reserved node, else a best-fit packing score 0..10: the
//   share of the node's slots (CPU when it has none) in use once the pod is placed.
// - Preempt: kube-scheduler's victims per node are widened to every pod of their gangs bound to
//   that node (a reply can only name pods bound there; the master ends a whole run when one of its
//   pods is deleted, so members elsewhere follow); a node is dropped when a victim gang has a
//   non-preemptible pod or one whose priority is not lower than the preemptor's, when a victim is
//   unknown, when it has no victims (kube-scheduler refuses an empty victim list), when the node
//   is not in the cache, or when the pod would not fit there once its victim gangs are gone,
//   given the reservations on the node.
#ifndef PHALANX_SCHEDULER_EXTENDER_VERBS_H_
#define PHALANX_SCHEDULER_EXTENDER_VERBS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/pod.h"
#include "core/snapshot.h"
#include "gang/slots.h"
#include "scheduler_extender/reservations.h"

namespace phalanx::extender {

// Nodes that did not pass, in request order, each with its reason. A filter gives hundreds of
// nodes one of a handful of reasons, so each distinct reason is kept once.
class NodeReasons {
 public:
  void Add(const std::string& node, absl::string_view reason);

  size_t size() const { return nodes_.size(); }
  bool empty() const { return nodes_.empty(); }
  // The reason given for `node` (its last, if the request named it twice), or null.
  const std::string* Find(absl::string_view node) const;
  template <typename Fn>  // fn(const std::string& node, const std::string& reason)
  void ForEach(Fn fn) const {
    for (const auto& [node, r] : nodes_) fn(node, reasons_[r]);
  }

 private:
  std::vector<std::pair<std::string, uint32_t>> nodes_;  // Node, index into reasons_.
  std::vector<std::string> reasons_;
};

struct FilterOutcome {
  std::vector<std::string> passed;  // In request order.
  NodeReasons failed;               // FailedNodes: may pass after preemption.
  NodeReasons unresolvable;         // FailedAndUnresolvableNodes.
};

struct NodeVictims {
  std::vector<std::string> uids;  // Sorted.
  int64_t pdb_violations = 0;
};
using VictimMap = std::map<std::string, NodeVictims>;

class Verbs {
 public:
  Verbs(gang::SlotPolicy slots, int64_t reservation_ttl_ms, ReservationBook* book,
        size_t best_fit_candidates = 8)
      : slots_(std::move(slots)),
        ttl_ms_(reservation_ttl_ms),
        book_(book),
        best_fit_candidates_(best_fit_candidates) {}

  FilterOutcome Filter(const core::ClusterSnapshot& snap, const core::PodInfo& pod,
                       const std::vector<std::string>& nodes, int64_t now_ms) const;
  // Scores of `nodes`, in request order.
  std::vector<int64_t> Prioritize(const core::ClusterSnapshot& snap, const core::PodInfo& pod,
                                  const std::vector<std::string>& nodes, int64_t now_ms) const;
  VictimMap Preempt(const core::ClusterSnapshot& snap, const core::PodInfo& pod,
                    const VictimMap& proposed, int64_t now_ms) const;

 private:
  // The node reserved for `pod` among `offered` (planning its gang when it has none there), or a
  // reason it has none.
  std::string ReserveGang(const core::ClusterSnapshot& snap, const core::PodInfo& pod,
                          const std::vector<std::string>& offered, int64_t now_ms,
                          std::string* reason) const;

  // The offered node eligible for `pod` where it fits best beside every live seat, or "".
  std::string OfferedSeat(const core::ClusterSnapshot& snap, const core::PodInfo& pod,
                          const std::vector<std::string>& offered, int64_t now_ms) const;

  gang::SlotPolicy slots_;
  int64_t ttl_ms_;
  ReservationBook* book_;
  size_t best_fit_candidates_;
};

}  // namespace phalanx::extender

#endif  // PHALANX_SCHEDULER_EXTENDER_VERBS_H_

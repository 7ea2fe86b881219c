// Rendezvous: how the pods of one run find each other.
//   - A run of more than one pod gets a headless Service named after its allocation, in its
//     namespace (RunService): no cluster IP, selecting the run's pods by phalanx.io/gang, and
//     publishing their addresses before they are ready (peers meet before any is ready). Each pod's
//     hostname is its name and its subdomain the Service's, so that it resolves as
//     "<allocation>-<rank>.<allocation>.<namespace>.svc" once it has an IP. The Service carries
//     the pods' managed-by, gang and job-id labels; the master deletes it with its run, and at
//     start deletes those of runs it does not know and creates any missing for runs it does.
//   - Environment of every run's task container (RendezvousOf), beside pod_builder's
//     PHALANX_NUM_PODS (nodes), PHALANX_POD_RANK (node rank) and PHALANX_SLOTS_PER_POD (processes
//     per node at one per slot):
//       PHALANX_CHIEF_ADDR, MASTER_ADDR: rank 0's name; "localhost" for a run of one pod.
//       PHALANX_CHIEF_PORT, MASTER_PORT: kRendezvousPort (the seeds' GLOO rendezvous port).
//       PHALANX_PEER_ADDRS: every pod's name in rank order, comma-separated.
//       PHALANX_WORLD_SIZE: pods x slots per pod (at least 1), the processes at one per slot.
//       GLOO_PORT_RANGE, NCCL_PORT_RANGE: task_container_defaults' ranges ("MIN:MAX"), when set.
#ifndef PHALANX_MASTER_PODS_RENDEZVOUS_H_
#define PHALANX_MASTER_PODS_RENDEZVOUS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace phalanx::master {

inline constexpr int kRendezvousPort = 12355;

// One pod of a run, as the rendezvous sees it.
struct RunPod {
  std::string ns;
  std::string allocation_id;
  int pods = 1;
  int rank = 0;
  int slots_per_pod = 0;
  std::string gloo_port_range;  // "MIN:MAX"; "" when unset.
  std::string nccl_port_range;
};

// What the pod gets: hostname and subdomain (empty for a run of one pod) and its environment.
struct Rendezvous {
  std::string hostname;
  std::string subdomain;
  std::vector<std::pair<std::string, std::string>> env;
};

Rendezvous RendezvousOf(const RunPod& pod);

// The headless Service of a run of more than one pod.
nlohmann::json RunService(absl::string_view ns, absl::string_view allocation_id,
                          absl::string_view job_id);

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_PODS_RENDEZVOUS_H_

// A run's headless Service and its pods' peer environment (see rendezvous.h).
#include "master/pods/rendezvous.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kube/decode.h"
#include "master/pods/pod_builder.h"

namespace phalanx::master {
namespace {

// Pod `rank`'s DNS name through the run's Service.
std::string PeerName(const RunPod& p, int rank) {
  return absl::StrCat(p.allocation_id, "-", rank, ".", p.allocation_id, ".", p.ns, ".svc");
}

}  // namespace

Rendezvous RendezvousOf(const RunPod& p) {
  Rendezvous out;
  std::vector<std::string> peers;
  if (p.pods > 1) {
    out.hostname = absl::StrCat(p.allocation_id, "-", p.rank);
    out.subdomain = p.allocation_id;
    for (int rank = 0; rank < p.pods; ++rank) peers.push_back(PeerName(p, rank));
  } else {
    peers.push_back("localhost");
  }
  const std::string port = std::to_string(kRendezvousPort);
  out.env = {{"PHALANX_CHIEF_ADDR", peers.front()},
             {"MASTER_ADDR", peers.front()},
             {"PHALANX_CHIEF_PORT", port},
             {"MASTER_PORT", port},
             {"PHALANX_PEER_ADDRS", absl::StrJoin(peers, ",")},
             {"PHALANX_WORLD_SIZE", std::to_string(p.pods * std::max(p.slots_per_pod, 1))}};
  if (!p.gloo_port_range.empty()) out.env.emplace_back("GLOO_PORT_RANGE", p.gloo_port_range);
  if (!p.nccl_port_range.empty()) out.env.emplace_back("NCCL_PORT_RANGE", p.nccl_port_range);
  return out;
}

nlohmann::json RunService(absl::string_view ns, absl::string_view allocation_id,
                          absl::string_view job_id) {
  const nlohmann::json selector = {{std::string(kManagedByLabel), kManagedByValue},
                                   {std::string(kube::kGangLabel), allocation_id}};
  nlohmann::json labels = selector;
  labels[std::string(kube::kJobIdLabel)] = job_id;
  return {
      {"apiVersion", "v1"},
      {"kind", "Service"},
      {"metadata", {{"name", allocation_id}, {"namespace", ns}, {"labels", labels}}},
      {"spec",
       {{"clusterIP", "None"},
        {"selector", selector},
        {"publishNotReadyAddresses", true},
        {"ports", {{{"name", "rendezvous"}, {"port", kRendezvousPort}, {"protocol", "TCP"}}}}}}};
}

}  // namespace phalanx::master

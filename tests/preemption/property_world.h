// Seeded random clusters for the property test: nodes with zones, taints and cordons; gangs with
// selectors, tolerations, queue positions, some running and some incomplete; and the services'
// part between rounds (start admitted gangs, mark and requeue victims, finish work).
#ifndef PHALANX_TESTS_PREEMPTION_PROPERTY_WORLD_H_
#define PHALANX_TESTS_PREEMPTION_PROPERTY_WORLD_H_

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/snapshot.h"
#include "preemption/admission.h"

namespace phalanx::preemption::property {

struct World {
  std::vector<core::Node> nodes;
  std::vector<core::PodInfo> pods;
};

// Up to `max_nodes` 4- or 8-GPU nodes in zone a or b, a fifth tainted dedicated=team:NoSchedule,
// a twentieth cordoned; and gangs as AddGangs makes them, about half of them running.
World RandomWorld(std::mt19937& rng, int max_nodes);

// Adds `count` gangs named "<prefix>g<i>": 1..8 pods of 1, 2, 4 or 8 GPUs, priorities 10..90,
// a tenth not preemptible, a quarter with a queue position, a quarter pinned to a zone, a third
// tolerating the taint, a twentieth missing a pod. With `may_run`, about half of the complete
// ones start on random eligible nodes with room (bound, some marked backfilled).
void AddGangs(std::mt19937& rng, int count, const std::string& prefix, bool may_run, World& w);

std::shared_ptr<const core::ClusterSnapshot> Build(const World& w, std::mt19937* shuffle = nullptr);

// Starts admitted and backfilled gangs on their plans at `now_ms` and marks victims.
void Apply(const RoundResult& r, int64_t now_ms, World& w);
// Victims leave at `now_ms` and come back gated.
void RequeueVictims(World& w, int64_t now_ms);
// Each running gang not marked for preemption ends (its pods go) with probability 1/6.
void FinishSome(std::mt19937& rng, World& w);

// The world and a round's decisions as text, to replay a failure.
std::string Render(const World& w);
std::string Render(const RoundResult& r);

}  // namespace phalanx::preemption::property

#endif  // PHALANX_TESTS_PREEMPTION_PROPERTY_WORLD_H_

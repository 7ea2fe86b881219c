// Micro benchmarks of the pure engine on synthetic clusters: planning a 64-pod gang, a whole
// admission round, a preemption plan, and one incremental snapshot update, at 1k/5k/15k nodes with
// 10k/100k pods; and a full start-time forecast of 1000 waiting gangs.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "forecast/forecast.h"
#include "gang/planner.h"
#include "preemption/admission.h"
#include "tests/testing/fixtures.h"

namespace phalanx {
namespace {

// 8-GPU nodes. Running GPU pods of g GPUs each (g = 1 when the pod count allows, else the
// smallest size that reaches `gpu_fill` of the GPUs), in gangs of 1, 2, 4 or 8 consecutive pods (a
// gang shares a node, as packing puts it), preemptible, priority 10..40. The rest of the pod count
// are CPU-only pods (100m, priority 1000 like system pods) spread round-robin.
core::SnapshotBuilder MakeCluster(int nodes, int pods, double gpu_fill) {
  std::mt19937 rng(42);
  core::SnapshotBuilder b;
  for (int i = 0; i < nodes; ++i) b.UpsertNode(testing::GpuNode(absl::StrCat("node-", i), 8));
  auto add = [&](int i, int node, int64_t gpus, const std::string& gang) {
    core::PodInfo p;
    p.ns = "bench";
    p.name = absl::StrCat("p", i);
    p.uid = absl::StrCat("uid-", i);
    p.gang = gang;
    p.node = absl::StrCat("node-", node);
    p.phase = core::PodPhase::kRunning;
    p.priority = gpus > 0 ? 10 * (1 + static_cast<int>(rng() % 4)) : 1000;
    p.start_ms = 1000;
    p.requests = testing::PodRequests(gpus > 0 ? 1000 : 100, 1 << 20, gpus);
    b.UpsertPod(std::move(p));
  };
  const int64_t target_gpus = static_cast<int64_t>(nodes * 8 * gpu_fill);
  int64_t gpus_per_pod = 1;
  while (gpus_per_pod < 8 && target_gpus / gpus_per_pod > pods) gpus_per_pod *= 2;
  const int gpu_pods = static_cast<int>(std::min<int64_t>(pods, target_gpus / gpus_per_pod));
  const int per_node = static_cast<int>(8 / gpus_per_pod);
  int i = 0;
  for (int gang = 0; i < gpu_pods; ++gang) {
    int size = 1 << (gang % 4);
    for (int k = 0; k < size && i < gpu_pods; ++k, ++i) {
      add(i, i / per_node % nodes, gpus_per_pod, absl::StrCat("g", gang));
    }
  }
  for (; i < pods; ++i) add(i, i % nodes, 0, "");
  return b;
}

void AddPendingGang(core::SnapshotBuilder& b, int pods, int64_t gpus, int32_t priority) {
  for (core::PodInfo& p : testing::GatedGang(
           {.name = "head", .pods = pods, .gpus_per_pod = gpus, .priority = priority})) {
    b.UpsertPod(std::move(p));
  }
}

void Args(benchmark::internal::Benchmark* bm) {
  for (int nodes : {1000, 5000, 15000}) {
    for (int pods : {10000, 100000}) bm->Args({nodes, pods});
  }
  bm->Unit(benchmark::kMillisecond);
}

// Plan one 64-pod gang (4 GPUs a pod) on a cluster with half its GPUs used.
void BM_PlanGang64(benchmark::State& state) {
  core::SnapshotBuilder b = MakeCluster(state.range(0), state.range(1), 0.5);
  AddPendingGang(b, 64, 4, 50);
  auto snap = b.Build();
  gang::SlotPolicy slots{.max_slots_per_pod = 4};
  core::Gang g = *snap->FindGang("default/head");
  gang::Capacity free = gang::FreeCapacity(*snap);
  for (auto _ : state) {
    gang::GangPlanner planner(*snap, slots);
    benchmark::DoNotOptimize(planner.Plan(g, free));
  }
}
BENCHMARK(BM_PlanGang64)->Apply(Args);

// Rounds deciding one pending 64-pod gang (4 GPUs a pod) at `priority` on a cluster whose GPUs are
// `fill` used; every round must reach `expected` for that gang.
void Round64(benchmark::State& state, double fill, int32_t priority, preemption::Verdict expected) {
  core::SnapshotBuilder b = MakeCluster(state.range(0), state.range(1), fill);
  AddPendingGang(b, 64, 4, priority);
  auto snap = b.Build();
  preemption::AdmissionOptions opts;
  opts.slots.max_slots_per_pod = 4;
  opts.now_ms = 60'000;
  for (auto _ : state) {
    preemption::RoundResult r = preemption::RunAdmissionRound(*snap, opts);
    if (r.decisions[0].verdict != expected) {
      state.SkipWithError(absl::StrCat("gang decided ", VerdictName(r.decisions[0].verdict),
                                       " (the pods may not fill the cluster)")
                              .c_str());
    }
  }
}

// A whole admission round admitting the gang on a half-full cluster (snapshot to decision).
void BM_AdmissionRound64(benchmark::State& state) {
  Round64(state, 0.5, 50, preemption::Verdict::kAdmit);
}
BENCHMARK(BM_AdmissionRound64)->Apply(Args);

// A full cluster: the gang, at priority 90, must preempt whole lower-priority gangs.
void BM_PreemptionRound64(benchmark::State& state) {
  Round64(state, 1.0, 90, preemption::Verdict::kPreempt);
}
BENCHMARK(BM_PreemptionRound64)->Apply(Args);

// One pod event applied to an existing snapshot (what the informer does per watch event).
void BM_SnapshotUpdate(benchmark::State& state) {
  core::SnapshotBuilder b = MakeCluster(state.range(0), state.range(1), 0.5);
  auto snap = b.Build();
  core::PodInfo p = *snap->FindPod("uid-0");
  int64_t flip = 0;
  for (auto _ : state) {
    p.start_ms = ++flip;
    core::SnapshotBuilder next(snap);
    next.UpsertPod(p);
    benchmark::DoNotOptimize(next.Build());
  }
  state.SetLabel("upsert one pod + Build");
}
BENCHMARK(BM_SnapshotUpdate)->Apply(Args)->Unit(benchmark::kMicrosecond);

// A forecast of 1000 waiting gangs (one pod of 1-8 GPUs, or 2-8 pods of 8 GPUs, as the master
// splits them at maxSlotsPerPod 8) on a full cluster, every gang with a
// runtime of 1-600 minutes: what the extender's forecaster computes at each refresh. Third
// argument 1: the waiting gangs have priorities 10-40 like the running ones, so the rounds choose
// victims (the worst case); 0: they rank below every running gang (a queue behind running work).
void BM_Forecast1000(benchmark::State& state) {
  core::SnapshotBuilder b = MakeCluster(state.range(0), state.range(1), 1.0);
  std::mt19937 rng(7);
  for (int i = 0; i < 1000; ++i) {
    const int pods = 1 + static_cast<int>(rng() % 8);
    const int64_t gpus = pods > 1 ? 8 : int64_t{1} << (rng() % 4);
    const int32_t priority = state.range(2) ? 10 * (1 + static_cast<int>(rng() % 4)) : 5;
    for (core::PodInfo& p : testing::GatedGang({.name = absl::StrCat("wait-", i),
                            .pods = pods,
                            .gpus_per_pod = gpus,
                            .priority = priority,
                            .created_ms = 2000 + i})) {
      b.UpsertPod(std::move(p));
    }
  }
  auto snap = b.Build();
  forecast::RuntimeModel model;
  for (const core::Gang& g : snap->Gangs()) {
    model[g.key] = static_cast<int64_t>(1 + rng() % 600) * 60'000;
  }
  forecast::ForecastOptions opts;
  opts.admission.slots.max_slots_per_pod = 8;
  opts.admission.now_ms = 60'000;
  int64_t estimated = 0, rounds = 0;
  for (auto _ : state) {
    forecast::ForecastResult r = forecast::Forecast(snap, opts, model);
    estimated = std::count_if(r.gangs.begin(), r.gangs.end(),
                              [](const forecast::GangEta& e) { return e.start_ms.has_value(); });
    rounds = r.rounds;
  }
  state.counters["estimated"] = static_cast<double>(estimated);
  state.counters["rounds"] = static_cast<double>(rounds);
}
BENCHMARK(BM_Forecast1000)
    ->Args({1000, 10000, 0})
    ->Args({1000, 10000, 1})
    ->Args({5000, 100000, 0})
    ->Args({5000, 100000, 1})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace phalanx

BENCHMARK_MAIN();

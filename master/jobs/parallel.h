// Side-by-side API requests: pods are created, deleted and relabelled a few at a time, so that a
// large gang or a search of many trials costs the API server's round trip about once per batch
// instead of once per pod.
#ifndef PHALANX_MASTER_JOBS_PARALLEL_H_
#define PHALANX_MASTER_JOBS_PARALLEL_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <system_error>
#include <thread>
#include <vector>

namespace phalanx::master {

// How many API requests of one batch are in flight at once.
inline constexpr size_t kApiRequestsAtOnce = 8;

// Calls fn(i) for every i in [0, n) on up to `width` threads (the calling one among them) and
// returns once every call has returned. `fn` must be safe to call from several threads. When no
// thread can be started, the calling thread does all the calls.
template <typename Fn>
void ForEachIndexAtOnce(size_t n, size_t width, const Fn& fn) {
  std::atomic<size_t> next = 0;
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) fn(i);
  };
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < std::min(n, width); ++t) {
    try {
      helpers.emplace_back(work);
    } catch (const std::system_error&) {
      break;
    }
  }
  work();
  for (std::thread& t : helpers) t.join();
}

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_JOBS_PARALLEL_H_

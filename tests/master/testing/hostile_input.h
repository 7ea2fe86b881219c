// Hostile input for tests, and what it costs: peak memory and time of a call (the growth of this
// process's peak resident set, VmHWM in /proc/self/status, across it), an alias bomb, repeats.
#ifndef PHALANX_TESTS_MASTER_TESTING_HOSTILE_INPUT_H_
#define PHALANX_TESTS_MASTER_TESTING_HOSTILE_INPUT_H_

#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>

namespace phalanx::master::testing {

// VmHWM in KiB; 0 when unreadable.
inline int64_t PeakRssKib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6));
  }
  return 0;
}

struct Cost {
  int64_t peak_growth_kib = 0;
  double seconds = 0;
};

template <typename F>
Cost Measure(F f) {
  const int64_t before = PeakRssKib();
  const auto start = std::chrono::steady_clock::now();
  f();
  return {PeakRssKib() - before,
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

// Generous bounds that the old code (gigabytes, tens of seconds, or a crash) is far beyond.
inline constexpr int64_t kMaxPeakGrowthKib = 128 * 1024;
inline constexpr double kMaxSeconds = 5;

// A nested-alias bomb: `levels` levels, each a list of ten aliases of the one before (10^levels
// scalars when expanded), in well under a kilobyte.
inline std::string AliasBomb(int levels) {
  std::string yaml = "data:\n  l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i <= levels; ++i) {
    const std::string prev = "*l" + std::to_string(i - 1);
    yaml += "  l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) yaml += (k ? ", " : "") + prev;
    yaml += "]\n";
  }
  return yaml;
}

// `s`, `n` times.
inline std::string Repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

}  // namespace phalanx::master::testing

#endif  // PHALANX_TESTS_MASTER_TESTING_HOSTILE_INPUT_H_

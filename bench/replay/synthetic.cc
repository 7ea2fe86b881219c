// The seeded synthetic workload: its SPEC and its generator (synthetic.h).
#include "bench/replay/synthetic.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <set>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/types/span.h"
#include "bench/replay/priority.h"

namespace phalanx::replay {
namespace {

struct Share {
  int64_t value;
  int percent;
};

constexpr Share kGpuShares[] = {{1, 12},  {2, 8},  {3, 2},   {4, 10}, {6, 2},  {8, 18},
                                {16, 18}, {24, 3}, {32, 15}, {48, 2}, {64, 10}};
constexpr Share kClassShares[] = {{kHighPriority, 20}, {kMediumPriority, 50}, {kLowPriority, 30}};

constexpr int Total(absl::Span<const Share> shares) {
  int total = 0;
  for (const Share& s : shares) total += s.percent;
  return total;
}
static_assert(Total(kGpuShares) == 100 && Total(kClassShares) == 100);

constexpr double kMinDurationS = 60;
constexpr double kMaxDurationS = 7 * 24 * 3600;

// Draws from one mt19937_64 stream, with the transforms of synthetic.h.
class Draws {
 public:
  explicit Draws(uint64_t seed) : rng_(seed) {}

  // A value of `shares` (percentages adding up to 100) by one draw r % 100.
  int64_t Pick(absl::Span<const Share> shares) {
    int r = static_cast<int>(rng_() % 100);
    for (size_t i = 0; i + 1 < shares.size(); ++i) {
      if (r < shares[i].percent) return shares[i].value;
      r -= shares[i].percent;
    }
    return shares.back().value;
  }
  // [0, 1), from the top 53 bits of one draw.
  double Uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }
  double Exponential() { return -std::log1p(-Uniform()); }
  // Box-Muller: two draws.
  double Normal() {
    const double u1 = 1.0 - Uniform();  // (0, 1]: the log is finite.
    const double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  std::mt19937_64 rng_;
};

int64_t DurationMs(const SyntheticSpec& spec, Draws& draw) {
  const double seconds = spec.median_min * 60.0 * std::exp(spec.sigma * draw.Normal());
  return std::llround(std::clamp(seconds, kMinDurationS, kMaxDurationS)) * 1000;
}

bool ParseValue(absl::string_view text, int64_t* out) { return absl::SimpleAtoi(text, out); }
bool ParseValue(absl::string_view text, uint64_t* out) { return absl::SimpleAtoi(text, out); }
bool ParseValue(absl::string_view text, double* out) {
  return absl::SimpleAtod(text, out) && std::isfinite(*out);
}

template <typename T>
absl::Status SetValue(absl::string_view key, absl::string_view text, T min, T max, T* out) {
  if (ParseValue(text, out) && *out >= min && *out <= max) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "synthetic spec: ", key, "='", text, "' is not ",
      std::is_integral_v<T> ? "a whole number" : "a number", " from ", min, " to ", max));
}

absl::Status SetKey(absl::string_view key, absl::string_view text, SyntheticSpec& spec) {
  if (key == "jobs") return SetValue<int64_t>(key, text, 1, 10'000'000, &spec.jobs);
  if (key == "seed") {
    return SetValue<uint64_t>(key, text, 0, std::numeric_limits<uint64_t>::max(), &spec.seed);
  }
  if (key == "load") return SetValue(key, text, 0.01, 100.0, &spec.load);
  if (key == "median_min") return SetValue(key, text, 1.0, 10080.0, &spec.median_min);
  if (key == "sigma") return SetValue(key, text, 0.0, 5.0, &spec.sigma);
  return absl::InvalidArgumentError(absl::StrCat("synthetic spec: unknown key '", key,
                                                 "' (jobs, seed, load, median_min, sigma)"));
}

// The shortest text that reads back as `v`.
std::string Shortest(double v) {
  char buf[32];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

}  // namespace

absl::StatusOr<SyntheticSpec> ParseSyntheticSpec(absl::string_view text) {
  SyntheticSpec spec;
  std::set<std::string> seen;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    const size_t eq = part.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("synthetic spec: '", part, "' is not key=value (e.g. jobs=3000)"));
    }
    const absl::string_view key = part.substr(0, eq);
    if (!seen.emplace(key).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("synthetic spec: key '", key, "' is given twice"));
    }
    absl::Status s = SetKey(key, part.substr(eq + 1), spec);
    if (!s.ok()) return s;
  }
  return spec;
}

std::string SyntheticSpecText(const SyntheticSpec& spec) {
  return absl::StrCat("jobs=", spec.jobs, ",seed=", spec.seed, ",load=", Shortest(spec.load),
                      ",median_min=", Shortest(spec.median_min), ",sigma=", Shortest(spec.sigma));
}

Trace GenerateSynthetic(const SyntheticSpec& spec, int64_t cluster_gpus) {
  Draws draw(spec.seed);
  Trace trace;
  trace.format = TraceFormat::kSynthetic;
  double work_gpu_ms = 0;
  for (int64_t i = 0; i < spec.jobs; ++i) {
    TraceJob& j = trace.jobs.emplace_back();
    j.line = i + 1;
    j.gpus = draw.Pick(kGpuShares);
    j.priority = static_cast<int32_t>(draw.Pick(kClassShares));
    j.duration_ms = DurationMs(spec, draw);
    work_gpu_ms += static_cast<double>(j.gpus) * static_cast<double>(j.duration_ms);
  }
  const double span_ms =
      work_gpu_ms / (spec.load * static_cast<double>(std::max<int64_t>(cluster_gpus, 1)));
  const double mean_gap_ms = spec.jobs > 1 ? span_ms / static_cast<double>(spec.jobs - 1) : 0;
  double t = 0;
  for (size_t i = 1; i < trace.jobs.size(); ++i) {
    t += mean_gap_ms * draw.Exponential();
    trace.jobs[i].submit_ms = std::llround(t);
  }
  return trace;
}

}  // namespace phalanx::replay

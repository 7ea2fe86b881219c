// Job traces for the replay simulator: the Philly (Pollux) and Alibaba v2023 files as published,
// and a generic CSV. Parsing is strict: a malformed line is an error naming its line and field.
//
// Generic CSV: a header line `submit_time,duration,num_gpus[,priority][,tenant]` (columns in that
// order, the optional ones may be left out from the right), then one job per line. Times are
// seconds (decimals allowed), `num_gpus` a whole number >= 0, `priority` an integer (empty: derived
// by the seeded rule of jobs.h), `tenant` free text without commas.
#ifndef PHALANX_BENCH_REPLAY_TRACE_H_
#define PHALANX_BENCH_REPLAY_TRACE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace phalanx::replay {

// kSynthetic: generated (synthetic.h), never parsed.
enum class TraceFormat { kAuto, kPhilly, kAlibaba, kGeneric, kSynthetic };

// "philly", "alibaba", "generic" or "auto".
absl::StatusOr<TraceFormat> ParseTraceFormat(absl::string_view name);
const char* TraceFormatName(TraceFormat f);

struct TraceJob {
  // 1-based line in the file (the header is line 1), or job number in a synthetic workload: the
  // job's identity.
  int64_t line = 0;
  int64_t submit_ms = 0;  // Relative to the earliest submit of the trace (which is 0).
  int64_t duration_ms = 0;
  int64_t gpus = 0;
  std::optional<int32_t> priority;  // From the trace, when it has one.
  std::string tenant;
};

struct Trace {
  TraceFormat format = TraceFormat::kGeneric;
  std::vector<TraceJob> jobs;  // Sorted by submit time, then line.
  // Rows that are not GPU jobs and are left out: no GPU requested (Alibaba CPU pods, generic rows
  // with num_gpus 0), or never ran in the original cluster (Alibaba rows without scheduled_time).
  int64_t skipped_no_gpu = 0;
  int64_t skipped_never_ran = 0;
  // Alibaba rows asking for a fraction of one GPU (gpu_milli < 1000), counted as a whole GPU.
  int64_t fractional_gpu_rounded_up = 0;
};

// Parses a whole trace file's text. `kAuto` picks the format from the header line.
absl::StatusOr<Trace> ParseTrace(absl::string_view text, TraceFormat format = TraceFormat::kAuto);
// Reads and parses a file; errors name the path.
absl::StatusOr<Trace> LoadTrace(const std::string& path, TraceFormat format = TraceFormat::kAuto);

}  // namespace phalanx::replay

#endif  // PHALANX_BENCH_REPLAY_TRACE_H_

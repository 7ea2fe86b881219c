// Trace parsing: Philly (Pollux), Alibaba v2023 openb pod list, and the generic CSV (trace.h).
#include "bench/replay/trace.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "bench/replay/priority.h"

namespace phalanx::replay {
namespace {

constexpr absl::string_view kPhillyHeader = "timestamp,duration,num_gpus,gpu_time,cluster";
constexpr absl::string_view kAlibabaHeader =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time";
constexpr absl::string_view kGenericHeader = "submit_time,duration,num_gpus,priority,tenant";

// One data line being parsed: its number and fields, for errors that name both.
struct Row {
  int64_t line;
  std::vector<absl::string_view> fields;
  const std::vector<std::string>* names;

  absl::Status Error(size_t field, absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("line ", line, ", field ", (*names)[field], ": ", what));
  }
  absl::StatusOr<int64_t> Int(size_t field) const {
    int64_t v = 0;
    if (!absl::SimpleAtoi(fields[field], &v)) {
      return Error(field, absl::StrCat("'", fields[field], "' is not a whole number"));
    }
    if (v < 0) return Error(field, absl::StrCat("'", fields[field], "' is negative"));
    return v;
  }
  // Seconds (decimals allowed) as milliseconds.
  absl::StatusOr<int64_t> SecondsMs(size_t field) const {
    double v = 0;
    if (!absl::SimpleAtod(fields[field], &v) || !std::isfinite(v)) {
      return Error(field, absl::StrCat("'", fields[field], "' is not a number"));
    }
    if (v < 0) return Error(field, absl::StrCat("'", fields[field], "' is negative"));
    if (v > 1e12) return Error(field, absl::StrCat("'", fields[field], "' is too large"));
    return std::llround(v * 1000);
  }
};

absl::StatusOr<TraceJob> ParsePhilly(const Row& row) {
  TraceJob job;
  absl::Time t;
  std::string err;
  if (!absl::ParseTime("%Y-%m-%d %H:%M:%S", std::string(row.fields[0]), absl::UTCTimeZone(), &t,
                       &err)) {
    return row.Error(0, absl::StrCat("'", row.fields[0], "' is not YYYY-MM-DD HH:MM:SS"));
  }
  job.submit_ms = absl::ToUnixMillis(t);
  absl::StatusOr<int64_t> duration = row.SecondsMs(1);
  if (!duration.ok()) return duration.status();
  absl::StatusOr<int64_t> gpus = row.Int(2);
  if (!gpus.ok()) return gpus.status();
  absl::StatusOr<int64_t> gpu_time = row.SecondsMs(3);
  if (!gpu_time.ok()) return gpu_time.status();
  job.duration_ms = *duration;
  job.gpus = *gpus;
  job.tenant = std::string(row.fields[4]);
  return job;
}

absl::StatusOr<int32_t> QosPriority(const Row& row, size_t field) {
  absl::string_view qos = row.fields[field];
  if (qos == "LS" || qos == "Guaranteed") return kHighPriority;
  if (qos == "Burstable") return kMediumPriority;
  if (qos == "BE") return kLowPriority;
  return row.Error(field, absl::StrCat("unknown qos '", qos, "' (LS, Guaranteed, Burstable, BE)"));
}

// Alibaba rows that are left out come back as a job with gpus == 0 (no GPU) or duration -1
// (never scheduled); the caller counts them.
absl::StatusOr<TraceJob> ParseAlibaba(const Row& row, Trace& trace) {
  TraceJob job;
  absl::StatusOr<int64_t> gpus = row.Int(3);
  if (!gpus.ok()) return gpus.status();
  absl::StatusOr<int64_t> milli = row.Int(4);
  if (!milli.ok()) return milli.status();
  absl::StatusOr<int32_t> priority = QosPriority(row, 6);
  if (!priority.ok()) return priority.status();
  absl::StatusOr<int64_t> created = row.SecondsMs(8);
  if (!created.ok()) return created.status();
  absl::StatusOr<int64_t> deleted = row.SecondsMs(9);
  if (!deleted.ok()) return deleted.status();
  job.gpus = *gpus;
  job.priority = *priority;
  job.tenant = std::string(row.fields[6]);
  job.submit_ms = *created;
  job.duration_ms = -1;
  if (job.gpus == 0 || row.fields[10].empty()) return job;
  absl::StatusOr<int64_t> scheduled = row.SecondsMs(10);
  if (!scheduled.ok()) return scheduled.status();
  if (*deleted < *scheduled) return row.Error(9, "deletion_time is before scheduled_time");
  job.duration_ms = *deleted - *scheduled;
  if (job.gpus == 1 && *milli < 1000) ++trace.fractional_gpu_rounded_up;
  return job;
}

absl::StatusOr<TraceJob> ParseGeneric(const Row& row) {
  TraceJob job;
  absl::StatusOr<int64_t> submit = row.SecondsMs(0);
  if (!submit.ok()) return submit.status();
  absl::StatusOr<int64_t> duration = row.SecondsMs(1);
  if (!duration.ok()) return duration.status();
  absl::StatusOr<int64_t> gpus = row.Int(2);
  if (!gpus.ok()) return gpus.status();
  job.submit_ms = *submit;
  job.duration_ms = *duration;
  job.gpus = *gpus;
  if (row.fields.size() > 3 && !row.fields[3].empty()) {
    int32_t p = 0;
    if (!absl::SimpleAtoi(row.fields[3], &p)) {
      return row.Error(3, absl::StrCat("'", row.fields[3], "' is not an integer"));
    }
    job.priority = p;
  }
  if (row.fields.size() > 4) job.tenant = std::string(row.fields[4]);
  return job;
}

// The format named by a header line, and its column names.
absl::StatusOr<TraceFormat> DetectFormat(absl::string_view header, TraceFormat wanted,
                                         std::vector<std::string>& names) {
  struct Known {
    TraceFormat format;
    absl::string_view header;
  };
  for (const Known& k :
       {Known{TraceFormat::kPhilly, kPhillyHeader}, Known{TraceFormat::kAlibaba, kAlibabaHeader},
        Known{TraceFormat::kGeneric, kGenericHeader}}) {
    if (wanted != TraceFormat::kAuto && wanted != k.format) continue;
    names = absl::StrSplit(k.header, ',');
    if (header == k.header) return k.format;
    // The generic header may leave out priority and tenant.
    std::vector<std::string> got = absl::StrSplit(header, ',');
    if (k.format == TraceFormat::kGeneric && got.size() >= 3 && got.size() <= names.size() &&
        std::equal(got.begin(), got.end(), names.begin())) {
      names.resize(got.size());
      return k.format;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "line 1: header '", header, "' is not a known trace format (expected '", kPhillyHeader,
      "', '", kAlibabaHeader, "' or 'submit_time,duration,num_gpus[,priority][,tenant]')"));
}

}  // namespace

absl::StatusOr<TraceFormat> ParseTraceFormat(absl::string_view name) {
  if (name == "auto") return TraceFormat::kAuto;
  if (name == "philly") return TraceFormat::kPhilly;
  if (name == "alibaba") return TraceFormat::kAlibaba;
  if (name == "generic") return TraceFormat::kGeneric;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown trace format '", name, "' (auto, philly, alibaba, generic)"));
}

const char* TraceFormatName(TraceFormat f) {
  switch (f) {
    case TraceFormat::kAuto:
      return "auto";
    case TraceFormat::kPhilly:
      return "philly";
    case TraceFormat::kAlibaba:
      return "alibaba";
    case TraceFormat::kGeneric:
      return "generic";
    case TraceFormat::kSynthetic:
      return "synthetic";
  }
  return "unknown";
}

absl::StatusOr<Trace> ParseTrace(absl::string_view text, TraceFormat format) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  auto strip = [](absl::string_view s) { return absl::StripSuffix(s, "\r"); };
  if (lines.empty() || strip(lines[0]).empty()) {
    return absl::InvalidArgumentError("line 1: empty trace, expected a header line");
  }
  Trace trace;
  std::vector<std::string> names;
  absl::StatusOr<TraceFormat> detected = DetectFormat(strip(lines[0]), format, names);
  if (!detected.ok()) return detected.status();
  trace.format = *detected;
  for (size_t i = 1; i < lines.size(); ++i) {
    absl::string_view line = strip(lines[i]);
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    Row row{static_cast<int64_t>(i + 1), absl::StrSplit(line, ','), &names};
    if (row.fields.size() != names.size()) {
      return absl::InvalidArgumentError(absl::StrCat("line ", row.line, ": expected ", names.size(),
                                                     " fields (", absl::StrJoin(names, ","),
                                                     "), got ", row.fields.size()));
    }
    absl::StatusOr<TraceJob> job = trace.format == TraceFormat::kPhilly ? ParsePhilly(row)
                                   : trace.format == TraceFormat::kAlibaba
                                       ? ParseAlibaba(row, trace)
                                       : ParseGeneric(row);
    if (!job.ok()) return job.status();
    job->line = row.line;
    if (job->gpus == 0) {
      ++trace.skipped_no_gpu;
    } else if (job->duration_ms < 0) {
      ++trace.skipped_never_ran;
    } else {
      trace.jobs.push_back(std::move(*job));
    }
  }
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const TraceJob& j : trace.jobs) origin = std::min(origin, j.submit_ms);
  for (TraceJob& j : trace.jobs) j.submit_ms -= origin;
  std::stable_sort(trace.jobs.begin(), trace.jobs.end(),
                   [](const TraceJob& a, const TraceJob& b) { return a.submit_ms < b.submit_ms; });
  return trace;
}

absl::StatusOr<Trace> LoadTrace(const std::string& path, TraceFormat format) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::ostringstream text;
  text << in.rdbuf();
  absl::StatusOr<Trace> trace = ParseTrace(text.str(), format);
  if (!trace.ok()) {
    return absl::Status(trace.status().code(), absl::StrCat(path, ": ", trace.status().message()));
  }
  return trace;
}

}  // namespace phalanx::replay

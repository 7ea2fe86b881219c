// Trace parsing: the three formats, what is left out, and errors that name the line and field.
#include "bench/replay/trace.h"

#include <gtest/gtest.h>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "bench/replay/priority.h"

namespace phalanx::replay {
namespace {

TEST(Trace, PhillySortedAndRelative) {
  absl::StatusOr<Trace> t = ParseTrace(
      "timestamp,duration,num_gpus,gpu_time,cluster\n"
      "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
      "2017-10-09 07:00:00,2951.5,8,23612.0,6214e9\r\n"
      "\n");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->format, TraceFormat::kPhilly);
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->jobs[0].line, 3);
  EXPECT_EQ(t->jobs[0].submit_ms, 0);
  EXPECT_EQ(t->jobs[0].duration_ms, 2951500);
  EXPECT_EQ(t->jobs[0].gpus, 8);
  EXPECT_EQ(t->jobs[0].tenant, "6214e9");
  EXPECT_FALSE(t->jobs[0].priority.has_value());
  EXPECT_EQ(t->jobs[1].line, 2);
  EXPECT_EQ(t->jobs[1].submit_ms, 115000);
}

TEST(Trace, AlibabaSkipsCpuAndNeverScheduledPodsAndMapsQos) {
  absl::StatusOr<Trace> t = ParseTrace(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time,scheduled_time\n"
      "p0,12000,16384,1,1000,,LS,Running,10,1010,12\n"
      "p1,6000,12288,1,460,,BE,Failed,20,100,30\n"
      "p2,6000,12288,0,0,,BE,Running,20,100,30\n"
      "p3,6000,12288,8,1000,,Burstable,Pending,40,100,\n"
      "p4,6000,12288,2,1000,,Guaranteed,Succeeded,50,60,50\n");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->skipped_no_gpu, 1);
  EXPECT_EQ(t->skipped_never_ran, 1);
  EXPECT_EQ(t->fractional_gpu_rounded_up, 1);
  ASSERT_EQ(t->jobs.size(), 3u);
  EXPECT_EQ(t->jobs[0].duration_ms, 998000);  // deletion - scheduled
  EXPECT_EQ(t->jobs[0].priority, kHighPriority);
  EXPECT_EQ(t->jobs[1].submit_ms, 10000);
  EXPECT_EQ(t->jobs[1].priority, kLowPriority);
  EXPECT_EQ(t->jobs[2].gpus, 2);
  EXPECT_EQ(t->jobs[2].priority, kHighPriority);
}

TEST(Trace, GenericWithAndWithoutOptionalColumns) {
  absl::StatusOr<Trace> full = ParseTrace(
      "submit_time,duration,num_gpus,priority,tenant\n"
      "5,10.5,4,90,team-a\n"
      "1,3,1,,team-b\n");
  ASSERT_TRUE(full.ok()) << full.status();
  ASSERT_EQ(full->jobs.size(), 2u);
  EXPECT_EQ(full->jobs[0].tenant, "team-b");
  EXPECT_FALSE(full->jobs[0].priority.has_value());
  EXPECT_EQ(full->jobs[1].submit_ms, 4000);
  EXPECT_EQ(full->jobs[1].duration_ms, 10500);
  EXPECT_EQ(full->jobs[1].priority, 90);

  absl::StatusOr<Trace> minimal = ParseTrace("submit_time,duration,num_gpus\n0,60,2\n0,1,0\n");
  ASSERT_TRUE(minimal.ok()) << minimal.status();
  EXPECT_EQ(minimal->jobs.size(), 1u);
  EXPECT_EQ(minimal->skipped_no_gpu, 1);
}

void ExpectError(absl::string_view text, absl::string_view message) {
  absl::StatusOr<Trace> t = ParseTrace(text);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.status().message(), message);
}

TEST(Trace, MalformedLinesNameLineAndField) {
  ExpectError("submit_time,duration,num_gpus\n0,60,2\n1,abc,2\n",
              "line 3, field duration: 'abc' is not a number");
  ExpectError("submit_time,duration,num_gpus\n0,60,2.5\n",
              "line 2, field num_gpus: '2.5' is not a whole number");
  ExpectError("submit_time,duration,num_gpus\n-1,60,2\n",
              "line 2, field submit_time: '-1' is negative");
  ExpectError("submit_time,duration,num_gpus,priority\n0,60,2,high\n",
              "line 2, field priority: 'high' is not an integer");
  ExpectError("submit_time,duration,num_gpus\n0,60\n",
              "line 2: expected 3 fields (submit_time,duration,num_gpus), got 2");
  ExpectError("timestamp,duration,num_gpus,gpu_time,cluster\n2017-13-45 07:01:55,66.0,1,66.0,a\n",
              "line 2, field timestamp: '2017-13-45 07:01:55' is not YYYY-MM-DD HH:MM:SS");
  ExpectError(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time,scheduled_time\np0,1,1,1,1000,,Gold,Running,0,10,0\n",
      "line 2, field qos: unknown qos 'Gold' (LS, Guaranteed, Burstable, BE)");
  ExpectError(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time,scheduled_time\np0,1,1,1,1000,,LS,Running,0,10,20\n",
      "line 2, field deletion_time: deletion_time is before scheduled_time");
}

TEST(Trace, UnknownHeaderOrFormatMismatch) {
  absl::StatusOr<Trace> t = ParseTrace("a,b,c\n1,2,3\n");
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(absl::StartsWith(t.status().message(), "line 1: header 'a,b,c' is not a known"));
  EXPECT_FALSE(ParseTrace("submit_time,duration,num_gpus\n0,1,1\n", TraceFormat::kPhilly).ok());
  EXPECT_FALSE(ParseTrace("").ok());
  EXPECT_FALSE(LoadTrace("/nonexistent/trace.csv").ok());
}

TEST(Priority, SeededRuleIsStableAndOnlyFillsMissing) {
  std::vector<TraceJob> jobs(1000);
  jobs[0].priority = 7;
  std::vector<TraceJob> again = jobs;
  AssignPriorities(jobs, 42);
  AssignPriorities(again, 42);
  std::array<int, kPriorityClasses> counts{};
  for (size_t i = 0; i < jobs.size(); ++i) {
    EXPECT_EQ(jobs[i].priority, again[i].priority);
    if (i > 0) ++counts[static_cast<int>(ClassOf(*jobs[i].priority))];
  }
  EXPECT_EQ(jobs[0].priority, 7);
  // 10% / 60% / 30%, give or take sampling noise on 999 draws.
  EXPECT_NEAR(counts[0], 100, 35);
  EXPECT_NEAR(counts[1], 600, 60);
  EXPECT_NEAR(counts[2], 300, 50);
  std::vector<TraceJob> other(1000);
  AssignPriorities(other, 43);
  int differ = 0;
  for (size_t i = 1; i < jobs.size(); ++i) differ += other[i].priority != jobs[i].priority;
  EXPECT_GT(differ, 100);
}

}  // namespace
}  // namespace phalanx::replay

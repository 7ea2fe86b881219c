// ExperimentService.GetTrialLogs on a fake cluster (ownership_fixture.h): every rank's lines by
// pod, one rank, the last lines, the pods of an ended run skipped once gone; only the owner or an
// admin reads them, and bad requests are refused naming the field.
#include <set>
#include <string>
#include <vector>

#include "tests/master/testing/ownership_fixture.h"

namespace phalanx::master {
namespace {

using ::testing::ElementsAre;

// A follow of every pod's log, open until cancelled (the fake's followed logs never end).
struct Followed {
  std::unique_ptr<grpc::ClientContext> ctx;
  std::unique_ptr<grpc::ClientReader<v1::GetTrialLogsResponse>> reader;
};

class TrialLogsTest : public OwnershipTest {
 protected:
  // "pod: line" for each message, and the call's status.
  std::vector<std::string> Logs(const std::string& token, int64_t trial,
                                std::optional<int> rank = std::nullopt, int tail = 0,
                                bool follow = false, grpc::Status* status = nullptr) {
    v1::GetTrialLogsRequest req;
    req.set_trial_id(trial);
    if (rank) req.set_rank(*rank);
    req.set_tail_lines(tail);
    req.set_follow(follow);
    std::unique_ptr<grpc::ClientContext> ctx = Ctx(token);
    auto reader = experiments_->GetTrialLogs(ctx.get(), req);
    std::vector<std::string> out;
    for (v1::GetTrialLogsResponse l; reader->Read(&l);) {
      out.push_back(absl::StrCat(l.pod(), " r", l.run(), " #", l.rank(), ": ", l.line()));
    }
    const grpc::Status s = reader->Finish();
    if (status != nullptr) *status = s;
    EXPECT_TRUE(status != nullptr || s.ok()) << s.error_message();
    return out;
  }
  Followed Follow(const std::string& token, int64_t trial) {
    v1::GetTrialLogsRequest req;
    req.set_trial_id(trial);
    req.set_follow(true);
    Followed f{.ctx = Ctx(token)};
    f.reader = experiments_->GetTrialLogs(f.ctx.get(), req);
    return f;
  }
};

// 8 slots at max_slots_per_pod 4: two pods.
constexpr char kTwoPods[] = "resources: {slots_per_trial: 8}\n";

TEST_F(TrialLogsTest, EveryRankOneRankAndTheLastLines) {
  const v1::Experiment exp = MustCreateAs(alice_, kTwoPods);
  const v1::Trial trial = Get(exp.id()).trials(0);
  const std::string a = trial.allocation_id();
  EXPECT_THAT(Logs(alice_, trial.id()),
              ElementsAre(a + "-0 r1 #0: " + a + "-0 line 1", a + "-0 r1 #0: " + a + "-0 line 2",
                          a + "-1 r1 #1: " + a + "-1 line 1", a + "-1 r1 #1: " + a + "-1 line 2"));
  EXPECT_THAT(Logs(token_, trial.id(), 1, 1), ElementsAre(a + "-1 r1 #1: " + a + "-1 line 2"));
  Followed followed = Follow(alice_, trial.id());
  std::set<std::string> lines;
  for (v1::GetTrialLogsResponse l; lines.size() < 4 && followed.reader->Read(&l);) {
    lines.insert(l.line());
  }
  EXPECT_EQ(lines.size(), 4u);
  followed.ctx->TryCancel();
  EXPECT_EQ(followed.reader->Finish().error_code(), grpc::StatusCode::CANCELLED);

  // The run is preempted and its pods go: the next run's pods are read, the gone ones skipped.
  Play(a, core::PodPhase::kRunning);
  Play(a, core::PodPhase::kRunning, /*preempt=*/true);
  ASSERT_TRUE(jobs_->AckPreemption(a).ok());
  ReapDeleted();
  const std::string next = Get(exp.id()).trials(0).allocation_id();
  ASSERT_NE(next, a);
  EXPECT_THAT(Logs(alice_, trial.id(), 0), ElementsAre(next + "-0 r2 #0: " + next + "-0 line 1",
                                                       next + "-0 r2 #0: " + next + "-0 line 2"));
}

TEST_F(TrialLogsTest, OnlyTheOwnerOrAnAdminAndBadRequestsNamed) {
  const v1::Experiment exp = MustCreateAs(alice_, kTwoPods);
  const int64_t trial = Get(exp.id()).trials(0).id();
  grpc::Status s;
  EXPECT_TRUE(Logs(bob_, trial, std::nullopt, 0, false, &s).empty());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(), absl::StrCat("experiment ", exp.id(),
                                            " belongs to alice; only alice or an admin may read "
                                            "its trials' logs"));
  Logs(alice_, trial, -1, 0, false, &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "rank: must be 0 or more, got -1");
  Logs(alice_, trial, std::nullopt, 100001, false, &s);
  EXPECT_EQ(s.error_message(), "tail_lines: 0 to 100000, got 100001");
  Logs(alice_, 999, std::nullopt, 0, false, &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  Logs("not-a-token", trial, std::nullopt, 0, false, &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

// A user holds at most 4 reads at once; a cancelled read gives its slot back at once, also one
// whose caller never read a line (the call's watchdog stops its pods' reads).
TEST_F(TrialLogsTest, ReadsAtOnceAreBoundedPerUserAndCancelledOnesGoBack) {
  const int64_t trial = Get(MustCreateAs(alice_, kTwoPods).id()).trials(0).id();
  std::vector<Followed> open;
  for (int i = 0; i < 4; ++i) {
    open.push_back(Follow(alice_, trial));
    v1::GetTrialLogsResponse first;
    ASSERT_TRUE(open.back().reader->Read(&first)) << i;
  }
  grpc::Status s;
  Logs(alice_, trial, std::nullopt, 0, false, &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(s.error_message(), "at most 64 log reads at once, 4 of one user; try again later");
  EXPECT_EQ(Logs(token_, trial).size(), 4u) << "another user (an admin) still reads";
  open.front().ctx->TryCancel();
  EXPECT_EQ(open.front().reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  bool freed = false;
  for (int i = 0; i < 100 && !freed; ++i) {
    Logs(alice_, trial, std::nullopt, 0, false, &s);
    freed = s.ok();
    if (!freed) absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_TRUE(freed) << s.error_message();
  for (size_t i = 1; i < open.size(); ++i) open[i].ctx->TryCancel();
  for (size_t i = 1; i < open.size(); ++i) open[i].reader->Finish();
}

}  // namespace
}  // namespace phalanx::master

// The CLI while the master changes (a restart, a standby taking over): a call that may be repeated
// is tried again while the master is UNAVAILABLE and succeeds once a master serves at the address;
// a submission is not repeated, since its answer may have been lost after it was stored.
#include <thread>

#include "absl/time/clock.h"
#include "tests/master/testing/cli_fixture.h"

namespace phalanx::master {
namespace {

using ::testing::HasSubstr;

TEST_F(CliTest, ACallWaitsForTheNextMasterButASubmissionDoesNot) {
  ASSERT_EQ(Run({"login", "admin", "--password=pw"}), 0) << err_;
  const int port = server_->port();
  server_->Shutdown();
  server_.reset();

  const absl::Time asked = absl::Now();
  EXPECT_EQ(Run({"experiment", "create", File("e.yaml", "name: m\n")}), 1);
  EXPECT_THAT(err_, HasSubstr("UNAVAILABLE"));
  EXPECT_LT(absl::Now() - asked, absl::Seconds(10)) << "a submission was retried";

  // Another master comes up at the same address 2 s after the call began.
  std::thread next([&] {
    absl::SleepFor(absl::Seconds(2));
    absl::StatusOr<std::unique_ptr<MasterServer>> server =
        MasterServer::Start(absl::StrCat("127.0.0.1:", port), std::nullopt, *store_, *jobs_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  });
  const int rc = Run({"job", "list"});
  next.join();
  EXPECT_EQ(rc, 0) << err_;
  EXPECT_GT(absl::Now() - asked, absl::Seconds(2));
}

}  // namespace
}  // namespace phalanx::master

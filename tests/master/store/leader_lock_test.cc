// The active master's lock (master/store/leader_lock.h) on a real Postgres (fixture `postgres`):
// one holder per database, a standby takes it once the holder's session ends, and a holder whose
// session is ended under it learns it at once. Locks of other databases are independent.
#include "master/store/leader_lock.h"

#include <atomic>
#include <csignal>
#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "pqxx/pqxx"
#include "tests/master/testing/pg_fixture.h"

namespace phalanx::master {
namespace {

void Quiet(const std::string&) {}

TEST(LeaderLockTest, OneHolderAndTheStandbyTakesOverWhenItGoes) {
  const std::string url = testing::FreshDatabaseUrl();
  ASSERT_FALSE(url.empty());
  volatile std::sig_atomic_t never = 0;
  auto first = std::make_unique<LeaderLock>(url);
  ASSERT_TRUE(first->Acquire(never, absl::Milliseconds(50), absl::Minutes(1), Quiet).ok());

  volatile std::sig_atomic_t stop = 0;
  std::string said;
  LeaderLock second(url);
  std::thread give_up([&] {
    absl::SleepFor(absl::Milliseconds(500));
    stop = 1;
  });
  absl::Status s = second.Acquire(stop, absl::Milliseconds(50), absl::Minutes(1),
                                  [&](const std::string& why) { said = why; });
  give_up.join();
  EXPECT_TRUE(absl::IsCancelled(s)) << s;
  EXPECT_EQ(said, "another phalanx-master is active");

  // Another database's master is not held back.
  LeaderLock elsewhere(testing::FreshDatabaseUrl());
  EXPECT_TRUE(elsewhere.Acquire(never, absl::Milliseconds(50), absl::Minutes(1), Quiet).ok());

  std::atomic<bool> taken = false;
  std::thread standby([&] {
    EXPECT_TRUE(second.Acquire(never, absl::Milliseconds(50), absl::Minutes(1), Quiet).ok());
    taken = true;
  });
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_FALSE(taken) << "taken while held";
  first.reset();  // Its session ends, as when the process dies.
  standby.join();
  EXPECT_TRUE(taken);
}

// The master that takes over ends the sessions of the one before: its open transaction (and the
// row locks it holds) goes, and it can write no more.
TEST(LeaderLockTest, TheNewMasterFencesTheOldOnesSessions) {
  const std::string url = testing::FreshDatabaseUrl();
  ASSERT_FALSE(url.empty());
  pqxx::connection old_master(url + "?application_name=phalanx-master");
  pqxx::work stuck(old_master);
  stuck.exec("CREATE TABLE fenced (x INT)");  // Uncommitted, as a transaction cut off mid-way.
  volatile std::sig_atomic_t never = 0;
  LeaderLock lock(url);
  ASSERT_TRUE(lock.Acquire(never, absl::Milliseconds(50), absl::Minutes(1), Quiet).ok());
  absl::StatusOr<int> ended = lock.FenceOthers();
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_EQ(*ended, 1);
  EXPECT_ANY_THROW(stuck.exec("SELECT 1"));
  pqxx::connection other(url);  // Not a master's: left alone.
  EXPECT_EQ(*lock.FenceOthers(), 0);
  EXPECT_TRUE(other.is_open());
}

TEST(LeaderLockTest, AnUnreachableDatabaseEndsTheWait) {
  volatile std::sig_atomic_t never = 0;
  LeaderLock lock("host=127.0.0.1 port=1 dbname=none user=none connect_timeout=2");
  std::string said;
  absl::Status s = lock.Acquire(never, absl::Milliseconds(50), absl::Milliseconds(300),
                                [&](const std::string& why) { said = why; });
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_NE(said.find("database"), std::string::npos) << said;
}

TEST(LeaderLockTest, AHolderWhoseSessionIsEndedIsToldAtOnce) {
  const std::string url = testing::FreshDatabaseUrl();
  ASSERT_FALSE(url.empty());
  volatile std::sig_atomic_t never = 0;
  LeaderLock lock(url);
  ASSERT_TRUE(lock.Acquire(never, absl::Milliseconds(50), absl::Minutes(1), Quiet).ok());
  absl::Notification lost;
  std::string why;
  lock.Watch(absl::Milliseconds(100), [&](const std::string& w) {
    why = w;
    lost.Notify();
  });
  // An operator (or a failover of the database) ends the holder's session.
  pqxx::connection admin(url);
  pqxx::nontransaction(admin).exec(
      "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted "
      "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())");
  ASSERT_TRUE(lost.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_NE(why.find("session broke"), std::string::npos) << why;
  // The lock is free for the next master.
  LeaderLock next(url);
  EXPECT_TRUE(next.Acquire(never, absl::Milliseconds(50), absl::Minutes(1), Quiet).ok());
}

}  // namespace
}  // namespace phalanx::master

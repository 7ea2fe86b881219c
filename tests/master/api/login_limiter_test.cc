// LoginLimiter: per-user and per-peer windows counted before the password check, and memory
// bounded whatever names an attacker uses without freeing a blocked key.
#include "master/api/login_limiter.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace phalanx::master {
namespace {

TEST(LoginLimiterTest, BlocksAUserAndAPeerUntilTheWindowEnds) {
  absl::Time now = absl::FromUnixSeconds(1000);
  LoginLimiter limiter({.per_user = 2, .per_peer = 3, .window = absl::Seconds(60)},
                       [&] { return now; });
  EXPECT_FALSE(limiter.Attempt("alice", "ipv4:10.0.0.1:5000"));
  EXPECT_FALSE(limiter.Attempt("alice", "ipv4:10.0.0.1:5002"));
  now += absl::Seconds(10);
  EXPECT_EQ(limiter.Attempt("alice", "ipv4:10.0.0.2:1"), absl::Seconds(50));
  EXPECT_FALSE(limiter.Attempt("bob", "ipv4:10.0.0.1:7"));  // The peer's third.
  EXPECT_TRUE(limiter.Attempt("carol", "ipv4:10.0.0.1:8"));
  now += absl::Seconds(50);
  EXPECT_FALSE(limiter.Attempt("alice", "ipv4:10.0.0.1:9"));
}

TEST(LoginLimiterTest, SuccessClearsTheUserAndTakesBackThePeersAttempt) {
  LoginLimiter limiter({.per_user = 1, .per_peer = 2});
  EXPECT_FALSE(limiter.Attempt("alice", "p"));
  EXPECT_TRUE(limiter.Attempt("alice", "q"));
  limiter.Succeeded("alice", "p");
  EXPECT_FALSE(limiter.Attempt("alice", "q"));
  limiter.Succeeded("alice", "q");
  for (int i = 0; i < 3; ++i) {  // Successes never use up the peer's limit.
    EXPECT_FALSE(limiter.Attempt("bob", "p")) << i;
    limiter.Succeeded("bob", "p");
  }
  EXPECT_FALSE(limiter.Attempt("carol", "p"));
  EXPECT_FALSE(limiter.Attempt("dave", "p"));
  EXPECT_TRUE(limiter.Attempt("erin", "p"));
}

// Attempts made at once are counted as they start: of 64 threads trying one user, exactly the
// limit get to check a password.
TEST(LoginLimiterTest, ConcurrentAttemptsStayWithinTheLimit) {
  LoginLimiter limiter({.per_user = 5, .per_peer = 1000});
  std::atomic<int> allowed = 0;
  std::vector<std::thread> threads;
  for (int i = 0; i < 64; ++i) {
    threads.emplace_back([&, i] {
      if (!limiter.Attempt("admin", "ipv4:10.0.0." + std::to_string(i) + ":1")) ++allowed;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(allowed, 5);
}

TEST(LoginLimiterTest, MemoryIsBounded) {
  absl::Time now = absl::FromUnixSeconds(1000);
  LoginLimiter limiter({.max_keys = 100}, [&] { return now; });
  for (int i = 0; i < 10000; ++i) {
    limiter.Attempt("user" + std::to_string(i), "ipv6:[::" + std::to_string(i) + "]:1");
    now += absl::Milliseconds(1);
  }
  EXPECT_LE(limiter.size(), 100u);
}

// Filling the table with new names does not free a blocked user: windows that do not block go
// first, and when all block, new keys are refused.
TEST(LoginLimiterTest, AFullTableKeepsBlockedKeys) {
  absl::Time now = absl::FromUnixSeconds(1000);
  LoginLimiter limiter({.per_user = 2, .per_peer = 2, .window = absl::Seconds(60), .max_keys = 4},
                       [&] { return now; });
  EXPECT_FALSE(limiter.Attempt("admin", "p1"));
  EXPECT_FALSE(limiter.Attempt("admin", "p2"));  // admin blocks; p1 and p2 do not.
  ASSERT_TRUE(limiter.Attempt("admin", "p3"));
  for (int i = 0; i < 50; ++i) {
    now += absl::Milliseconds(10);
    limiter.Attempt("spray" + std::to_string(i), "s" + std::to_string(i));
  }
  EXPECT_LE(limiter.size(), 4u);
  EXPECT_TRUE(limiter.Attempt("admin", "p4"));
  // Every window blocks: a new key waits for the first window to end.
  LoginLimiter full({.per_user = 1, .per_peer = 1, .window = absl::Seconds(60), .max_keys = 2},
                    [&] { return now; });
  EXPECT_FALSE(full.Attempt("admin", "p1"));
  now += absl::Seconds(20);
  EXPECT_EQ(full.Attempt("bob", "p2"), absl::Seconds(40));
  EXPECT_EQ(full.size(), 2u);
}

TEST(LoginLimiterTest, PeerAddressDropsThePort) {
  EXPECT_EQ(LoginLimiter::PeerAddress("ipv4:10.0.0.1:5000"), "ipv4:10.0.0.1");
  EXPECT_EQ(LoginLimiter::PeerAddress("ipv6:[::1]:5000"), "ipv6:[::1]");
  EXPECT_EQ(LoginLimiter::PeerAddress("unix:/tmp/sock"), "unix:/tmp/sock");
}

}  // namespace
}  // namespace phalanx::master

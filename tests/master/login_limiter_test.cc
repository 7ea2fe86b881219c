// LoginLimiter: per-user and per-peer windows, and memory bounded whatever names an attacker uses.
#include "master/api/login_limiter.h"

#include "gtest/gtest.h"

namespace phalanx::master {
namespace {

TEST(LoginLimiterTest, BlocksAUserAndAPeerUntilTheWindowEnds) {
  absl::Time now = absl::FromUnixSeconds(1000);
  LoginLimiter limiter({.per_user = 2, .per_peer = 3, .window = absl::Seconds(60)},
                       [&] { return now; });
  limiter.Failed("alice", "ipv4:10.0.0.1:5000");
  EXPECT_FALSE(limiter.Blocked("alice", "ipv4:10.0.0.1:5001"));
  limiter.Failed("alice", "ipv4:10.0.0.1:5002");
  now += absl::Seconds(10);
  EXPECT_EQ(limiter.Blocked("alice", "ipv4:10.0.0.2:1"), absl::Seconds(50));
  EXPECT_FALSE(limiter.Blocked("bob", "ipv4:10.0.0.2:1"));
  limiter.Failed("bob", "ipv4:10.0.0.1:7");  // The peer's third.
  EXPECT_TRUE(limiter.Blocked("carol", "ipv4:10.0.0.1:8"));
  now += absl::Seconds(50);
  EXPECT_FALSE(limiter.Blocked("alice", "ipv4:10.0.0.1:9"));
}

TEST(LoginLimiterTest, SuccessClearsTheUser) {
  LoginLimiter limiter({.per_user = 1});
  limiter.Failed("alice", "p");
  EXPECT_TRUE(limiter.Blocked("alice", "q"));
  limiter.Succeeded("alice");
  EXPECT_FALSE(limiter.Blocked("alice", "q"));
}

TEST(LoginLimiterTest, MemoryIsBounded) {
  absl::Time now = absl::FromUnixSeconds(1000);
  LoginLimiter limiter({.max_keys = 100}, [&] { return now; });
  for (int i = 0; i < 10000; ++i) {
    limiter.Failed("user" + std::to_string(i), "ipv6:[::" + std::to_string(i) + "]:1");
    now += absl::Milliseconds(1);
  }
  EXPECT_LE(limiter.size(), 100u);
}

TEST(LoginLimiterTest, PeerAddressDropsThePort) {
  EXPECT_EQ(LoginLimiter::PeerAddress("ipv4:10.0.0.1:5000"), "ipv4:10.0.0.1");
  EXPECT_EQ(LoginLimiter::PeerAddress("ipv6:[::1]:5000"), "ipv6:[::1]");
  EXPECT_EQ(LoginLimiter::PeerAddress("unix:/tmp/sock"), "unix:/tmp/sock");
}

}  // namespace
}  // namespace phalanx::master

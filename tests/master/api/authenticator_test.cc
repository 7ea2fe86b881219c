// Authenticator (master/services.h) on a real store: how long it trusts a token, and that tokens
// whose trust ran out do not pile up.
#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "master/api/services.h"
#include "master/store/auth.h"
#include "master/store/store.h"
#include "tests/master/testing/pg_fixture.h"

namespace phalanx::master {
namespace {

class AuthenticatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string url = testing::FreshDatabaseUrl();
    ASSERT_FALSE(url.empty());
    store_ = *Store::Open(url);
    ASSERT_TRUE(EnsureBuiltinUsers(*store_, "pw").ok());
    admin_id_ = store_->FindUser("admin")->user.id;
  }

  // Authenticates `n` fresh tokens of the admin.
  void AuthenticateNewTokens(const Authenticator& auth, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      const std::string token = NewToken();
      ASSERT_TRUE(store_->AddToken(TokenHash(token), admin_id_, absl::Now() + absl::Hours(1)).ok());
      ASSERT_TRUE(auth.AuthenticateToken(token).ok());
    }
  }

  std::unique_ptr<Store> store_;
  int64_t admin_id_ = 0;
};

// Once the trusted tokens grow past kSweepAbove, those whose kTrustFor ran out are dropped and
// those still trusted kept.
TEST_F(AuthenticatorTest, TokensWhoseTrustRanOutAreSwept) {
  absl::Time now = absl::Now();
  const Authenticator auth(*store_, [&now] { return now; });
  constexpr size_t kHalf = Authenticator::kSweepAbove / 2;
  AuthenticateNewTokens(auth, kHalf);
  now += Authenticator::kTrustFor / 2;
  AuthenticateNewTokens(auth, kHalf);
  EXPECT_EQ(auth.trusted_count(), Authenticator::kSweepAbove);  // None swept below the threshold.

  now += Authenticator::kTrustFor / 2;  // The first half's trust has run out.
  AuthenticateNewTokens(auth, 1);
  EXPECT_EQ(auth.trusted_count(), kHalf + 1);
}

}  // namespace
}  // namespace phalanx::master

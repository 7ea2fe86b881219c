// Password hashes and bearer tokens (master/auth.h) against known SHA-256 and PBKDF2 answers.
#include "master/store/auth.h"

#include <set>
#include <string>

#include "gtest/gtest.h"

namespace phalanx::master {
namespace {

TEST(AuthTest, TokenHashIsHexSha256) {
  EXPECT_EQ(TokenHash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(AuthTest, TokensAreFreshHex) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    const std::string token = NewToken();
    EXPECT_EQ(token.size(), 64u);
    EXPECT_EQ(token.find_first_not_of("0123456789abcdef"), std::string::npos) << token;
    seen.insert(token);
  }
  EXPECT_EQ(seen.size(), 100u);
}

TEST(AuthTest, VerifiesAKnownPbkdf2Hash) {
  // PBKDF2-HMAC-SHA256 of "password" with salt "salt", one iteration, 32 bytes.
  const std::string hash =
      "pbkdf2-sha256$1$73616c74$120fb6cffcf8b32c43e7225256c4f837a86548c92ccc35480805987cb70be17b";
  EXPECT_TRUE(VerifyPassword("password", hash));
  EXPECT_FALSE(VerifyPassword("passwore", hash));
  EXPECT_FALSE(VerifyPassword("password", "pbkdf2-sha256$0$73616c74$120f"));
  EXPECT_FALSE(VerifyPassword("password", "md5$1$73616c74$120f"));
}

TEST(AuthTest, HashPasswordSaltsEachHash) {
  const std::string a = HashPassword("pw"), b = HashPassword("pw");
  EXPECT_NE(a, b);
  EXPECT_TRUE(VerifyPassword("pw", a));
  EXPECT_TRUE(VerifyPassword("pw", b));
  EXPECT_FALSE(VerifyPassword("pW", a));
}

}  // namespace
}  // namespace phalanx::master

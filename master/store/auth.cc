// PBKDF2 password hashes and random bearer tokens on OpenSSL (see auth.h).
#include "master/store/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <sys/random.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace phalanx::master {
namespace {

constexpr int kIterations = 100000;
constexpr int kSaltBytes = 16;
constexpr int kHashBytes = 32;

// From the kernel's CSPRNG. OpenSSL 3's RAND_bytes and one-shot SHA256() look their algorithm up
// under a lock on every call: with 8 submissions at once each took about 2% of the handler threads'
// time (perf), for work of well under a microsecond.
std::string RandomBytes(int n) {
  std::string out(n, '\0');
  if (getrandom(out.data(), n, 0) != n) std::abort();  // At most 256 bytes: never short.
  return out;
}

// SHA-256, looked up once (see RandomBytes); every authenticated call hashes its token.
const EVP_MD* Sha256() {
  static const EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

std::string Pbkdf2(absl::string_view password, absl::string_view salt, int iterations) {
  std::string out(kHashBytes, '\0');
  PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()),
                    reinterpret_cast<const unsigned char*>(salt.data()),
                    static_cast<int>(salt.size()), iterations, Sha256(), kHashBytes,
                    reinterpret_cast<unsigned char*>(out.data()));
  return out;
}

}  // namespace

std::string HashPassword(absl::string_view password) {
  const std::string salt = RandomBytes(kSaltBytes);
  return absl::StrCat("pbkdf2-sha256$", kIterations, "$", absl::BytesToHexString(salt), "$",
                      absl::BytesToHexString(Pbkdf2(password, salt, kIterations)));
}

bool VerifyPassword(absl::string_view password, absl::string_view hash) {
  std::vector<absl::string_view> parts = absl::StrSplit(hash, '$');
  int iterations = 0;
  if (parts.size() != 4 || parts[0] != "pbkdf2-sha256" ||
      !absl::SimpleAtoi(parts[1], &iterations) || iterations <= 0) {
    return false;
  }
  const std::string want = absl::HexStringToBytes(parts[3]);
  const std::string got = Pbkdf2(password, absl::HexStringToBytes(parts[2]), iterations);
  return want.size() == got.size() && CRYPTO_memcmp(want.data(), got.data(), got.size()) == 0;
}

std::string NewToken() { return absl::BytesToHexString(RandomBytes(32)); }

std::string TokenHash(absl::string_view token) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  unsigned int size = 0;
  if (EVP_Digest(token.data(), token.size(), digest, &size, Sha256(), nullptr) != 1) std::abort();
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), size));
}

}  // namespace phalanx::master

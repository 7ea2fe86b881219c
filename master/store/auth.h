// Password hashing (PBKDF2-HMAC-SHA256, 100k iterations, 16-byte salt) and bearer tokens (32 random
// bytes, hex; only their SHA-256 is stored). OpenSSL underneath.
#ifndef PHALANX_MASTER_STORE_AUTH_H_
#define PHALANX_MASTER_STORE_AUTH_H_

#include <string>

#include "absl/strings/string_view.h"

namespace phalanx::master {

// "pbkdf2-sha256$<iterations>$<salt hex>$<hash hex>".
std::string HashPassword(absl::string_view password);
// False for a wrong password or a malformed hash; constant time in the hash comparison.
bool VerifyPassword(absl::string_view password, absl::string_view hash);

// A fresh random token (64 hex characters).
std::string NewToken();
// SHA-256 of the token, hex.
std::string TokenHash(absl::string_view token);

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_STORE_AUTH_H_

// HMAC-SHA256 signatures of the state phalanx-extender writes on pods (see placement_key.h).
#include "kube/placement_key.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace phalanx::kube {

absl::StatusOr<PlacementKey> PlacementKey::FromFile(const std::string& path,
                                                    absl::string_view field) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(field, ": cannot read ", path));
  // Read at most a little more than any sensible key: the file may be anything.
  std::string secret(4096, '\0');
  in.read(secret.data(), static_cast<std::streamsize>(secret.size()));
  secret.resize(static_cast<size_t>(in.gcount()));
  secret.erase(absl::StripTrailingAsciiWhitespace(secret).size());
  return FromSecret(std::move(secret), absl::StrCat(field, " (", path, ")"));
}

absl::StatusOr<PlacementKey> PlacementKey::FromSecret(std::string secret, absl::string_view field) {
  if (secret.size() < kMinBytes) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": the key has ", secret.size(),
                                                   " bytes; at least ", kMinBytes,
                                                   " are required (e.g. openssl rand -hex 32)"));
  }
  return PlacementKey(std::move(secret));
}

PlacementKey PlacementKey::Random() {
  std::string secret(kMinBytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(secret.data()),
                 static_cast<int>(secret.size())) != 1) {
    std::abort();  // No randomness: nothing could be signed safely.
  }
  return PlacementKey(std::move(secret));
}

std::string PlacementKey::Mac(absl::string_view message) const {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  HMAC(EVP_sha256(), secret_.data(), static_cast<int>(secret_.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &size);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(mac), static_cast<size_t>(size)));
}

bool PlacementKey::Verify(absl::string_view message, absl::string_view signature) const {
  const std::string want = Mac(message);
  return signature.size() == want.size() &&
         CRYPTO_memcmp(signature.data(), want.data(), want.size()) == 0;
}

std::string PlacementKey::SignPlacement(absl::string_view uid, absl::string_view node) const {
  return Mac(absl::StrCat(uid, "\n", node));
}

bool PlacementKey::VerifyPlacement(absl::string_view uid, absl::string_view node,
                                   absl::string_view signature) const {
  return Verify(absl::StrCat(uid, "\n", node), signature);
}

std::string PlacementKey::SignMark(absl::string_view uid, absl::string_view preempted_by) const {
  return Mac(absl::StrCat("preempt\n", uid, "\n", preempted_by));
}

bool PlacementKey::VerifyMark(absl::string_view uid, absl::string_view preempted_by,
                              absl::string_view signature) const {
  return Verify(absl::StrCat("preempt\n", uid, "\n", preempted_by), signature);
}

}  // namespace phalanx::kube

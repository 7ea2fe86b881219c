// The secret key phalanx-extender signs the state it writes on pods with, so that it honours only
// what it wrote itself. A placement is signed as hex HMAC-SHA256(key, uid + "\n" + node) in
// phalanx.io/placement-signature; a preemption mark as HMAC-SHA256(key, "preempt\n" + uid + "\n" +
// preempted-by) in phalanx.io/preempt-signature. Both bind the pod's uid, so a signature copied
// to another pod or node does not verify. The key is read from a file (a mounted Secret, so it
// survives restarts) or, without one, drawn at random at start.
#ifndef PHALANX_KUBE_PLACEMENT_KEY_H_
#define PHALANX_KUBE_PLACEMENT_KEY_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace phalanx::kube {

class PlacementKey {
 public:
  static constexpr size_t kMinBytes = 32;

  // The key in file `path`, without trailing whitespace (a newline from `openssl rand -hex 32`).
  // InvalidArgument naming `field` when it cannot be read or holds fewer than kMinBytes bytes.
  static absl::StatusOr<PlacementKey> FromFile(const std::string& path, absl::string_view field);
  // A fresh random key of kMinBytes bytes.
  static PlacementKey Random();
  // `secret` as the key; InvalidArgument when it is shorter than kMinBytes.
  static absl::StatusOr<PlacementKey> FromSecret(std::string secret, absl::string_view field);

  std::string SignPlacement(absl::string_view uid, absl::string_view node) const;
  bool VerifyPlacement(absl::string_view uid, absl::string_view node,
                       absl::string_view signature) const;
  std::string SignMark(absl::string_view uid, absl::string_view preempted_by) const;
  bool VerifyMark(absl::string_view uid, absl::string_view preempted_by,
                  absl::string_view signature) const;

 private:
  explicit PlacementKey(std::string secret) : secret_(std::move(secret)) {}
  std::string Mac(absl::string_view message) const;  // Lowercase hex.
  bool Verify(absl::string_view message, absl::string_view signature) const;

  std::string secret_;
};

}  // namespace phalanx::kube

#endif  // PHALANX_KUBE_PLACEMENT_KEY_H_

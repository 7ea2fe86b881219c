// API server errors as absl::Status: the HTTP code, the apiserver's reason and message.
#ifndef PHALANX_KUBE_STATUS_H_
#define PHALANX_KUBE_STATUS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "simdjson.h"

namespace phalanx::kube {

// Codes: 400, 422 -> InvalidArgument; 401 -> Unauthenticated; 403 -> PermissionDenied;
// 404 -> NotFound; 409 -> AlreadyExists (reason AlreadyExists) or Aborted (a conflict);
// 410 Gone (resourceVersion too old, expired continue token) -> OutOfRange; 429 ->
// ResourceExhausted; 503 -> Unavailable; 504 -> DeadlineExceeded; other 5xx -> Internal; anything
// else -> Unknown. The HTTP code rides along as a payload (see HttpCode).
absl::Status HttpError(int http_code, absl::string_view reason, absl::string_view message);

// The error for a non-2xx response: `what` (e.g. "GET /api/v1/nodes/x"), the code, and the message
// of the apiserver's Status object in `body` (or the body itself when it is not a Status).
absl::Status ResponseError(absl::string_view what, int http_code, absl::string_view body);

// The error a watch ERROR event (a Status object) reports.
absl::Status StatusObjectError(absl::string_view what, simdjson::dom::element status);

// The HTTP code behind an error from this module, or 0 (success, transport errors, other sources).
int HttpCode(const absl::Status& status);

// 410 Gone: the requested resourceVersion is no longer available; list again.
bool IsGone(const absl::Status& status);

}  // namespace phalanx::kube

#endif  // PHALANX_KUBE_STATUS_H_

// Maps apiserver responses and Status objects to absl::Status.
#include "kube/status.h"

#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "kube/json.h"

namespace phalanx::kube {
namespace {

constexpr absl::string_view kHttpCodePayload = "phalanx.io/http-code";

absl::StatusCode CodeFor(int http_code, absl::string_view reason) {
  switch (http_code) {
    case 400:
    case 422:
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 409:
      return reason == "AlreadyExists" ? absl::StatusCode::kAlreadyExists
                                       : absl::StatusCode::kAborted;
    case 410:
      return absl::StatusCode::kOutOfRange;
    case 429:
      return absl::StatusCode::kResourceExhausted;
    case 503:
      return absl::StatusCode::kUnavailable;
    case 504:
      return absl::StatusCode::kDeadlineExceeded;
    default:
      return http_code >= 500 && http_code < 600 ? absl::StatusCode::kInternal
                                                 : absl::StatusCode::kUnknown;
  }
}

std::string_view StringMember(simdjson::dom::element obj, std::string_view key) {
  std::string_view s;
  return obj[key].get(s) == simdjson::SUCCESS ? s : std::string_view();
}

absl::Status FromStatusObject(absl::string_view what, simdjson::dom::element status,
                              int64_t fallback_code) {
  int64_t code = 0;
  if (status["code"].get(code) != simdjson::SUCCESS) code = fallback_code;
  std::string_view reason = StringMember(status, "reason");
  std::string_view message = StringMember(status, "message");
  return HttpError(static_cast<int>(code), Sv(reason),
                   absl::StrCat(what, ": ", code, reason.empty() ? "" : " ", Sv(reason), ": ",
                                message.empty() ? "(no message)" : Sv(message)));
}

}  // namespace

absl::Status HttpError(int http_code, absl::string_view reason, absl::string_view message) {
  absl::Status status(CodeFor(http_code, reason), message);
  status.SetPayload(kHttpCodePayload, absl::Cord(absl::StrCat(http_code)));
  return status;
}

absl::Status StatusObjectError(absl::string_view what, simdjson::dom::element status) {
  return FromStatusObject(what, status, 500);
}

absl::Status ResponseError(absl::string_view what, int http_code, absl::string_view body) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(body.data(), body.size()).get(doc) == simdjson::SUCCESS &&
      StringMember(doc, "kind") == "Status") {
    return FromStatusObject(what, doc, http_code);
  }
  constexpr size_t kMaxBody = 512;
  return HttpError(http_code, "",
                   absl::StrCat(what, ": HTTP ", http_code, ": ", body.substr(0, kMaxBody)));
}

int HttpCode(const absl::Status& status) {
  auto payload = status.GetPayload(kHttpCodePayload);
  int code = 0;
  if (!payload || !absl::SimpleAtoi(std::string(*payload), &code)) return 0;
  return code;
}

bool IsGone(const absl::Status& status) { return HttpCode(status) == 410; }

}  // namespace phalanx::kube

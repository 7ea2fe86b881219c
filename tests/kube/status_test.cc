// apiserver error responses mapped to absl::Status codes with the HTTP code kept; JSON strings.
#include "kube/status.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/json.h"

namespace phalanx::kube {
namespace {

using ::testing::HasSubstr;

std::string StatusBody(int code, const std::string& reason, const std::string& message) {
  return absl::StrCat(R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":)",
                      EncodeJsonString(message), R"(,"reason":")", reason, R"(","code":)", code,
                      "}");
}

TEST(KubeStatusTest, MapsApiserverStatusObjects) {
  struct Case {
    int code;
    std::string reason;
    absl::StatusCode want;
  };
  for (const Case& c : {Case{404, "NotFound", absl::StatusCode::kNotFound},
                        Case{409, "AlreadyExists", absl::StatusCode::kAlreadyExists},
                        Case{409, "Conflict", absl::StatusCode::kAborted},
                        Case{410, "Expired", absl::StatusCode::kOutOfRange},
                        Case{422, "Invalid", absl::StatusCode::kInvalidArgument},
                        Case{400, "BadRequest", absl::StatusCode::kInvalidArgument},
                        Case{401, "Unauthorized", absl::StatusCode::kUnauthenticated},
                        Case{403, "Forbidden", absl::StatusCode::kPermissionDenied},
                        Case{429, "TooManyRequests", absl::StatusCode::kResourceExhausted},
                        Case{500, "InternalError", absl::StatusCode::kInternal},
                        Case{503, "ServiceUnavailable", absl::StatusCode::kUnavailable},
                        Case{504, "Timeout", absl::StatusCode::kDeadlineExceeded}}) {
    absl::Status s =
        ResponseError("GET /api/v1/nodes/n", c.code, StatusBody(c.code, c.reason, "boom \"x\""));
    EXPECT_EQ(s.code(), c.want) << c.code << " " << c.reason;
    EXPECT_EQ(HttpCode(s), c.code);
    EXPECT_EQ(IsGone(s), c.code == 410);
    EXPECT_EQ(s.message(),
              absl::StrCat("GET /api/v1/nodes/n: ", c.code, " ", c.reason, ": boom \"x\""));
  }
}

TEST(KubeStatusTest, NonStatusBodyAndOtherErrors) {
  absl::Status s = ResponseError("POST /x", 502, "<html>bad gateway</html>");
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(HttpCode(s), 502);
  EXPECT_THAT(s.message(), HasSubstr("POST /x: HTTP 502: <html>bad gateway</html>"));
  EXPECT_EQ(HttpCode(absl::OkStatus()), 0);
  EXPECT_EQ(HttpCode(absl::UnavailableError("connection refused")), 0);
  EXPECT_FALSE(IsGone(absl::OutOfRangeError("not from the apiserver")));
}

TEST(KubeStatusTest, WatchErrorEvent) {
  simdjson::dom::parser parser;
  simdjson::dom::element e;
  ASSERT_EQ(parser.parse(StatusBody(410, "Expired", "too old resource version: 1 (42)")).get(e),
            simdjson::SUCCESS);
  absl::Status s = StatusObjectError("watch pods", e);
  EXPECT_TRUE(IsGone(s));
  EXPECT_EQ(s.message(), "watch pods: 410 Expired: too old resource version: 1 (42)");
}

TEST(KubeJsonTest, EncodeJsonString) {
  EXPECT_EQ(EncodeJsonString("plain"), "\"plain\"");
  EXPECT_EQ(EncodeJsonString("a\"b\\c\nd\te\x01"), R"("a\"b\\c\nd\te\u0001")");
  EXPECT_EQ(EncodeJsonString("ünï"), "\"ünï\"");
}

}  // namespace
}  // namespace phalanx::kube

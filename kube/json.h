// JSON helpers for Kubernetes objects: typed field access on simdjson elements whose errors name
// the field path ("spec.containers[0].resources"), and JSON string encoding for request bodies.
#ifndef PHALANX_KUBE_JSON_H_
#define PHALANX_KUBE_JSON_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/node.h"
#include "simdjson.h"

// Evaluates `expr` (an absl::StatusOr); returns its status on error, else moves the value to `lhs`.
#define KUBE_ASSIGN_OR_RETURN(lhs, expr) \
  KUBE_ASSIGN_OR_RETURN_IMPL(KUBE_CONCAT(_status_or_, __LINE__), lhs, expr)
#define KUBE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return std::move(tmp).status();   \
  lhs = std::move(tmp).value()
#define KUBE_CONCAT(a, b) KUBE_CONCAT_IMPL(a, b)
#define KUBE_CONCAT_IMPL(a, b) a##b

#define KUBE_RETURN_IF_ERROR(expr)     \
  do {                                 \
    absl::Status _status = (expr);     \
    if (!_status.ok()) return _status; \
  } while (false)

namespace phalanx::kube {

// simdjson speaks std::string_view; this Abseil release has its own string_view.
inline absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }
inline std::string_view Sv(absl::string_view s) { return std::string_view(s.data(), s.size()); }

// `s` as a quoted JSON string with the escapes RFC 8259 requires.
std::string EncodeJsonString(absl::string_view s);

// A JSON object (or an absent one: every field then reads as absent) and its path for errors.
// Absent and null members read as "", 0, false or empty.
class JsonObject {
 public:
  // `e` must be an object (or null, which reads as absent).
  static absl::StatusOr<JsonObject> Of(simdjson::dom::element e, std::string path);

  const std::string& path() const { return path_; }
  bool present() const { return obj_.has_value(); }
  // "path.key" (or "key" at the root).
  std::string FieldPath(std::string_view key) const;

  // The raw member, or nullopt when absent or null.
  std::optional<simdjson::dom::element> Get(std::string_view key) const;
  absl::StatusOr<JsonObject> Object(std::string_view key) const;
  absl::StatusOr<std::vector<JsonObject>> ObjectArray(std::string_view key) const;
  absl::StatusOr<std::string_view> String(std::string_view key) const;
  absl::StatusOr<std::vector<std::string>> StringArray(std::string_view key) const;
  absl::StatusOr<int64_t> Int(std::string_view key) const;
  absl::StatusOr<bool> Bool(std::string_view key) const;
  // A map of strings (labels, nodeSelector, resource lists), sorted by key.
  absl::StatusOr<core::Labels> StringMap(std::string_view key) const;

 private:
  JsonObject(std::optional<simdjson::dom::object> obj, std::string path)
      : obj_(obj), path_(std::move(path)) {}

  std::optional<simdjson::dom::object> obj_;
  std::string path_;
};

}  // namespace phalanx::kube

#endif  // PHALANX_KUBE_JSON_H_

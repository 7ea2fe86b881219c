// Typed, path-reporting field access on simdjson DOM objects; JSON string encoding.
#include "kube/json.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace phalanx::kube {
namespace {

absl::Status WrongType(const std::string& path, absl::string_view want) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": expected ", want));
}

}  // namespace

std::string EncodeJsonString(absl::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppendFormat(&out, "\\u%04x", c);
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
  return out;
}

absl::StatusOr<JsonObject> JsonObject::Of(simdjson::dom::element e, std::string path) {
  if (e.is_null()) return JsonObject(std::nullopt, std::move(path));
  simdjson::dom::object obj;
  if (e.get(obj) != simdjson::SUCCESS)
    return WrongType(path.empty() ? "document" : path, "an object");
  return JsonObject(obj, std::move(path));
}

std::string JsonObject::FieldPath(std::string_view key) const {
  return path_.empty() ? std::string(key) : absl::StrCat(path_, ".", Sv(key));
}

std::optional<simdjson::dom::element> JsonObject::Get(std::string_view key) const {
  simdjson::dom::element e;
  if (!obj_ || (*obj_)[key].get(e) != simdjson::SUCCESS || e.is_null()) return std::nullopt;
  return e;
}

absl::StatusOr<JsonObject> JsonObject::Object(std::string_view key) const {
  std::optional<simdjson::dom::element> e = Get(key);
  if (!e) return JsonObject(std::nullopt, FieldPath(key));
  return Of(*e, FieldPath(key));
}

absl::StatusOr<std::vector<JsonObject>> JsonObject::ObjectArray(std::string_view key) const {
  std::vector<JsonObject> out;
  std::optional<simdjson::dom::element> e = Get(key);
  if (!e) return out;
  simdjson::dom::array array;
  if (e->get(array) != simdjson::SUCCESS) return WrongType(FieldPath(key), "an array");
  for (simdjson::dom::element item : array) {
    KUBE_ASSIGN_OR_RETURN(JsonObject obj,
                          Of(item, absl::StrCat(FieldPath(key), "[", out.size(), "]")));
    out.push_back(std::move(obj));
  }
  return out;
}

absl::StatusOr<std::string_view> JsonObject::String(std::string_view key) const {
  std::optional<simdjson::dom::element> e = Get(key);
  if (!e) return std::string_view();
  std::string_view s;
  if (e->get(s) != simdjson::SUCCESS) return WrongType(FieldPath(key), "a string");
  return s;
}

absl::StatusOr<std::vector<std::string>> JsonObject::StringArray(std::string_view key) const {
  std::vector<std::string> out;
  std::optional<simdjson::dom::element> e = Get(key);
  if (!e) return out;
  simdjson::dom::array array;
  if (e->get(array) != simdjson::SUCCESS) return WrongType(FieldPath(key), "an array");
  for (simdjson::dom::element item : array) {
    std::string_view s;
    if (item.get(s) != simdjson::SUCCESS) {
      return WrongType(absl::StrCat(FieldPath(key), "[", out.size(), "]"), "a string");
    }
    out.emplace_back(s);
  }
  return out;
}

absl::StatusOr<int64_t> JsonObject::Int(std::string_view key) const {
  std::optional<simdjson::dom::element> e = Get(key);
  if (!e) return 0;
  int64_t v = 0;
  if (e->get(v) != simdjson::SUCCESS) return WrongType(FieldPath(key), "an integer");
  return v;
}

absl::StatusOr<bool> JsonObject::Bool(std::string_view key) const {
  std::optional<simdjson::dom::element> e = Get(key);
  if (!e) return false;
  bool v = false;
  if (e->get(v) != simdjson::SUCCESS) return WrongType(FieldPath(key), "a boolean");
  return v;
}

absl::StatusOr<core::Labels> JsonObject::StringMap(std::string_view key) const {
  core::Labels out;
  KUBE_ASSIGN_OR_RETURN(JsonObject map, Object(key));
  if (!map.obj_) return out;
  for (simdjson::dom::key_value_pair kv : *map.obj_) {
    std::string_view value;
    if (kv.value.get(value) != simdjson::SUCCESS) {
      return WrongType(absl::StrCat(map.path_, "[\"", Sv(kv.key), "\"]"), "a string");
    }
    out.emplace_back(std::string(kv.key), std::string(value));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace phalanx::kube

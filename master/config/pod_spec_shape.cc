// Type checks of the pod spec fields phalanx merges or fills in (see pod_spec_shape.h).
#include "master/config/pod_spec_shape.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "kube/json.h"
#include "master/policy/strategic_merge.h"
#include "master/yaml/yaml.h"

namespace phalanx::master {
namespace {

using nlohmann::json;

std::string KindOf(const json& v) {
  switch (v.type()) {
    case json::value_t::object:
      return "a mapping";
    case json::value_t::array:
      return "a sequence";
    case json::value_t::string:
      return absl::StrCat("\"", v.get<std::string>(), "\"");
    default:
      return v.dump();  // Numbers and booleans, as written (YAML reads them unquoted).
  }
}

absl::Status Expect(bool ok, const std::string& path, absl::string_view what, const json& v) {
  if (ok) return absl::OkStatus();
  return FieldError(path, absl::StrCat("expected ", what, ", got ", KindOf(v)));
}

// `parent[field]`, or null when `parent` has none.
const json& Field(const json& parent, absl::string_view field) {
  static const json kNull;
  auto it = parent.find(field);
  return it == parent.end() ? kNull : *it;
}

absl::Status CheckMapping(const json& v, const std::string& path) {
  return Expect(v.is_null() || v.is_object(), path, "a mapping", v);
}

// A mapping of strings (labels, annotations): a plain 1 or true in YAML is not one. A null deletes
// the default pod spec's entry.
absl::Status CheckStringMap(const json& v, const std::string& path) {
  KUBE_RETURN_IF_ERROR(CheckMapping(v, path));
  if (v.is_null()) return absl::OkStatus();
  for (const auto& [key, value] : v.items()) {
    KUBE_RETURN_IF_ERROR(Expect(value.is_null() || value.is_string(), absl::StrCat(path, ".", key),
                                "a string (quote it)", value));
  }
  return absl::OkStatus();
}

// The patch directives under `v`: `$patch` is replace or delete (strategic_merge.h); Kubernetes'
// other directives are not applied, so they are refused.
absl::Status CheckDirectives(const json& v, const std::string& path) {
  if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      KUBE_RETURN_IF_ERROR(CheckDirectives(v[i], absl::StrCat(path, "[", i, "]")));
    }
    return absl::OkStatus();
  }
  if (!v.is_object()) return absl::OkStatus();
  for (const auto& [key, value] : v.items()) {
    const std::string at = absl::StrCat(path, ".", key);
    if (key == kPatchDirective) {
      if (value != "replace" && value != "delete") {
        return FieldError(at, absl::StrCat("must be replace or delete, got ", KindOf(value)));
      }
    } else if (absl::StartsWith(key, "$")) {
      return FieldError(
          at, "unsupported patch directive (only $patch: replace and $patch: delete apply)");
    } else {
      KUBE_RETURN_IF_ERROR(CheckDirectives(value, at));
    }
  }
  return absl::OkStatus();
}

using ItemCheck = absl::Status (*)(const json& item, const std::string& path);

// A list of mappings, each with a string `key` (the list's merge key) but the item
// {"$patch": "replace"}; `each` checks an item further.
absl::Status CheckKeyedList(const json& parent, const std::string& parent_path, const char* field,
                            const char* key, ItemCheck each = nullptr) {
  const json& list = Field(parent, field);
  if (list.is_null()) return absl::OkStatus();
  const std::string path = absl::StrCat(parent_path, ".", field);
  KUBE_RETURN_IF_ERROR(Expect(list.is_array(), path, "a sequence", list));
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = absl::StrCat(path, "[", i, "]");
    KUBE_RETURN_IF_ERROR(Expect(list[i].is_object(), at, "a mapping", list[i]));
    if (Field(list[i], kPatchDirective) == "replace") continue;
    const json& k = Field(list[i], key);
    if (k.is_null()) return FieldError(absl::StrCat(at, ".", key), "required");
    KUBE_RETURN_IF_ERROR(Expect(k.is_string(), absl::StrCat(at, ".", key), "a string", k));
    if (each != nullptr) KUBE_RETURN_IF_ERROR(each(list[i], at));
  }
  return absl::OkStatus();
}

absl::Status CheckContainer(const json& c, const std::string& path) {
  KUBE_RETURN_IF_ERROR(CheckKeyedList(c, path, "env", "name"));
  KUBE_RETURN_IF_ERROR(CheckKeyedList(c, path, "volumeMounts", "mountPath"));
  const json& resources = Field(c, "resources");
  const std::string at = path + ".resources";
  KUBE_RETURN_IF_ERROR(CheckMapping(resources, at));
  if (resources.is_null()) return absl::OkStatus();
  for (const char* kind : {"requests", "limits"}) {
    KUBE_RETURN_IF_ERROR(CheckMapping(Field(resources, kind), absl::StrCat(at, ".", kind)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckPodSpecShape(const json& pod, absl::string_view path) {
  KUBE_RETURN_IF_ERROR(CheckDirectives(pod, std::string(path)));
  const std::string metadata = absl::StrCat(path, ".metadata");
  const json& meta = Field(pod, "metadata");
  KUBE_RETURN_IF_ERROR(CheckMapping(meta, metadata));
  if (meta.is_object()) {
    for (const char* map : {"labels", "annotations"}) {
      KUBE_RETURN_IF_ERROR(CheckStringMap(Field(meta, map), absl::StrCat(metadata, ".", map)));
    }
  }
  const std::string at = absl::StrCat(path, ".spec");
  const json& spec = Field(pod, "spec");
  KUBE_RETURN_IF_ERROR(CheckMapping(spec, at));
  if (spec.is_null()) return absl::OkStatus();
  const json& priority_class = Field(spec, "priorityClassName");
  KUBE_RETURN_IF_ERROR(Expect(priority_class.is_null() || priority_class.is_string(),
                              at + ".priorityClassName", "a string", priority_class));
  for (const char* list : {"containers", "initContainers", "ephemeralContainers"}) {
    KUBE_RETURN_IF_ERROR(CheckKeyedList(spec, at, list, "name", CheckContainer));
  }
  KUBE_RETURN_IF_ERROR(CheckKeyedList(spec, at, "volumes", "name"));
  return CheckKeyedList(spec, at, "schedulingGates", "name");
}

}  // namespace phalanx::master

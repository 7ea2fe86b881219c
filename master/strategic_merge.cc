// Strategic merge of Pod objects with Kubernetes' patch merge keys (see strategic_merge.h).
#include "master/strategic_merge.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace phalanx::master {
namespace {

using nlohmann::json;

struct MergeKey {
  absl::string_view path;  // Schema path; container lists are all "spec.containers[]".
  absl::string_view key;
};

constexpr MergeKey kMergeKeys[] = {
    {"metadata.ownerReferences", "uid"},
    {"spec.containers", "name"},
    {"spec.initContainers", "name"},
    {"spec.ephemeralContainers", "name"},
    {"spec.volumes", "name"},
    {"spec.imagePullSecrets", "name"},
    {"spec.schedulingGates", "name"},
    {"spec.resourceClaims", "name"},
    {"spec.hostAliases", "ip"},
    {"spec.topologySpreadConstraints", "topologyKey"},
    {"spec.containers[].env", "name"},
    {"spec.containers[].volumeMounts", "mountPath"},
    {"spec.containers[].volumeDevices", "devicePath"},
    {"spec.containers[].ports", "containerPort"},
};

absl::string_view MergeKeyOf(const std::string& path) {
  for (const MergeKey& m : kMergeKeys) {
    if (m.path == path) return m.key;
  }
  return "";
}

// The schema path of the elements of list `path`: every container list shares one schema.
std::string ElementPath(const std::string& path) {
  if (path == "spec.initContainers" || path == "spec.ephemeralContainers") {
    return "spec.containers[]";
  }
  return path + "[]";
}

json Merge(const json& base, const json& patch, const std::string& path);

json MergeList(const json& base, const json& patch, const std::string& path) {
  const absl::string_view key = MergeKeyOf(path);
  if (key.empty()) return patch;
  const std::string k(key);
  const bool retain_keys = path == "spec.volumes";
  json out = base.is_array() ? base : json::array();
  for (const json& item : patch) {
    json* match = nullptr;
    if (item.is_object() && item.contains(k)) {
      for (json& existing : out) {
        if (existing.is_object() && existing.value(k, json()) == item[k]) match = &existing;
      }
    }
    if (match == nullptr) {
      out.push_back(Merge(json(), item, ElementPath(path)));
    } else if (retain_keys && item.size() > 1) {
      *match = Merge(json(), item, ElementPath(path));
    } else {
      *match = Merge(*match, item, ElementPath(path));
    }
  }
  return out;
}

// A patch mapping merges into a base that is not a mapping as into an empty one, so that its nulls
// have nothing to delete and are dropped at any depth (Kubernetes' IgnoreUnmatchedNulls).
json Merge(const json& base, const json& patch, const std::string& path) {
  if (patch.is_array()) return MergeList(base, patch, path);
  if (!patch.is_object()) return patch;
  json out = base.is_object() ? base : json::object();
  for (const auto& [key, value] : patch.items()) {
    if (value.is_null()) {
      out.erase(key);
      continue;
    }
    const std::string child = path.empty() ? key : absl::StrCat(path, ".", key);
    out[key] = Merge(out.contains(key) ? out[key] : json(), value, child);
  }
  return out;
}

}  // namespace

json StrategicMergePod(const json& base, const json& patch) {
  // The base is merged over nothing first: its own nulls leave nothing behind either.
  const json merged = Merge(json(), base, "");
  return patch.is_null() ? merged : Merge(merged, patch, "");
}

}  // namespace phalanx::master

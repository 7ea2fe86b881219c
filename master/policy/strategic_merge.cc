// Strategic merge of Pod objects with Kubernetes' patch merge keys (see strategic_merge.h).
#include "master/policy/strategic_merge.h"

#include <algorithm>
#include <string>

#include "absl/strings/match.h"
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

// The `$patch` directive of a patch item ("replace", "delete"), else "".
std::string DirectiveOf(const json& patch) {
  if (!patch.is_object()) return "";
  const auto it = patch.find(kPatchDirective);
  return it != patch.end() && it->is_string() ? it->get<std::string>() : "";
}

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

// An item {"$patch": "replace"} makes the list the patch's other items; an item with
// "$patch": "delete" removes the base item of its key.
json MergeList(const json& base, const json& patch, const std::string& path) {
  const absl::string_view key = MergeKeyOf(path);
  if (key.empty()) return patch;
  const std::string k(key);
  const std::string element = ElementPath(path);
  const bool retain_keys = path == "spec.volumes";
  const bool replace = std::any_of(patch.begin(), patch.end(),
                                   [](const json& item) { return DirectiveOf(item) == "replace"; });
  json out = base.is_array() && !replace ? base : json::array();
  for (const json& item : patch) {
    const std::string directive = DirectiveOf(item);
    if (directive == "replace") continue;
    auto match = out.end();
    if (item.is_object() && item.contains(k)) {
      match = std::find_if(out.begin(), out.end(), [&](const json& existing) {
        return existing.is_object() && existing.value(k, json()) == item[k];
      });
    }
    if (directive == "delete") {
      if (match != out.end()) out.erase(match);
    } else if (match == out.end()) {
      out.push_back(Merge(json(), item, element));
    } else if (retain_keys && item.size() > 1) {
      *match = Merge(json(), item, element);
    } else {
      *match = Merge(*match, item, element);
    }
  }
  return out;
}

// A patch mapping merges into a base that is not a mapping as into an empty one, so that its nulls
// have nothing to delete and are dropped at any depth (Kubernetes' IgnoreUnmatchedNulls); so does
// one with "$patch": "replace". One with "$patch": "delete" is an empty mapping.
json Merge(const json& base, const json& patch, const std::string& path) {
  if (patch.is_array()) return MergeList(base, patch, path);
  if (!patch.is_object()) return patch;
  const std::string directive = DirectiveOf(patch);
  if (directive == "delete") return json::object();
  json out = base.is_object() && directive.empty() ? base : json::object();
  for (const auto& [key, value] : patch.items()) {
    if (key == kPatchDirective) continue;
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

bool IsMergeDirective(absl::string_view key) {
  return key == kPatchDirective || key == "$retainKeys" ||
         absl::StartsWith(key, "$setElementOrder/") ||
         absl::StartsWith(key, "$deleteFromPrimitiveList/");
}

json StrategicMergePod(const json& base, const json& patch) {
  // The base is merged over nothing first: its own nulls leave nothing behind either.
  const json merged = Merge(json(), base, "");
  return patch.is_null() ? merged : Merge(merged, patch, "");
}

}  // namespace phalanx::master

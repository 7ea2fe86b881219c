// The pod-spec policy's rules on volumes and mounts (see pod_volume_policy.h).
#include "master/policy/pod_volume_policy.h"

#include <optional>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"

namespace phalanx::master {
namespace {

using nlohmann::json;

// Kubernetes' VolumeSource fields.
constexpr absl::string_view kVolumeSources[] = {"awsElasticBlockStore",
                                                "azureDisk",
                                                "azureFile",
                                                "cephfs",
                                                "cinder",
                                                "configMap",
                                                "csi",
                                                "downwardAPI",
                                                "emptyDir",
                                                "ephemeral",
                                                "fc",
                                                "flexVolume",
                                                "flocker",
                                                "gcePersistentDisk",
                                                "gitRepo",
                                                "glusterfs",
                                                "hostPath",
                                                "image",
                                                "iscsi",
                                                "nfs",
                                                "persistentVolumeClaim",
                                                "photonPersistentDisk",
                                                "portworxVolume",
                                                "projected",
                                                "quobyte",
                                                "rbd",
                                                "scaleIO",
                                                "secret",
                                                "storageos",
                                                "vsphereVolume"};

}  // namespace

bool IsVolumeSource(absl::string_view name) { return absl::c_linear_search(kVolumeSources, name); }

absl::Status CheckVolumeTypes(const json& spec, const std::string& path,
                              const PodSpecPolicy& policy, const PolicyRefusal& refusal) {
  const json& volumes = JsonField(spec, "volumes");
  for (size_t i = 0; volumes.is_array() && i < volumes.size(); ++i) {
    if (!volumes[i].is_object()) continue;
    for (const auto& [key, value] : volumes[i].items()) {
      if (key == "name" || key == "hostPath" || value.is_null() ||
          absl::c_linear_search(policy.allowed_volume_types, key)) {
        continue;
      }
      return refusal.NotListed(absl::StrCat(path, ".volumes[", i, "].", key), key,
                               "allowed_volume_types");
    }
  }
  return absl::OkStatus();
}

absl::Status CheckMountPropagation(const json& c, const std::string& path,
                                   const PodSpecPolicy& policy, const PolicyRefusal& refusal) {
  const json& mounts = JsonField(c, "volumeMounts");
  for (size_t j = 0; mounts.is_array() && j < mounts.size() && !policy.allow_privileged; ++j) {
    if (JsonField(mounts[j], "mountPropagation") == "Bidirectional") {
      return refusal.Refuse(absl::StrCat(path, ".volumeMounts[", j, "].mountPropagation"),
                            "allow_privileged");
    }
  }
  return absl::OkStatus();
}

absl::Status CheckHostPathMounts(const json& pod, const json& merged, absl::string_view path,
                                 const PodSpecPolicy& policy, const PolicyRefusal& refusal) {
  if (!policy.host_paths_read_only) return absl::OkStatus();
  const json& user = JsonField(pod, "spec");
  const json& spec = JsonField(merged, "spec");
  const json& volumes = JsonField(spec, "volumes");
  for (absl::string_view list : kContainerLists) {
    const json& containers = JsonField(spec, list);
    for (size_t i = 0; containers.is_array() && i < containers.size(); ++i) {
      const json& mounts = JsonField(containers[i], "volumeMounts");
      for (size_t j = 0; mounts.is_array() && j < mounts.size(); ++j) {
        const json& m = mounts[j];
        const std::optional<size_t> v = FindItem(volumes, "name", JsonField(m, "name"));
        if (JsonField(m, "readOnly") == true || !v ||
            JsonField(volumes[*v], "hostPath").is_null()) {
          continue;
        }
        // The user's own mount, else the user's hostPath volume under the default pod's mount.
        const json& user_list = JsonField(user, list);
        const std::optional<size_t> c =
            FindItem(user_list, "name", JsonField(containers[i], "name"));
        const std::optional<size_t> own = c ? FindItem(JsonField(user_list[*c], "volumeMounts"),
                                                       "mountPath", JsonField(m, "mountPath"))
                                            : std::nullopt;
        if (own) {
          return refusal.RefuseWhileTrue(
              absl::StrCat(path, ".spec.", list, "[", *c, "].volumeMounts[", *own, "].readOnly"),
              "host_paths_read_only");
        }
        const std::optional<size_t> uv =
            FindItem(JsonField(user, "volumes"), "name", JsonField(m, "name"));
        if (uv && !JsonField(JsonField(user, "volumes")[*uv], "hostPath").is_null()) {
          return refusal.RefuseWhileTrue(
              absl::StrCat(path, ".spec.volumes[", *uv, "].hostPath"), "host_paths_read_only",
              absl::StrCat("; the pool's default pod spec mounts it at ",
                           JsonText(JsonField(m, "mountPath")), " without readOnly"));
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace phalanx::master

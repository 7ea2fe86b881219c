// KubePodClient and PodWatcher over kube::Client (see kube_pod_client.h).
#include "master/k8s/kube_pod_client.h"

#include <chrono>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "kube/decode.h"
#include "kube/json.h"
#include "kube/status.h"
#include "master/pods/pod_builder.h"

namespace phalanx::master {
namespace {

// metadata.name of `object`, "" when absent: what is known of a pod that does not decode.
std::string ObjectName(simdjson::dom::element object) {
  std::string_view name;
  if (object["metadata"]["name"].get(name) != simdjson::SUCCESS) return "";
  return std::string(name);
}

// Kubelet's eviction message when it evicted the pod for its own local storage limits
// (PodState::over_own_limit), read from kubelet's eviction messages: "Pod ephemeral local storage
// usage exceeds the total limit of containers …", "Container … exceeded its local ephemeral
// storage limit …", "Usage of EmptyDir volume … exceeds the limit …".
absl::StatusOr<std::string> OverOwnLimit(const kube::JsonObject& status) {
  KUBE_ASSIGN_OR_RETURN(std::string_view reason, status.String("reason"));
  KUBE_ASSIGN_OR_RETURN(std::string_view text, status.String("message"));
  const absl::string_view message(text.data(), text.size());
  const bool own =
      reason == "Evicted" &&
      (absl::StartsWith(message, "Pod ephemeral local storage usage exceeds the total limit") ||
       (absl::StartsWith(message, "Container ") &&
        absl::StrContains(message, " exceeded its local ephemeral storage limit")) ||
       (absl::StartsWith(message, "Usage of EmptyDir volume ") &&
        absl::StrContains(message, " exceeds the limit")));
  return own ? std::string(absl::StripAsciiWhitespace(message)) : std::string();
}

// Whether the pod's status says the cluster is ending it (PodState::disrupted), not for limits
// of its own.
absl::StatusOr<bool> Disrupted(const kube::JsonObject& status, bool over_own_limit) {
  KUBE_ASSIGN_OR_RETURN(std::string_view reason, status.String("reason"));
  if (reason == "Evicted") return !over_own_limit;
  KUBE_ASSIGN_OR_RETURN(std::vector<kube::JsonObject> conditions, status.ObjectArray("conditions"));
  for (const kube::JsonObject& c : conditions) {
    KUBE_ASSIGN_OR_RETURN(std::string_view type, c.String("type"));
    KUBE_ASSIGN_OR_RETURN(std::string_view value, c.String("status"));
    if (type == "DisruptionTarget" && value == "True") return true;
  }
  return false;
}

// The waiting containers of the pod's status (PodState::waiting).
absl::StatusOr<std::vector<ContainerWaiting>> Waiting(const kube::JsonObject& status) {
  std::vector<ContainerWaiting> out;
  for (std::string_view key : {"initContainerStatuses", "containerStatuses"}) {
    KUBE_ASSIGN_OR_RETURN(std::vector<kube::JsonObject> containers, status.ObjectArray(key));
    for (const kube::JsonObject& c : containers) {
      KUBE_ASSIGN_OR_RETURN(kube::JsonObject state, c.Object("state"));
      KUBE_ASSIGN_OR_RETURN(kube::JsonObject waiting, state.Object("waiting"));
      if (!waiting.present()) continue;
      KUBE_ASSIGN_OR_RETURN(std::string_view name, c.String("name"));
      KUBE_ASSIGN_OR_RETURN(std::string_view reason, waiting.String("reason"));
      KUBE_ASSIGN_OR_RETURN(std::string_view message, waiting.String("message"));
      out.push_back({.container = std::string(name),
                     .reason = std::string(reason),
                     .message = std::string(message)});
    }
  }
  return out;
}

}  // namespace

std::string ManagedPodSelector() { return absl::StrCat(kManagedByLabel, "=", kManagedByValue); }

absl::StatusOr<PodState> DecodePodState(simdjson::dom::element pod) {
  KUBE_ASSIGN_OR_RETURN(core::PodInfo info, kube::DecodePod(pod));
  KUBE_ASSIGN_OR_RETURN(kube::JsonObject root, kube::JsonObject::Of(pod, ""));
  KUBE_ASSIGN_OR_RETURN(kube::JsonObject meta, root.Object("metadata"));
  KUBE_ASSIGN_OR_RETURN(core::Labels annotations, meta.StringMap("annotations"));
  KUBE_ASSIGN_OR_RETURN(int64_t deletion_ms, kube::TimeMs(meta, "deletionTimestamp"));
  KUBE_ASSIGN_OR_RETURN(kube::JsonObject status, root.Object("status"));
  KUBE_ASSIGN_OR_RETURN(std::string over_own_limit, OverOwnLimit(status));
  KUBE_ASSIGN_OR_RETURN(bool disrupted, Disrupted(status, !over_own_limit.empty()));
  KUBE_ASSIGN_OR_RETURN(std::vector<ContainerWaiting> waiting, Waiting(status));
  PodState s{.ns = info.ns,
             .name = info.name,
             .allocation_id = info.gang,
             .phase = info.phase,
             .node = info.node,
             .gated = info.gated,
             .preempt_requested = info.preempt_requested,
             .preempted_by = info.preempted_by,
             .backfilled = info.backfilled,
             .priority = info.priority,
             .deletion_deadline =
                 deletion_ms == 0 ? absl::InfiniteFuture() : absl::FromUnixMillis(deletion_ms),
             .disrupted = disrupted,
             .over_own_limit = std::move(over_own_limit),
             .waiting = std::move(waiting)};
  if (const std::string* reason = core::FindLabel(annotations, kube::kPendingReasonAnnotation)) {
    s.pending_reason = *reason;
  }
  for (auto [key, field] : {std::pair{kube::kEtaAnnotation, &s.eta},
                            std::pair{kube::kWhatIfAnnotation, &s.what_if},
                            std::pair{kube::kExpectedRuntimeBasisAnnotation,
                                      &s.expected_runtime_basis}}) {
    const std::string* text = core::FindLabel(annotations, key);
    if (text != nullptr && text->size() <= kMaxOutlookText) *field = *text;
  }
  return s;
}

absl::StatusOr<bool> KubePodClient::EnsurePriorityClass(const std::string& name) {
  std::optional<int> value = PriorityOfClass(name);
  if (!absl::StartsWith(name, kPriorityClassPrefix) || !value) return false;
  {
    absl::MutexLock lock(&mu_);
    if (classes_.contains(name)) return false;
  }
  const nlohmann::json pc = {
      {"apiVersion", "scheduling.k8s.io/v1"},
      {"kind", "PriorityClass"},
      {"metadata", {{"name", name}, {"labels", {{kManagedByLabel, kManagedByValue}}}}},
      {"value", *value},
      {"globalDefault", false},
      {"preemptionPolicy", "Never"},
      {"description", absl::StrCat("phalanx tasks of priority ", *value)}};
  absl::Status s = client_.Create(kube::kPriorityClasses, "", pc.dump()).status();
  if (!s.ok() && !absl::IsAlreadyExists(s)) {
    return absl::Status(s.code(), absl::StrCat("creating PriorityClass ", name, ": ", s.message()));
  }
  absl::MutexLock lock(&mu_);
  classes_.insert(name);
  return true;
}

absl::Status KubePodClient::CreatePod(const nlohmann::json& pod) {
  const std::string ns = pod["metadata"]["namespace"];
  absl::StatusOr<bool> fresh = EnsurePriorityClass(pod["spec"].value("priorityClassName", ""));
  if (!fresh.ok()) return fresh.status();
  // The Priority admission plugin reads classes from a cache that lags a class just created.
  for (int attempt = 0;; ++attempt) {
    absl::Status s = client_.Create(kube::kPods, ns, pod.dump()).status();
    if (s.ok() || !*fresh || attempt == 50 || !absl::StrContains(s.message(), "no PriorityClass")) {
      return s;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

absl::Status KubePodClient::DeletePod(const std::string& ns, const std::string& name) {
  absl::Status s = client_.Delete(kube::kPods, ns, name);
  return absl::IsNotFound(s) ? absl::OkStatus() : s;
}

absl::Status KubePodClient::ForceDeletePod(const std::string& ns, const std::string& name) {
  absl::Status s = client_.Delete(kube::kPods, ns, name, {.grace_period_seconds = 0});
  return absl::IsNotFound(s) ? absl::OkStatus() : s;
}

absl::StatusOr<bool> KubePodClient::NodeDown(const std::string& name) {
  absl::StatusOr<std::string> body = client_.Get(kube::kNodes, "", name);
  if (absl::IsNotFound(body.status())) return true;
  if (!body.ok()) return body.status();
  simdjson::dom::parser parser;
  simdjson::dom::element node;
  if (parser.parse(*body).get(node) != simdjson::SUCCESS) {
    return absl::InternalError(
        absl::StrCat("node ", name, ": the API server's answer is not JSON"));
  }
  KUBE_ASSIGN_OR_RETURN(kube::JsonObject root, kube::JsonObject::Of(node, ""));
  KUBE_ASSIGN_OR_RETURN(kube::JsonObject status, root.Object("status"));
  KUBE_ASSIGN_OR_RETURN(std::vector<kube::JsonObject> conditions, status.ObjectArray("conditions"));
  for (const kube::JsonObject& c : conditions) {
    KUBE_ASSIGN_OR_RETURN(std::string_view type, c.String("type"));
    KUBE_ASSIGN_OR_RETURN(std::string_view value, c.String("status"));
    if (type == "Ready") return value != "True";
  }
  return true;  // A node that never reported Ready.
}

absl::Status KubePodClient::SetPodMetadata(const std::string& ns, const std::string& name,
                                           const char* map, const std::string& key,
                                           const std::string& value) {
  const nlohmann::json patch = {{"metadata", {{map, {{key, value}}}}}};
  return client_.Patch(kube::kPods, ns, name, kube::PatchType::kMerge, patch.dump()).status();
}

absl::Status KubePodClient::SetPodLabel(const std::string& ns, const std::string& name,
                                        const std::string& key, const std::string& value) {
  return SetPodMetadata(ns, name, "labels", key, value);
}

absl::Status KubePodClient::SetPodAnnotation(const std::string& ns, const std::string& name,
                                             const std::string& key, const std::string& value) {
  return SetPodMetadata(ns, name, "annotations", key, value);
}

absl::StatusOr<std::vector<PodState>> KubePodClient::ListPods(const std::string& ns) {
  std::vector<PodState> out;
  absl::StatusOr<std::string> rv = client_.ListAll(
      kube::kPods, ns, {.label_selector = ManagedPodSelector()},
      [&](simdjson::dom::element item) -> absl::Status {
        absl::StatusOr<PodState> s = DecodePodState(item);
        if (!s.ok()) {
          return absl::Status(s.status().code(), absl::StrCat("pod ", ns, "/", ObjectName(item),
                                                              ": ", s.status().message()));
        }
        out.push_back(*std::move(s));
        return absl::OkStatus();
      });
  if (!rv.ok()) return rv.status();
  return out;
}

absl::Status KubePodClient::CreateService(const nlohmann::json& service) {
  return client_
      .Create(kube::kServices, service["metadata"]["namespace"].get<std::string>(), service.dump())
      .status();
}

absl::Status KubePodClient::DeleteService(const std::string& ns, const std::string& name) {
  absl::Status s = client_.Delete(kube::kServices, ns, name);
  return absl::IsNotFound(s) ? absl::OkStatus() : s;
}

absl::StatusOr<std::vector<std::string>> KubePodClient::ListServices(const std::string& ns) {
  std::vector<std::string> out;
  absl::StatusOr<std::string> rv =
      client_.ListAll(kube::kServices, ns, {.label_selector = ManagedPodSelector()},
                      [&](simdjson::dom::element item) -> absl::Status {
                        out.push_back(ObjectName(item));
                        return absl::OkStatus();
                      });
  if (!rv.ok()) return rv.status();
  return out;
}

absl::Status KubePodClient::StreamLog(const std::string& ns, const std::string& name,
                                      const LogOptions& options,
                                      const std::function<bool(absl::string_view)>& sink) {
  std::vector<std::pair<std::string, std::string>> params = {
      {"container", std::string(kTaskContainer)}};
  if (options.follow) params.emplace_back("follow", "true");
  if (options.previous) params.emplace_back("previous", "true");
  if (options.tail_lines > 0) params.emplace_back("tailLines", absl::StrCat(options.tail_lines));
  if (options.limit_bytes > 0) params.emplace_back("limitBytes", absl::StrCat(options.limit_bytes));
  return client_.GetStream(kube::kPods, ns, name, "log", params, options.timeout, options.stop,
                           sink);
}

PodWatcher::PodWatcher(kube::Client& client, JobManager& jobs, std::vector<std::string> namespaces)
    : client_(client), jobs_(jobs), namespaces_(std::move(namespaces)) {}

PodWatcher::~PodWatcher() { Stop(); }

void PodWatcher::Start() {
  for (const std::string& ns : namespaces_) threads_.emplace_back([this, ns] { Run(ns); });
}

void PodWatcher::Stop() {
  stop_ = true;
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void PodWatcher::Run(const std::string& ns) {
  std::string rv;
  while (!stop_) {
    if (rv.empty()) {
      std::set<std::string> listed;
      absl::StatusOr<std::string> list =
          client_.ListAll(kube::kPods, ns, {.label_selector = ManagedPodSelector()},
                          [&](simdjson::dom::element item) {
                            absl::StatusOr<PodState> s = DecodePodState(item);
                            if (s.ok()) jobs_.OnPod(*s);
                            listed.insert(s.ok() ? s->name : ObjectName(item));  // Not gone.
                            return absl::OkStatus();
                          });
      if (!list.ok()) {
        std::this_thread::sleep_for(std::chrono::seconds(2));
        continue;
      }
      jobs_.OnPodsListed(ns, listed);
      rv = *list;
    }
    kube::WatchResult w = client_.Watch(
        kube::kPods, ns,
        {.label_selector = ManagedPodSelector(), .resource_version = rv, .stop = &stop_},
        [&](kube::EventType type, simdjson::dom::element object) {
          absl::StatusOr<PodState> s = DecodePodState(object);
          if (type == kube::EventType::kDeleted) {
            jobs_.OnPodDeleted(ns, s.ok() ? s->name : ObjectName(object));
          } else if (s.ok()) {
            jobs_.OnPod(*s);
          }
          return !stop_;
        });
    rv = w.status.ok() ? w.resource_version : "";
    if ((!w.status.ok() && !kube::IsGone(w.status)) || (w.EndedAtOnce() && !stop_)) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  }
}

}  // namespace phalanx::master

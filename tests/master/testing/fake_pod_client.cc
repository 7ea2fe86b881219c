// In-memory pods for JobManager and service tests (see fake_pod_client.h).
#include "tests/master/testing/fake_pod_client.h"

#include "absl/strings/str_cat.h"
#include "kube/decode.h"
#include "master/policy/priority_classes.h"

namespace phalanx::master::testing {

absl::Status FakePodClient::CreatePod(const nlohmann::json& pod) {
  std::function<absl::Status(const nlohmann::json&)> hook;
  {
    std::lock_guard<std::mutex> lock(mu_);
    hook = on_create_;
  }
  if (absl::Status s = hook ? hook(pod) : absl::OkStatus(); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  const std::string key = absl::StrCat(pod["metadata"]["namespace"].get<std::string>(), "/",
                                       pod["metadata"]["name"].get<std::string>());
  if (pods_.count(key)) return absl::AlreadyExistsError(key);
  pods_[key] = pod;
  ++creates_;
  return absl::OkStatus();
}

absl::Status FakePodClient::CreateService(const nlohmann::json& service) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!service_error_.ok()) return service_error_;
  const std::string key = absl::StrCat(service["metadata"]["namespace"].get<std::string>(), "/",
                                       service["metadata"]["name"].get<std::string>());
  if (services_.count(key)) return absl::AlreadyExistsError(key);
  services_[key] = service;
  ++service_creates_;
  return absl::OkStatus();
}

absl::Status FakePodClient::DeleteService(const std::string& ns, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!service_error_.ok()) return service_error_;
  services_.erase(absl::StrCat(ns, "/", name));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> FakePodClient::ListServices(const std::string& ns) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [key, service] : services_) {
    if (service["metadata"]["namespace"] == ns) out.push_back(service["metadata"]["name"]);
  }
  return out;
}

absl::Status FakePodClient::StreamLog(const std::string& ns, const std::string& name,
                                      const LogOptions& options,
                                      const std::function<bool(absl::string_view)>& sink) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!pods_.count(ns + "/" + name)) return absl::NotFoundError(name + " not found");
  }
  std::vector<std::string> lines = {name + " line 1\n", name + " line 2\n"};
  if (options.previous) lines = {name + " before\n"};
  if (options.tail_lines > 0 && static_cast<size_t>(options.tail_lines) < lines.size()) {
    lines.erase(lines.begin(), lines.end() - options.tail_lines);
  }
  std::string text;
  for (const std::string& l : lines) text += l;
  const size_t half = text.size() / 2;
  if (!sink(absl::string_view(text).substr(0, half)) || !sink(absl::string_view(text).substr(half)))
    return absl::OkStatus();
  // A followed log never ends by itself: until the reader stops (or times out).
  const absl::Time end = absl::Now() + options.timeout;
  while (options.follow && options.stop != nullptr && !*options.stop && absl::Now() < end) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  return absl::OkStatus();
}

std::map<std::string, nlohmann::json> FakePodClient::services() {
  std::lock_guard<std::mutex> lock(mu_);
  return services_;
}

int FakePodClient::service_creates() {
  std::lock_guard<std::mutex> lock(mu_);
  return service_creates_;
}

void FakePodClient::FailServices(absl::Status error) {
  std::lock_guard<std::mutex> lock(mu_);
  service_error_ = std::move(error);
}

void FakePodClient::OnCreate(std::function<absl::Status(const nlohmann::json& pod)> hook) {
  std::lock_guard<std::mutex> lock(mu_);
  on_create_ = std::move(hook);
}

void FakePodClient::OnDelete(std::function<absl::Status(const std::string& name)> hook) {
  std::lock_guard<std::mutex> lock(mu_);
  on_delete_ = std::move(hook);
}

void FakePodClient::OnLabel(std::function<absl::Status(const std::string& name)> hook) {
  std::lock_guard<std::mutex> lock(mu_);
  on_label_ = std::move(hook);
}

void FakePodClient::OnAnnotate(std::function<absl::Status(const std::string& name)> hook) {
  std::lock_guard<std::mutex> lock(mu_);
  on_annotate_ = std::move(hook);
}

absl::Status FakePodClient::RunHook(
    const std::function<absl::Status(const std::string&)> FakePodClient::*hook,
    const std::string& name) {
  std::function<absl::Status(const std::string&)> fn;
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn = this->*hook;
  }
  return fn ? fn(name) : absl::OkStatus();
}

absl::Status FakePodClient::DeletePod(const std::string& ns, const std::string& name) {
  if (absl::Status s = RunHook(&FakePodClient::on_delete_, name); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  if (pods_.erase(absl::StrCat(ns, "/", name))) deleted_.push_back(name);
  return absl::OkStatus();
}

absl::Status FakePodClient::ForceDeletePod(const std::string& ns, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  pods_.erase(absl::StrCat(ns, "/", name));
  force_deleted_.push_back(name);
  return absl::OkStatus();
}

absl::StatusOr<bool> FakePodClient::NodeDown(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  node_reads_.push_back(name);
  if (!node_error_.ok()) return node_error_;
  return down_nodes_.contains(name);
}

void FakePodClient::FailNodeReads(absl::Status error) {
  std::lock_guard<std::mutex> lock(mu_);
  node_error_ = std::move(error);
}

void FakePodClient::SetNodeDown(const std::string& name, bool down) {
  std::lock_guard<std::mutex> lock(mu_);
  if (down) {
    down_nodes_.insert(name);
  } else {
    down_nodes_.erase(name);
  }
}

std::vector<std::string> FakePodClient::force_deleted() {
  std::lock_guard<std::mutex> lock(mu_);
  return force_deleted_;
}

std::vector<std::string> FakePodClient::node_reads() {
  std::lock_guard<std::mutex> lock(mu_);
  return node_reads_;
}

absl::Status FakePodClient::SetPodLabel(const std::string& ns, const std::string& name,
                                        const std::string& key, const std::string& value) {
  if (absl::Status s = RunHook(&FakePodClient::on_label_, name); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(absl::StrCat(ns, "/", name));
  if (it == pods_.end()) return absl::NotFoundError(name);
  it->second["metadata"]["labels"][key] = value;
  return absl::OkStatus();
}

absl::Status FakePodClient::SetPodAnnotation(const std::string& ns, const std::string& name,
                                             const std::string& key, const std::string& value) {
  if (absl::Status s = RunHook(&FakePodClient::on_annotate_, name); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(absl::StrCat(ns, "/", name));
  if (it == pods_.end()) return absl::NotFoundError(name);
  it->second["metadata"]["annotations"][key] = value;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<PodState>> FakePodClient::ListPods(const std::string& ns) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PodState> out;
  for (const auto& [key, pod] : pods_) {
    if (pod["metadata"]["namespace"] != ns) continue;
    out.push_back(StateOf(pod, core::PodPhase::kPending, false));
    if (on_list_) on_list_(out.back());
  }
  return out;
}

void FakePodClient::OnList(std::function<void(PodState& listed)> hook) {
  std::lock_guard<std::mutex> lock(mu_);
  on_list_ = std::move(hook);
}

std::map<std::string, nlohmann::json> FakePodClient::pods() {
  std::lock_guard<std::mutex> lock(mu_);
  return pods_;
}

int FakePodClient::creates() {
  std::lock_guard<std::mutex> lock(mu_);
  return creates_;
}

std::vector<std::string> FakePodClient::deleted() {
  std::lock_guard<std::mutex> lock(mu_);
  return deleted_;
}

PodState FakePodClient::StateOf(const nlohmann::json& pod, core::PodPhase phase, bool bound) {
  const nlohmann::json& meta = pod["metadata"];
  return PodState{
      .ns = meta["namespace"],
      .name = meta["name"],
      .allocation_id = meta["labels"][std::string(kube::kGangLabel)],
      .phase = phase,
      .node = bound ? "node-1" : "",
      .gated = !bound,
      // As the API server's Priority admission sets it from the pod's class.
      .priority = PriorityOfClass(pod["spec"].value("priorityClassName", "")).value_or(0)};
}

}  // namespace phalanx::master::testing

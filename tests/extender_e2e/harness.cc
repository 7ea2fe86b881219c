// The extender e2e fixture (see harness.h): namespaces, node pools, the phalanx-extender process
// and the master's side of the pod contract.
#include "tests/extender_e2e/harness.h"

#include <curl/curl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "kube/decode.h"
#include "kube/json.h"
#include "kube/placement_key.h"
#include "tests/extender_e2e/process.h"
#include "tests/kube/test_cluster.h"

namespace phalanx::e2e {
namespace {

using kube::EncodeJsonString;

const kube::Resource kPriorityClasses{"/apis/scheduling.k8s.io/v1", "priorityclasses", false};

size_t AppendBody(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// The value of `export NAME=value` in the cluster's env file.
std::string EnvValue(const std::string& env, absl::string_view name) {
  for (absl::string_view line : absl::StrSplit(env, '\n')) {
    if (absl::ConsumePrefix(&line, absl::StrCat("export ", name, "="))) {
      return std::string(absl::StripAsciiWhitespace(line));
    }
  }
  return "";
}

}  // namespace

unsigned E2eSeed() {
  unsigned seed = std::random_device{}();
  const char* set = std::getenv("PHALANX_E2E_SEED");
  if (set != nullptr && !absl::SimpleAtoi(set, &seed)) {
    ADD_FAILURE() << "PHALANX_E2E_SEED=" << set << " is not an unsigned number";
  }
  std::printf("seed %u (replay with PHALANX_E2E_SEED=%u)\n", seed, seed);
  return seed;
}

void ExtenderE2eTest::SetUp() {
  absl::StatusOr<kube::Config> config = testing::TestClusterConfig();
  ASSERT_TRUE(config.ok()) << config.status();
  client_ = std::make_unique<kube::Client>(*std::move(config));
  cluster_dir_ = std::getenv("PHALANX_TEST_CLUSTER_DIR");
  absl::StatusOr<std::string> env = kube::ReadFile(cluster_dir_ + "/env");
  ASSERT_TRUE(env.ok()) << env.status();
  extender_url_ = std::string(absl::StripSuffix(EnvValue(*env, "PHALANX_EXTENDER_URL"), "/"));
  kubeconfig_ = EnvValue(*env, "KUBECONFIG");
  ASSERT_FALSE(extender_url_.empty()) << "no PHALANX_EXTENDER_URL in " << cluster_dir_ << "/env";

  ns_ = testing::UniqueName("e2e");
  absl::StatusOr<std::string> created = client_->Create(
      kube::kNamespaces, "",
      absl::StrCat(R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")", ns_, "\"}}"));
  ASSERT_TRUE(created.ok()) << created.status();
  // The key every extender of the test signs with, so that restarts keep their placements.
  key_path_ = absl::StrCat(cluster_dir_, "/logs/placement-key-", ns_);
  const std::string secret = testing::UniqueName("placement-key-of-") + std::string(32, 'k');
  std::ofstream(key_path_) << secret << "\n";
  absl::StatusOr<kube::PlacementKey> key = kube::PlacementKey::FromFile(key_path_, "key");
  ASSERT_TRUE(key.ok()) << key.status();
  placement_key_.emplace(*std::move(key));
  watcher_ = std::make_unique<Watcher>(client_.get(), ns_, &*placement_key_);
  ASSERT_TRUE(watcher_->Start().ok());
  log_path_ = absl::StrCat(cluster_dir_, "/logs/extender-", ns_, ".log");
}

void ExtenderE2eTest::TearDown() {
  if (client_ == nullptr || watcher_ == nullptr) return;
  if (extender_ > 0 && !HasFailure()) Settle();
  std::vector<std::string> end = CheckFinalState(Pods(), watcher_->nodes());
  EXPECT_TRUE(end.empty()) << "final state:\n" << absl::StrJoin(end, "\n");
  if (extender_ > 0) StopExtender(SIGTERM);
  watcher_->Stop();
  if (!HasFailure()) {
    EXPECT_GT(watcher_->bindings(), 0) << "the watcher saw no pod bound: nothing was checked";
  }
  std::vector<std::string> seen = watcher_->violations();
  if (seen.size() > 20) seen.resize(20);
  EXPECT_TRUE(seen.empty()) << watcher_->violations().size() << " invariant violations:\n"
                            << absl::StrJoin(seen, "\n");
  if (HasFailure()) {
    std::printf("--- %s (last 40 lines)\n%s\n", log_path_.c_str(), Tail(log_path_, 40).c_str());
  }
  kube::DeleteOptions now;
  now.grace_period_seconds = 0;
  for (const PodState& p : Pods())
    client_->Delete(kube::kPods, ns_, p.info.name, now).IgnoreError();
  for (const std::string& n : nodes_) client_->Delete(kube::kNodes, "", n).IgnoreError();
  client_->Delete(kube::kNamespaces, "", ns_).IgnoreError();
}

std::string ExtenderE2eTest::NodeName(const std::string& suffix, int i) const {
  return absl::StrCat(ns_, "-", suffix, "-", i);
}

std::string ExtenderE2eTest::AddUnmanagedNode(const std::string& suffix, int64_t gpus) {
  const std::string name = NodeName(suffix, 0);
  nodes_.push_back(name);
  watcher_->AddNode(name, {.gpus = gpus, .pods = 110});
  const std::string resources = absl::StrCat(R"({"cpu":"32","memory":"256Gi","pods":"110",)",
                                             R"("nvidia.com/gpu":")", gpus, R"("})");
  const std::string node = absl::StrCat(
      R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")", name,
      R"(","labels":{"kubernetes.io/hostname":")", name, R"(",")", kPoolKey, R"(":")", ns_,
      R"("}},"spec":{"taints":[{"key":")", kPoolKey, R"(","value":")", ns_,
      R"(","effect":"NoSchedule"}]},"status":{"capacity":)", resources, R"(,"allocatable":)",
      resources, R"(,"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady"}]}})");
  absl::StatusOr<std::string> created = client_->Create(kube::kNodes, "", node);
  EXPECT_TRUE(created.ok()) << created.status();
  return name;
}

void ExtenderE2eTest::LoseNode(const std::string& node) {
  const std::string taints = absl::StrCat(
      R"({"spec":{"taints":[{"key":")", kPoolKey, R"(","value":")", ns_,
      R"(","effect":"NoSchedule"},{"key":"node.kubernetes.io/unreachable","effect":"NoSchedule"},)",
      R"({"key":"node.kubernetes.io/unreachable","effect":"NoExecute"}]}})");
  absl::StatusOr<std::string> tainted =
      client_->Patch(kube::kNodes, "", node, kube::PatchType::kMerge, taints);
  ASSERT_TRUE(tainted.ok()) << tainted.status();
  absl::StatusOr<std::string> unknown = client_->Patch(
      kube::kNodes, "", node, kube::PatchType::kMerge,
      R"({"status":{"conditions":[{"type":"Ready","status":"Unknown","reason":"NodeStatusUnknown"}]}})",
      "status");
  ASSERT_TRUE(unknown.ok()) << unknown.status();
}

void ExtenderE2eTest::SetPodRunning(const std::string& pod) {
  absl::StatusOr<std::string> patched = client_->Patch(
      kube::kPods, ns_, pod, kube::PatchType::kMerge,
      R"({"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}})",
      "status");
  ASSERT_TRUE(patched.ok()) << patched.status();
}

void ExtenderE2eTest::AddNodes(const std::string& suffix, int count, int64_t gpus, int max_pods) {
  std::string cmd = absl::StrCat(PHALANX_TEST_CLUSTER_SCRIPT, " add-nodes --dir ", cluster_dir_,
                                 " --prefix ", ns_, "-", suffix, " --nodes ", count, " --gpus ",
                                 gpus, " --max-pods ", max_pods, " --label ", kPoolKey, "=", ns_,
                                 " --taint ", kPoolKey, "=", ns_, ":NoSchedule 2>&1");
  for (int i = 0; i < count; ++i) {
    nodes_.push_back(NodeName(suffix, i));  // Deleted in TearDown even if adding fails half-way.
    watcher_->AddNode(nodes_.back(), {.gpus = gpus, .pods = max_pods});
  }
  int exit_status = -1;
  std::string text = Command(cmd, &exit_status);
  ASSERT_EQ(exit_status, 0) << cmd << "\n" << text;
}

void ExtenderE2eTest::StartExtender(int max_slots_per_pod, const std::vector<std::string>& flags) {
  ASSERT_LT(extender_, 0) << "extender already running";
  std::string port = std::string(extender_url_.substr(extender_url_.rfind(':') + 1));
  std::vector<std::string> args = {PHALANX_EXTENDER_BINARY,
                                   "--kubeconfig",
                                   kubeconfig_,
                                   "--listen",
                                   "127.0.0.1:" + port,
                                   "--max-slots-per-pod",
                                   std::to_string(max_slots_per_pod),
                                   "--placement-key-file",
                                   key_path_};
  args.insert(args.end(), flags.begin(), flags.end());
  // The cluster only checked the port was free when it came up; if something holds it now, say
  // what (ss) and try again for a while rather than fail on a transient holder.
  for (int attempt = 0;; ++attempt) {
    int status = 0;
    std::error_code ignored;
    const uintmax_t log_size = std::filesystem::file_size(log_path_, ignored);
    ASSERT_NO_FATAL_FAILURE(RunExtender(args, &status));
    if (extender_ > 0) return;
    std::ifstream log(log_path_);
    log.seekg(log_size == static_cast<uintmax_t>(-1) ? 0 : log_size);
    const std::string said((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    if (attempt == 30 || !absl::StrContains(said, "cannot listen")) {
      FAIL() << "phalanx-extender exited (status " << status << "):\n" << said;
    }
    std::printf("port %s is taken; holders:\n%s\n", port.c_str(),
                Command(absl::StrCat("ss -tanp 'sport = :", port, "' 2>&1")).c_str());
    absl::SleepFor(absl::Seconds(1));
  }
}

void ExtenderE2eTest::RunExtender(const std::vector<std::string>& args, int* status) {
  const pid_t pid = SpawnLogged(args, log_path_);
  ASSERT_GT(pid, 0) << "cannot start " << args[0] << " logging to " << log_path_;
  for (absl::Time deadline = absl::Now() + absl::Seconds(60); absl::Now() < deadline;) {
    long code = 0;
    ExtenderGet("/readyz", &code);
    if (code == 200) {
      extender_ = pid;
      return;
    }
    if (waitpid(pid, status, WNOHANG) == pid) return;
    absl::SleepFor(absl::Milliseconds(100));
  }
  StopProcess(pid, SIGKILL);
  FAIL() << "phalanx-extender not ready after 60 s:\n" << Tail(log_path_, 20);
}

void ExtenderE2eTest::StopExtender(int signal) {
  if (extender_ <= 0) return;
  const std::string stopped = StopProcess(extender_, signal);
  EXPECT_EQ(stopped, "") << "phalanx-extender " << stopped << "; its log:\n" << Tail(log_path_, 20);
  extender_ = -1;
}

std::string ExtenderE2eTest::ExtenderGet(const std::string& path, long* code) {
  std::string body;
  CURL* curl = curl_easy_init();
  curl_easy_setopt(curl, CURLOPT_URL, (extender_url_ + path).c_str());
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 5000L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  *code = 0;
  if (curl_easy_perform(curl) == CURLE_OK) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, code);
  curl_easy_cleanup(curl);
  return body;
}

std::string ExtenderE2eTest::PriorityClass(int value, bool preempt_lower_priority) {
  std::string name =
      absl::StrCat("phalanx-e2e-p", value, preempt_lower_priority ? "-preempting" : "");
  EnsurePriorityClass(name, value, preempt_lower_priority);
  return name;
}

void ExtenderE2eTest::EnsurePriorityClass(const std::string& name, int value,
                                          bool preempt_lower_priority) {
  absl::StatusOr<std::string> r = client_->Create(
      kPriorityClasses, "",
      absl::StrCat(R"({"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass",)",
                   R"("metadata":{"name":")", name, R"("},"value":)", value,
                   R"(,"preemptionPolicy":")",
                   preempt_lower_priority ? "PreemptLowerPriority" : "Never", "\"}"));
  EXPECT_TRUE(r.ok() || absl::IsAlreadyExists(r.status())) << r.status();
}

void ExtenderE2eTest::Submit(const GangSpec& gang) {
  const std::string pc = PriorityClass(gang.priority);
  specs_[gang.name] = gang;
  const int run = runs_[gang.name]++;
  for (int i = 0; i < gang.pods; ++i) {
    std::string labels = absl::StrCat(
        "\"phalanx.io/gang\":", EncodeJsonString(gang.name), ",\"phalanx.io/gang-size\":\"",
        gang.pods, "\",\"phalanx.io/task-type\":", EncodeJsonString(gang.task),
        ",\"phalanx.io/preemptible\":\"", gang.preemptible ? "true" : "false", "\"");
    if (gang.managed)
      absl::StrAppend(&labels, ",\"phalanx.io/job-id\":", EncodeJsonString(gang.name));
    if (gang.position > 0) {
      absl::StrAppend(&labels, ",\"phalanx.io/queue-position\":\"", gang.position, "\"");
    }
    const std::string affinity =
        gang.affinity_host.empty()
            ? ""
            : absl::StrCat(R"("affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuring)",
                           R"(Execution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":)",
                           R"("kubernetes.io/hostname","operator":"In","values":[)",
                           EncodeJsonString(gang.affinity_host), "]}]}]}}},");
    // Deleted, it terminates for exit_seconds (kwok's pod-delete-graceful).
    const bool slow_exit = gang.exit_seconds > 0;
    std::vector<std::string> notes;
    if (slow_exit) notes.push_back(R"("phalanx.io/sim-graceful-exit":"true")");
    for (const auto& [k, v] : gang.annotations) {
      notes.push_back(absl::StrCat(EncodeJsonString(k), ":", EncodeJsonString(v)));
    }
    const std::string annotations =
        notes.empty() ? "" : absl::StrCat(R"(,"annotations":{)", absl::StrJoin(notes, ","), "}");
    const std::string grace =
        slow_exit ? absl::StrCat(R"("terminationGracePeriodSeconds":)", gang.exit_seconds, ",")
                  : "";
    const std::string group = gang.pod_group.empty()
                                  ? ""
                                  : absl::StrCat(R"("schedulingGroup":{"podGroupName":)",
                                                 EncodeJsonString(gang.pod_group), "},");
    const std::string ports = gang.host_port > 0
                                  ? absl::StrCat(R"("ports":[{"containerPort":)", gang.host_port,
                                                 R"(,"hostPort":)", gang.host_port, "}],")
                                  : "";
    std::string pod = absl::StrCat(
        R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")", gang.name, "-r", run, "-", i,
        R"(","labels":{)", labels, "}", annotations, R"(},"spec":{)", affinity, grace, group,
        R"("schedulerName":")", scheduler_name_, R"(","priorityClassName":")", pc,
        R"(","schedulingGates":[{"name":"phalanx.io/admission"}],"nodeSelector":{")", kPoolKey,
        R"(":")", ns_, R"("},"tolerations":[{"key":")", kPoolKey,
        R"(","operator":"Equal","value":")", ns_,
        R"(","effect":"NoSchedule"}],"containers":[{"name":"main","image":"trial",)", ports,
        R"("resources":{"requests":{"nvidia.com/gpu":")", gang.gpus,
        R"(","cpu":"1"},"limits":{"nvidia.com/gpu":")", gang.gpus, R"("}}}]}})");
    ASSERT_TRUE(CreateInNamespace(kube::kPods, pod));
  }
}

void ExtenderE2eTest::SubmitUngated(const std::string& name, int64_t gpus,
                                    const std::string& priority_class, bool preemptible) {
  std::string pod = absl::StrCat(
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")", name, R"(","labels":{)",
      preemptible ? R"("phalanx.io/preemptible":"true")" : "", R"(}},"spec":{"schedulerName":")",
      scheduler_name_, R"(","priorityClassName":")", priority_class, R"(","nodeSelector":{")",
      kPoolKey, R"(":")", ns_, R"("},"tolerations":[{"key":")", kPoolKey,
      R"(","operator":"Equal","value":")", ns_,
      R"(","effect":"NoSchedule"}],"containers":[{"name":"main","image":"trial",)",
      R"("resources":{"requests":{"nvidia.com/gpu":")", gpus,
      R"(","cpu":"1"},"limits":{"nvidia.com/gpu":")", gpus, R"("}}}]}})");
  ASSERT_TRUE(CreateInNamespace(kube::kPods, pod));
}

bool ExtenderE2eTest::CreateInNamespace(const kube::Resource& resource, const std::string& json) {
  for (int attempt = 0;; ++attempt) {
    absl::StatusOr<std::string> r = client_->Create(resource, ns_, json);
    if (r.ok()) return true;
    // The Priority admission plugin reads PriorityClasses from a cache that lags their creation.
    if (attempt == 50 || !absl::StrContains(r.status().message(), "no PriorityClass")) {
      ADD_FAILURE() << r.status();
      return false;
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
}

void ExtenderE2eTest::Finish(const std::string& gang) {
  std::set<std::string> uids;
  for (const PodState& p : Pods()) {
    if (p.info.gang == gang || (p.info.gang.empty() && p.info.name == gang)) {
      uids.insert(p.info.uid);
      absl::Status st = client_->Delete(kube::kPods, ns_, p.info.name);
      EXPECT_TRUE(st.ok() || absl::IsNotFound(st)) << st;
    }
  }
  ASSERT_FALSE(uids.empty()) << "no pods of " << gang;
  ASSERT_TRUE(WaitUntil([&] {
    for (const PodState& p : Pods()) {
      if (uids.count(p.info.uid) > 0) return false;
    }
    return true;
  })) << "pods of "
      << gang << " not deleted";
}

void ExtenderE2eTest::Pin(const std::string& pod, const std::string& node) {
  std::string uid;
  for (const PodState& p : Pods()) {
    if (p.info.name == pod) uid = p.info.uid;
  }
  ASSERT_FALSE(uid.empty()) << "no pod " << pod;
  absl::StatusOr<std::string> r = client_->Patch(
      kube::kPods, ns_, pod, kube::PatchType::kMerge,
      absl::StrCat(R"({"metadata":{"annotations":{"phalanx.io/placement":")", node,
                   R"(","phalanx.io/placement-signature":")",
                   placement_key_->SignPlacement(uid, node),
                   R"(","phalanx.io/backfilled":null,"phalanx.io/pending-reason":null}},)",
                   R"("spec":{"nodeSelector":{"kubernetes.io/hostname":")", node, R"("}}})"));
  ASSERT_TRUE(r.ok()) << r.status();
}

std::vector<std::string> ExtenderE2eTest::RequeueVictims() {
  std::set<std::string> gangs;
  for (const PodState& p : Pods()) {
    if (p.Live() && p.info.preempt_requested) gangs.insert(p.info.gang);
  }
  for (const std::string& g : gangs) {
    Finish(g);
    Submit(specs_.at(g));
  }
  return {gangs.begin(), gangs.end()};
}

std::vector<PodState> ExtenderE2eTest::Pods() {
  std::vector<PodState> pods;
  absl::StatusOr<std::string> r =
      client_->ListAll(kube::kPods, ns_, {}, [&](simdjson::dom::element item) {
        KUBE_ASSIGN_OR_RETURN(PodState p, ParsePod(item, &*placement_key_));
        pods.push_back(std::move(p));
        return absl::OkStatus();
      });
  EXPECT_TRUE(r.ok()) << r.status();
  return pods;
}

std::vector<PodState> ExtenderE2eTest::GangPods(const std::string& gang) {
  std::vector<PodState> out;
  for (PodState& p : Pods()) {
    if (p.Live() && (p.info.gang == gang || (p.info.gang.empty() && p.info.name == gang))) {
      out.push_back(std::move(p));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const PodState& a, const PodState& b) { return a.info.name < b.info.name; });
  return out;
}

std::vector<std::string> ExtenderE2eTest::BoundNodes(const std::string& gang) {
  std::vector<std::string> nodes;
  for (const PodState& p : GangPods(gang)) {
    if (!p.info.node.empty()) nodes.push_back(p.info.node);
  }
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

bool ExtenderE2eTest::Running(const std::string& gang) {
  std::vector<PodState> pods = GangPods(gang);
  if (pods.empty() || static_cast<int>(pods.size()) < pods[0].info.gang_size) return false;
  return std::all_of(pods.begin(), pods.end(),
                     [](const PodState& p) { return !p.info.node.empty(); });
}

bool ExtenderE2eTest::Gated(const std::string& gang) {
  std::vector<PodState> pods = GangPods(gang);
  return !pods.empty() &&
         std::all_of(pods.begin(), pods.end(), [](const PodState& p) { return p.info.gated; });
}

bool ExtenderE2eTest::Marked(const std::string& gang) {
  std::vector<PodState> pods = GangPods(gang);
  return !pods.empty() && std::all_of(pods.begin(), pods.end(),
                                      [](const PodState& p) { return p.info.preempt_requested; });
}

std::string ExtenderE2eTest::PendingReason(const std::string& gang) {
  std::vector<PodState> pods = GangPods(gang);
  return pods.empty() ? "" : pods[0].pending_reason;
}

void ExtenderE2eTest::ExpectReason(const std::string& gang, const std::string& reason) {
  std::string last;
  WaitUntil([&] { return (last = PendingReason(gang)) == reason; });
  EXPECT_EQ(last, reason) << "pending reason of " << gang;
}

std::string ExtenderE2eTest::PreemptedBy(const std::string& gang) {
  std::vector<PodState> pods = GangPods(gang);
  return pods.empty() ? "" : pods[0].info.preempted_by;
}

bool ExtenderE2eTest::WaitUntil(const std::function<bool()>& pred, absl::Duration timeout) {
  for (absl::Time deadline = absl::Now() + timeout;; absl::SleepFor(absl::Milliseconds(300))) {
    if (pred()) return true;
    if (absl::Now() > deadline) return false;
  }
}

void ExtenderE2eTest::Settle() {
  bool settled = WaitUntil(
      [&] {
        if (absl::Now() - watcher_->last_event() < absl::Seconds(3)) return false;
        if (!ExtenderSaw(watcher_->last_version())) return false;
        for (const PodState& p : Pods()) {
          if (!p.Live()) continue;
          if (!p.info.gated && p.info.node.empty()) return false;
          if (p.info.gated && (!p.info.placement.empty() || p.pending_reason.empty())) {
            return false;
          }
        }
        return true;
      },
      absl::Seconds(120));
  if (settled) return;
  long code = 0;
  const std::string queue = ExtenderGet("/debug/queue", &code).substr(0, 400);
  ADD_FAILURE() << "pods did not settle in 120 s; the test saw pods up to version "
                << watcher_->last_version() << ", the extender's /debug/queue (" << code
                << "): " << queue;
}

bool ExtenderE2eTest::ExtenderSaw(uint64_t version) {
  if (extender_ <= 0) return true;
  long code = 0;
  const std::string body = ExtenderGet("/debug/queue", &code);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (code != 200 || parser.parse(body).get(doc) != simdjson::SUCCESS) return false;
  bool leading = true;
  if (doc["leading"].get(leading) == simdjson::SUCCESS && !leading) return true;
  std::string_view seen;
  uint64_t seen_version = 0;
  return doc["seen_version"].get(seen) == simdjson::SUCCESS &&
         absl::SimpleAtoi(std::string(seen), &seen_version) && seen_version >= version;
}

void ExtenderE2eTest::Holds(const std::string& what, const std::function<bool()>& pred,
                            absl::Duration period) {
  for (absl::Time end = absl::Now() + period; absl::Now() < end;
       absl::SleepFor(absl::Milliseconds(300))) {
    if (!pred()) {
      ADD_FAILURE() << "no longer holds: " << what;
      return;
    }
  }
}

QueueEntry ExtenderE2eTest::Queued(const std::string& gang) {
  long code = 0;
  std::string body = ExtenderGet("/debug/queue", &code);
  EXPECT_EQ(code, 200) << body;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  QueueEntry out;
  if (parser.parse(body).get(doc) != simdjson::SUCCESS) return out;
  simdjson::dom::array gangs;
  if (doc["gangs"].get(gangs) != simdjson::SUCCESS) return out;
  for (simdjson::dom::element g : gangs) {
    std::string_view key, state, reason;
    if (g["gang"].get(key) != simdjson::SUCCESS || kube::Sv(key) != Key(gang)) continue;
    if (g["state"].get(state) == simdjson::SUCCESS) out.state = std::string(state);
    if (g["reason"].get(reason) == simdjson::SUCCESS) out.reason = std::string(reason);
    for (std::string_view field : {"nodes", "victims"}) {
      simdjson::dom::array list;
      if (g[field].get(list) != simdjson::SUCCESS) continue;
      for (simdjson::dom::element e : list) {
        std::string_view s;
        if (e.get(s) != simdjson::SUCCESS) continue;
        (field == "nodes" ? out.nodes : out.victims).emplace_back(s);
      }
    }
  }
  return out;
}

}  // namespace phalanx::e2e

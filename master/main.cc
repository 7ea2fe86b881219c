// phalanx-master: loads master.yaml (--config), serves Prometheus metrics on --metrics-listen
// (default 0.0.0.0:<metrics_port>), waits to be the database's one active master (a standby
// until then: master/store/leader_lock.h), opens Postgres, re-attaches to its pods, then serves
// the phalanx.v1 gRPC API on --listen (default 0.0.0.0:<port>) until SIGTERM or SIGINT. In a pod
// (POD_NAME and POD_NAMESPACE set) it labels itself phalanx.io/master-role=standby, then =active
// once it serves: the chart's Service routes to the active one only. --help (-h) prints the usage
// on stdout; without --config it goes to stderr, with exit status 2.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "http/server.h"
#include "kube/client.h"
#include "kube/config.h"
#include "master/api/metrics.h"
#include "master/api/server.h"
#include "master/api/services.h"
#include "master/config/config.h"
#include "master/jobs/job_manager.h"
#include "master/k8s/kube_pod_client.h"
#include "master/k8s/role_label.h"
#include "master/store/leader_lock.h"
#include "master/store/store.h"

namespace phalanx::master {
namespace {

volatile std::sig_atomic_t g_stop = 0;

void OnSignal(int) { g_stop = 1; }

int Fail(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "phalanx-master: %s: %s\n", what.c_str(), status.ToString().c_str());
  return 1;
}

// The command line. Flags take `--name VALUE` or `--name=VALUE`.
struct Args {
  bool check_config = false;
  std::string config;
  std::string listen;                                  // HOST:PORT; "" for the config's port.
  std::optional<std::pair<std::string, int>> metrics;  // Unset: the config's metrics_port.
};

// The HOST:PORT of `flag`, or an error naming it.
absl::StatusOr<std::pair<std::string, int>> ListenAddress(absl::string_view flag,
                                                          const std::string& address) {
  absl::StatusOr<std::pair<std::string, int>> parsed = http::ParseListenAddress(address);
  if (parsed.ok()) return parsed;
  return absl::InvalidArgumentError(absl::StrCat(flag, ": ", parsed.status().message()));
}

// The command line after the program's name (--help and -h aside); an error names the flag or
// argument it refuses.
absl::StatusOr<Args> ParseArgs(int argc, char** argv) {
  Args out;
  std::string metrics;
  const std::map<std::string, std::string*> valued = {
      {"--config", &out.config}, {"--listen", &out.listen}, {"--metrics-listen", &metrics}};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--check-config") {
      out.check_config = true;
      continue;
    }
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    auto it = valued.find(name);
    if (it == valued.end()) {
      return absl::InvalidArgumentError(absl::StartsWith(arg, "-")
                                            ? absl::StrCat("unknown flag \"", name, "\"")
                                            : absl::StrCat("unexpected argument \"", arg, "\""));
    }
    if (eq == std::string::npos && i + 1 == argc) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": needs a value"));
    }
    *it->second = eq == std::string::npos ? argv[++i] : arg.substr(eq + 1);
  }
  if (!out.listen.empty()) {
    if (absl::Status s = ListenAddress("--listen", out.listen).status(); !s.ok()) return s;
  }
  if (!metrics.empty()) {
    absl::StatusOr<std::pair<std::string, int>> address =
        ListenAddress("--metrics-listen", metrics);
    if (!address.ok()) return address.status();
    out.metrics = *std::move(address);
  }
  return out;
}

// The chart starts the database next to the master: wait for it (up to 5 minutes).
absl::StatusOr<std::unique_ptr<Store>> OpenStore(const DbConfig& db) {
  const absl::Time deadline = absl::Now() + absl::Minutes(5);
  while (true) {
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(ConnectionString(db));
    if (store.ok() || !absl::IsUnavailable(store.status()) || absl::Now() > deadline) return store;
    std::fprintf(stderr, "phalanx-master: waiting for the database at %s:%d: %s\n", db.host.c_str(),
                 db.port, store.status().ToString().c_str());
    absl::SleepFor(absl::Seconds(3));
  }
}

constexpr char kUsage[] =
    "usage: phalanx-master --config master.yaml [--listen HOST:PORT] "
    "[--metrics-listen HOST:PORT]\n"
    "       phalanx-master --config master.yaml --check-config  (validates it and exits; the\n"
    "       files it names are read at start)\n";

bool HasArg(int argc, char** argv, const std::string& want) {
  for (int i = 1; i < argc; ++i) {
    if (argv[i] == want) return true;
  }
  return false;
}

// The time for log lines, as the job manager's event log writes it.
std::string Now() {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone());
}

// The metrics of a standby, and the line the active master adds to its own.
std::string ActiveGauge(bool active) {
  return absl::StrCat(
      "# HELP phalanx_master_active 1 on the active master (it holds the database's lock), 0 on "
      "a standby.\n# TYPE phalanx_master_active gauge\nphalanx_master_active ",
      active ? 1 : 0, "\n");
}

// Waits until this master holds the database's lock, then watches it: a master that loses it
// exits at once, since another may be active by then.
absl::Status BecomeActive(LeaderLock& lock) {
  // As OpenStore: the chart starts the database next to the master, so wait up to 5 minutes.
  absl::Status s =
      lock.Acquire(g_stop, absl::Milliseconds(500), absl::Minutes(5), [](const std::string& why) {
        std::fprintf(stderr, "phalanx-master: %s standby (%s)\n", Now().c_str(), why.c_str());
      });
  if (!s.ok()) return s;
  std::fprintf(stderr, "phalanx-master: %s active\n", Now().c_str());
  if (absl::StatusOr<int> ended = lock.FenceOthers(); !ended.ok()) {
    return ended.status();
  } else if (*ended > 0) {
    std::fprintf(stderr, "phalanx-master: %s ended %d database session(s) of the master before\n",
                 Now().c_str(), *ended);
  }
  lock.Watch(absl::Seconds(1), [](const std::string& why) {
    std::fprintf(stderr, "phalanx-master: no longer the active master: %s; exiting\n", why.c_str());
    std::_Exit(3);
  });
  return absl::OkStatus();
}

int CheckConfig(const std::string& path) {
  absl::StatusOr<MasterConfig> config = ParseMasterConfigFile(path);
  if (!config.ok()) return Fail("invalid config", config.status());
  std::printf("phalanx-master: %s is valid\n", path.c_str());
  return 0;
}

int Run(int argc, char** argv) {
  if (HasArg(argc, argv, "--help") || HasArg(argc, argv, "-h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  absl::StatusOr<Args> args = ParseArgs(argc, argv);
  if (!args.ok() || args->config.empty()) {
    if (!args.ok())
      std::fprintf(stderr, "phalanx-master: %s\n", std::string(args.status().message()).c_str());
    std::fputs(kUsage, stderr);
    return 2;
  }
  if (args->check_config) return CheckConfig(args->config);
  absl::StatusOr<MasterConfig> config = LoadMasterConfig(args->config);
  if (!config.ok()) return Fail("invalid config", config.status());
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  absl::StatusOr<kube::Config> kube_config = kube::DefaultConfig();
  if (!kube_config.ok()) return Fail("kubernetes config", kube_config.status());
  kube::Client client(*kube_config);
  KubePodClient pods(client);
  const char* pod_ns = std::getenv("POD_NAMESPACE");
  const char* pod_name = std::getenv("POD_NAME");
  PodRoleLabel role(pods, pod_ns == nullptr ? "" : pod_ns, pod_name == nullptr ? "" : pod_name);
  // A pod restarted in place may still say active: it says standby before it answers probes.
  role.Set("standby");
  if (!role.WaitApplied(absl::Seconds(10))) {
    std::fprintf(stderr, "phalanx-master: %s its pod is not yet labelled standby\n", Now().c_str());
  }
  // The job manager the metrics read, once active; null on a standby and once it stops.
  absl::Mutex serving_mu;
  JobManager* serving = nullptr;
  MasterMetrics metrics;
  MetricsServer metrics_server([&] {
    absl::MutexLock serving_lock(&serving_mu);
    JobManager* jobs = serving;
    if (jobs == nullptr) return ActiveGauge(false);
    absl::StatusOr<std::vector<QueueEntry>> queue = jobs->Queue("");
    metrics.Update(jobs->Stats(), queue.ok() ? *queue : std::vector<QueueEntry>{});
    return metrics.Serialize() + ActiveGauge(true);
  });
  const std::pair<std::string, int> metrics_address =
      args->metrics.value_or(std::pair<std::string, int>{"0.0.0.0", config->metrics_port});
  if (absl::Status s = metrics_server.Start(metrics_address.first, metrics_address.second,
                                            config->metrics_server);
      !s.ok()) {
    return Fail("starting the metrics server", s);
  }
  LeaderLock lock(ConnectionString(config->db));
  if (absl::Status s = BecomeActive(lock); !s.ok())
    return absl::IsCancelled(s) ? 0 : Fail("database", s);
  absl::StatusOr<std::unique_ptr<Store>> store = OpenStore(config->db);
  if (!store.ok()) return Fail("database", store.status());
  auto log = [](const std::string& line) {
    std::fprintf(stderr, "phalanx-master: %s\n", line.c_str());
  };
  if (const std::string fields = InlineCredentials(config->checkpoint_storage); !fields.empty()) {
    log(absl::StrCat("warning: checkpoint_storage holds ", fields,
                     " inline; task pods get them as plain env. Put them in a Secret in every "
                     "pool namespace and name it in checkpoint_storage.credentials_secret"));
  }
  if (absl::Status s = EnsureBuiltinUsers(**store, config->default_password,
                                          config->allow_empty_password, log);
      !s.ok()) {
    return Fail("creating the built-in users", s);
  }
  JobManager jobs(*config, **store, pods);
  jobs.SetEventLog([](const std::string& line) {
    std::fprintf(stderr, "phalanx-master: %s %s\n", Now().c_str(), line.c_str());
  });
  if (absl::Status s = jobs.Recover(); !s.ok()) return Fail("re-attaching to pods", s);
  std::set<std::string> namespaces;
  for (const ResourcePoolConfig& pool : config->resource_pools) namespaces.insert(pool.ns);
  PodWatcher watcher(client, jobs, {namespaces.begin(), namespaces.end()});
  watcher.Start();
  absl::StatusOr<std::unique_ptr<MasterServer>> server = MasterServer::Start(
      args->listen.empty() ? absl::StrCat("0.0.0.0:", config->port) : args->listen, config->tls,
      **store, jobs, &metrics);
  if (!server.ok()) return Fail("starting the gRPC server", server.status());
  std::fprintf(stderr, "phalanx-master: %s serving on port %d, metrics on port %d\n", Now().c_str(),
               (*server)->port(), metrics_server.port());
  {
    absl::MutexLock serving_lock(&serving_mu);
    serving = &jobs;
  }
  role.Set("active");
  while (!g_stop) {
    jobs.Tick(absl::Now());
    absl::SleepFor(absl::Seconds(2));
  }
  (*server)->Shutdown();
  watcher.Stop();
  absl::MutexLock serving_lock(&serving_mu);
  serving = nullptr;
  return 0;
}

}  // namespace
}  // namespace phalanx::master

int main(int argc, char** argv) { return phalanx::master::Run(argc, argv); }

// phalanx-master against raw Postgres, side by side in one run, on a durable Postgres
// (scripts/pg-temp with PG_TEMP_DURABLE=1: fsync and synchronous_commit on, so a commit is on disk
// when it returns):
//  1. CreateExperiment over gRPC, one client, one call at a time: parse the config, store the job
//     and its trial, store its first allocation, create its gated pod (an in-memory PodClient: the
//     Kubernetes API is not what is measured) and answer. An answer means the experiment is
//     committed. The floor: INSERT of a row as large as the config plus COMMIT on a plain libpqxx
//     connection. For where the time goes, the same submissions are also made by calling the
//     JobManager directly (no gRPC), and an empty gRPC call is timed. Rounds alternate between
//     the three; ratios are of total rates. Also the rate of empty gRPC calls with --clients
//     clients at once: gRPC's own ceiling here.
//  2. The same with --clients callers at once: that many gRPC clients (a channel each) against as
//     many raw connections, each making --ops calls. Submissions made at once share a commit.
//     Every phase also prints the machine's busy CPU time per call (/proc/stat, every process:
//     clients, master and Postgres), which says what a rate costs when the cores are the limit.
//  3. GetJobs service time (p50, p99) with --queued jobs in the queue: the first page (100 jobs),
//     a page of 1000, the first 100 QUEUED jobs (a states filter: every job's state is read for the
//     total), and the first page again with a submission before each call (the queue changes
//     between reads: nothing is served from a cache).
// Usage: build/bench/master_bench [--ops 300] [--rounds 3] [--clients 8] [--queued 10000]
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "master/api/server.h"
#include "master/api/services.h"
#include "master/jobs/job_manager.h"
#include "master/store/store.h"
#include "phalanx/v1/auth.grpc.pb.h"
#include "phalanx/v1/experiment.grpc.pb.h"
#include "phalanx/v1/job.grpc.pb.h"
#include "pqxx/pqxx"
#include "tests/master/testing/fake_pod_client.h"

namespace phalanx::master {
namespace {

constexpr char kConfig[] =
    "name: bench\nsearcher: {name: single}\n"
    "hyperparameters: {lr: 0.01, layers: 4}\nresources: {slots_per_trial: 1, priority: 50}\n";

int Flag(int argc, char** argv, const std::string& name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    int v = 0;
    if (argv[i] == "--" + name && absl::SimpleAtoi(argv[i + 1], &v)) return v;
  }
  return fallback;
}

// A durable Postgres in a temp dir for the life of the bench.
class DurablePostgres {
 public:
  DurablePostgres() {
    char tmpl[] = "/tmp/phalanx-bench-pg-XXXXXX";
    dir_ = mkdtemp(tmpl);
    if (std::system(
            absl::StrCat("PG_TEMP_DURABLE=1 ", PHALANX_PG_TEMP, " up --dir ", dir_, " >/dev/null")
                .c_str()) != 0) {
      std::fprintf(stderr, "master_bench: scripts/pg-temp up failed\n");
      std::exit(1);
    }
    std::ifstream env(dir_ + "/env");
    const std::string key = "export PHALANX_TEST_PG_URL=";
    for (std::string line; std::getline(env, line);) {
      if (line.rfind(key, 0) == 0) url_ = line.substr(key.size());
    }
  }
  ~DurablePostgres() {
    std::system(absl::StrCat(PHALANX_PG_TEMP, " down --dir ", dir_, " >/dev/null").c_str());
  }
  // A new database's URL.
  std::string Database(const std::string& name) {
    pqxx::connection conn(url_);
    pqxx::nontransaction(conn).exec("CREATE DATABASE " + name);
    return url_.substr(0, url_.rfind('/') + 1) + name;
  }

 private:
  std::string dir_, url_;
};

void RawInserts(pqxx::connection& conn, int ops) {
  for (int i = 0; i < ops; ++i) {
    pqxx::work tx(conn);
    tx.exec_params("INSERT INTO raw_jobs (job_id, config, state) VALUES ($1, $2, 'ACTIVE')",
                   absl::StrCat("exp-", i), kConfig);
    tx.commit();
  }
}

void CreateExperiments(v1::ExperimentService::Stub& stub, const std::string& token, int ops) {
  v1::CreateExperimentRequest req;
  req.set_config(kConfig);
  req.set_activate(true);
  for (int i = 0; i < ops; ++i) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer " + token);
    v1::CreateExperimentResponse resp;
    grpc::Status s = stub.CreateExperiment(&ctx, req, &resp);
    if (!s.ok()) {
      std::fprintf(stderr, "CreateExperiment: %s\n", s.error_message().c_str());
      std::exit(1);
    }
  }
}

// Busy CPU time of the whole machine so far, in microseconds (/proc/stat: user, nice, system,
// irq and softirq of every process, Postgres included; not steal, which is the hypervisor's).
double MachineBusyUs() {
  std::ifstream stat("/proc/stat");
  std::string cpu;
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0;
  stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq;
  return static_cast<double>(user + nice + system + irq + softirq) * 1e6 / sysconf(_SC_CLK_TCK);
}

// A phase's calls per second, and the machine's busy CPU time per call.
struct Measured {
  double per_s = 0, cpu_us = 0;
};

// `callers` threads that each run call(i) once (ops_each calls), started together.
template <typename Fn>
Measured Rate(int callers, int ops_each, Fn call) {
  std::vector<std::thread> threads;
  std::atomic<int> ready = 0;
  absl::Time start;
  double busy_at_start = 0;
  for (int i = 0; i < callers; ++i) {
    threads.emplace_back([&, i] {
      if (++ready == callers) {
        busy_at_start = MachineBusyUs();
        start = absl::Now();
      }
      while (ready < callers) std::this_thread::yield();
      call(i);
    });
  }
  for (std::thread& t : threads) t.join();
  const double calls = callers * ops_each;
  return {.per_s = calls / absl::ToDoubleSeconds(absl::Now() - start),
          .cpu_us = (MachineBusyUs() - busy_at_start) / calls};
}

Measured RawInsertRate(const std::string& url, int connections, int ops) {
  std::vector<std::unique_ptr<pqxx::connection>> conns;
  for (int i = 0; i < connections; ++i) conns.push_back(std::make_unique<pqxx::connection>(url));
  return Rate(connections, ops, [&](int i) { RawInserts(*conns[i], ops); });
}

Measured CreateExperimentRate(const std::string& target, const std::string& token, int clients,
                              int ops) {
  std::vector<std::unique_ptr<v1::ExperimentService::Stub>> stubs;
  for (int i = 0; i < clients; ++i) {
    grpc::ChannelArguments own;  // A connection of its own, as separate clients have.
    own.SetInt("phalanx.bench.client", i);
    stubs.push_back(v1::ExperimentService::NewStub(
        grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), own)));
  }
  return Rate(clients, ops, [&](int i) { CreateExperiments(*stubs[i], token, ops); });
}

// The same submissions made on the JobManager directly, without gRPC: `callers` threads at once.
Measured DirectRate(JobManager& jobs, const User& user, int callers, int ops) {
  return Rate(callers, ops, [&](int) {
    for (int i = 0; i < ops; ++i) {
      if (!jobs.CreateExperiment(kConfig, user, true).ok()) std::exit(1);
    }
  });
}

// Rounds alternating raw, master over gRPC and master called directly, at `callers` at once;
// prints each (rate, and the machine's CPU per call) and the mean ratios to raw.
void CompareRates(const std::string& raw_url, const std::string& target, const std::string& token,
                  JobManager& jobs, const User& user, int callers, int ops, int rounds) {
  std::printf("%-6s %13s %6s %19s %6s %6s %14s %6s %6s   (%d at once, %d calls each)\n", "round",
              "raw insert/s", "cpu us", "CreateExperiment/s", "cpu us", "ratio", "direct call/s",
              "cpu us", "ratio", callers, ops);
  Measured raw_total, master_total, direct_total;
  auto add = [](Measured& total, const Measured& m) {
    total.per_s += m.per_s;
    total.cpu_us += m.cpu_us;
  };
  auto print = [](const std::string& label, const Measured& raw, const Measured& master,
                  const Measured& direct) {
    std::printf("%-6s %13.0f %6.0f %19.0f %6.0f %6.2f %14.0f %6.0f %6.2f", label.c_str(), raw.per_s,
                raw.cpu_us, master.per_s, master.cpu_us, master.per_s / raw.per_s, direct.per_s,
                direct.cpu_us, direct.per_s / raw.per_s);
  };
  for (int r = 0; r < rounds; ++r) {
    const Measured raw = RawInsertRate(raw_url, callers, ops);
    const Measured master = CreateExperimentRate(target, token, callers, ops);
    const Measured direct = DirectRate(jobs, user, callers, ops);
    add(raw_total, raw);
    add(master_total, master);
    add(direct_total, direct);
    print(std::to_string(r + 1), raw, master, direct);
    std::printf("\n");
  }
  for (Measured* m : {&raw_total, &master_total, &direct_total}) {
    m->per_s /= rounds;
    m->cpu_us /= rounds;
  }
  print("mean", raw_total, master_total, direct_total);
  std::printf("   (target >= 0.5 for CreateExperiment)\n\n");
}

// Mean microseconds of an empty unary call (grpc.health.v1 Check) on `channel`.
double EmptyCallUs(const std::shared_ptr<grpc::Channel>& channel, int calls) {
  auto health = grpc::health::v1::Health::NewStub(channel);
  const absl::Time start = absl::Now();
  for (int i = 0; i < calls; ++i) {
    grpc::ClientContext ctx;
    grpc::health::v1::HealthCheckRequest req;
    grpc::health::v1::HealthCheckResponse resp;
    if (!health->Check(&ctx, req, &resp).ok()) std::exit(1);
  }
  return absl::ToDoubleMicroseconds(absl::Now() - start) / calls;
}

// Empty unary calls (grpc.health.v1 Check) per second of `clients` clients at once, a channel each:
// what gRPC alone allows on this machine.
Measured EmptyCallRate(const std::string& target, int clients, int ops) {
  std::vector<std::unique_ptr<grpc::health::v1::Health::Stub>> stubs;
  for (int i = 0; i < clients; ++i) {
    grpc::ChannelArguments own;
    own.SetInt("phalanx.bench.client", i);
    stubs.push_back(grpc::health::v1::Health::NewStub(
        grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), own)));
  }
  return Rate(clients, ops, [&](int i) {
    for (int n = 0; n < ops; ++n) {
      grpc::ClientContext ctx;
      grpc::health::v1::HealthCheckRequest req;
      grpc::health::v1::HealthCheckResponse resp;
      if (!stubs[i]->Check(&ctx, req, &resp).ok()) std::exit(1);
    }
  });
}

// p50 and p99 in ms of `calls` GetJobs of `req`; `before` runs ahead of each call, untimed.
std::pair<double, double> GetJobsLatency(v1::JobService::Stub& stub, const std::string& token,
                                         const v1::GetJobsRequest& req, int calls, int* returned,
                                         const std::function<void()>& before) {
  std::vector<double> ms;
  for (int i = 0; i < calls; ++i) {
    before();
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer " + token);
    v1::GetJobsResponse resp;
    const absl::Time start = absl::Now();
    if (!stub.GetJobs(&ctx, req, &resp).ok()) std::exit(1);
    ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - start));
    *returned = resp.jobs_size();
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms[ms.size() * 99 / 100]};
}

int Run(int argc, char** argv) {
  const int ops = Flag(argc, argv, "ops", 300), rounds = Flag(argc, argv, "rounds", 3);
  const int queued = Flag(argc, argv, "queued", 10000);
  const int clients = Flag(argc, argv, "clients", 8);
  DurablePostgres pg;
  const std::string raw_url = pg.Database("raw");
  pqxx::nontransaction(*std::make_unique<pqxx::connection>(raw_url))
      .exec(
          "CREATE TABLE raw_jobs (id BIGSERIAL PRIMARY KEY, job_id TEXT NOT NULL, config TEXT NOT "
          "NULL, state TEXT NOT NULL, created TIMESTAMPTZ NOT NULL DEFAULT now())");

  std::unique_ptr<Store> store = *Store::Open(pg.Database("master"));
  if (!EnsureBuiltinUsers(*store, "pw").ok()) return 1;
  absl::StatusOr<MasterConfig> config = ParseMasterConfig(
      "max_slots_per_pod: 8\nresource_pools: [{pool_name: gpu, kubernetes_namespace: gpu}]\n");
  testing::FakePodClient pods;
  JobManager jobs(*config, *store, pods);
  std::unique_ptr<MasterServer> server =
      *MasterServer::Start("127.0.0.1:0", std::nullopt, *store, jobs);
  const std::string target = absl::StrCat("127.0.0.1:", server->port());
  auto channel = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
  grpc::ClientContext login_ctx;
  v1::LoginRequest login;
  login.set_username("admin");
  login.set_password("pw");
  v1::LoginResponse session;
  if (!v1::AuthService::NewStub(channel)->Login(&login_ctx, login, &session).ok()) return 1;

  char host[256] = "";
  gethostname(host, sizeof host);
  std::printf("machine: %s, %ld cores; Postgres 15 (pg-temp, fsync on)\n", host,
              sysconf(_SC_NPROCESSORS_ONLN));
  // Direct calls go to a JobManager of their own (same configuration, own database), so that the
  // queue GetJobs is timed on holds exactly --queued jobs.
  std::unique_ptr<Store> direct_store = *Store::Open(pg.Database("direct"));
  if (!EnsureBuiltinUsers(*direct_store, "pw").ok()) return 1;
  testing::FakePodClient direct_pods;
  JobManager direct(*config, *direct_store, direct_pods);
  const User direct_admin = direct_store->FindUser("admin")->user;
  std::printf("an empty gRPC call (grpc.health.v1 Check) on this channel: %.0f us\n",
              EmptyCallUs(channel, 1000));
  const Measured empty = EmptyCallRate(target, clients, 1000);
  std::printf("empty gRPC calls with %d clients at once: %.0f/s, %.0f us of machine CPU each\n\n",
              clients, empty.per_s, empty.cpu_us);
  CompareRates(raw_url, target, session.token(), direct, direct_admin, 1, ops, rounds);
  CompareRates(raw_url, target, session.token(), direct, direct_admin, clients, ops, rounds);

  const User admin = store->FindUser("admin")->user;
  for (int n = ops * rounds * (1 + clients); n < queued; ++n) {
    if (!jobs.CreateExperiment(kConfig, admin, true).ok()) return 1;
  }
  auto queue = v1::JobService::NewStub(channel);
  std::printf("GetJobs with %d queued jobs (200 calls each):\n", queued);
  struct Case {
    const char* what;
    int limit;
    bool queued_only, submit_before;
  };
  for (const Case& c : {Case{"page", 100, false, false}, Case{"page", 1000, false, false},
                        Case{"QUEUED only, page", 100, true, false},
                        Case{"after a submission, page", 100, false, true}}) {
    v1::GetJobsRequest req;
    req.set_limit(c.limit);
    if (c.queued_only) req.add_states(v1::JOB_STATE_QUEUED);
    int returned = 0;
    auto [p50, p99] = GetJobsLatency(*queue, session.token(), req, 200, &returned, [&] {
      if (c.submit_before && !jobs.CreateExperiment(kConfig, admin, true).ok()) std::exit(1);
    });
    std::printf("  %s of %4d: p50 %6.2f ms  p99 %6.2f ms   (target p99 <= 20 ms)\n", c.what,
                returned, p50, p99);
  }
  return 0;
}

}  // namespace
}  // namespace phalanx::master

int main(int argc, char** argv) { return phalanx::master::Run(argc, argv); }

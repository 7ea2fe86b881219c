// The master's gRPC server (see server.h).
#include "master/api/server.h"

#include "absl/strings/str_cat.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "kube/config.h"
#include "kube/json.h"

namespace phalanx::master {
namespace {

// Threads kept waiting for calls once they are idle.
constexpr int kIdleThreads = 16;

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(
    const std::optional<TlsConfig>& tls) {
  if (!tls) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options;
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  KUBE_ASSIGN_OR_RETURN(pair.cert_chain, kube::ReadFile(tls->cert));
  KUBE_ASSIGN_OR_RETURN(pair.private_key, kube::ReadFile(tls->key));
  options.pem_key_cert_pairs.push_back(std::move(pair));
  return grpc::SslServerCredentials(options);
}

}  // namespace

MasterServer::MasterServer(Store& store, JobManager& jobs)
    : auth_(store),
      auth_service_(store, auth_),
      experiments_(jobs, auth_),
      tasks_(jobs, auth_),
      jobs_(jobs, auth_),
      allocations_(jobs, auth_) {}

MasterServer::~MasterServer() { Shutdown(); }

absl::StatusOr<std::unique_ptr<MasterServer>> MasterServer::Start(
    const std::string& address, const std::optional<TlsConfig>& tls, Store& store, JobManager& jobs,
    MasterMetrics* metrics) {
  std::unique_ptr<MasterServer> s(new MasterServer(store, jobs));
  KUBE_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials, Credentials(tls));
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, credentials, &s->port_);
  // Handlers block (a submission waits for its commit), so each call in flight holds a thread; a
  // thread beyond MAX_POLLERS exits when its call ends. gRPC's default of 2 made every call past
  // the second start and end a thread of its own.
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, kIdleThreads);
  if (metrics != nullptr) {
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> creators;
    creators.push_back(metrics->InterceptorFactory());
    builder.experimental().SetInterceptorCreators(std::move(creators));
  }
  for (grpc::Service* service : std::initializer_list<grpc::Service*>{
           &s->auth_service_, &s->experiments_, &s->tasks_, &s->jobs_, &s->allocations_}) {
    builder.RegisterService(service);
  }
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr || s->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", address));
  }
  // grpc.health.v1 answers for the whole server ("") and, from here on, for each service by name.
  for (const char* name :
       {v1::AuthService::service_full_name(), v1::ExperimentService::service_full_name(),
        v1::TaskService::service_full_name(), v1::JobService::service_full_name(),
        v1::AllocationService::service_full_name()}) {
    s->server_->GetHealthCheckService()->SetServingStatus(name, true);
  }
  return s;
}

void MasterServer::Shutdown() {
  if (server_ != nullptr)
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
}

void MasterServer::Wait() {
  if (server_ != nullptr) server_->Wait();
}

}  // namespace phalanx::master

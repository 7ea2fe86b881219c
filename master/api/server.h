// The master's gRPC server: the phalanx.v1 services, grpc.health.v1.Health and server reflection,
// over TLS when master.yaml configures it.
#ifndef PHALANX_MASTER_API_SERVER_H_
#define PHALANX_MASTER_API_SERVER_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "master/config/config.h"
#include "master/jobs/job_manager.h"
#include "master/api/metrics.h"
#include "master/api/services.h"
#include "master/store/store.h"

namespace phalanx::master {

class MasterServer {
 public:
  // Listens on `address` ("0.0.0.0:8080"; port 0 picks a free one). `store`, `jobs` and
  // `metrics` (when given: every call is recorded there) must outlive the server.
  static absl::StatusOr<std::unique_ptr<MasterServer>> Start(const std::string& address,
                                                             const std::optional<TlsConfig>& tls,
                                                             Store& store, JobManager& jobs,
                                                             MasterMetrics* metrics = nullptr);
  ~MasterServer();

  int port() const { return port_; }
  void Shutdown();
  void Wait();

 private:
  MasterServer(Store& store, JobManager& jobs);

  Authenticator auth_;
  AuthServiceImpl auth_service_;
  ExperimentServiceImpl experiments_;
  TaskServiceImpl tasks_;
  JobServiceImpl jobs_;
  AllocationServiceImpl allocations_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_API_SERVER_H_

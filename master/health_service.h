// grpc.health.v1.Health for phalanx-master: SERVING for the whole server ("") and for each phalanx
// service while the server runs, NOT_SERVING once it shuts down; NOT_FOUND for other names.
// A synchronous service like the others: gRPC's built-in one would add a callback poller thread
// that every call of this server then pays for in thread hand-offs.
#ifndef PHALANX_MASTER_HEALTH_SERVICE_H_
#define PHALANX_MASTER_HEALTH_SERVICE_H_

#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace phalanx::master {

class HealthServiceImpl final : public grpc::health::v1::Health::Service {
 public:
  // `services`: the full names of the services the server offers.
  explicit HealthServiceImpl(std::vector<std::string> services);

  // NOT_SERVING from now on; open watches receive it and end.
  void Shutdown();

  grpc::Status Check(grpc::ServerContext* ctx, const grpc::health::v1::HealthCheckRequest* req,
                     grpc::health::v1::HealthCheckResponse* resp) override;
  // Sends the status now and again when it changes, until the caller cancels or the server stops.
  grpc::Status Watch(grpc::ServerContext* ctx, const grpc::health::v1::HealthCheckRequest* req,
                     grpc::ServerWriter<grpc::health::v1::HealthCheckResponse>* writer) override;

 private:
  bool Known(const std::string& service) const;
  // serving_, once it has changed or `wait_for_change` has passed.
  bool Serving(absl::Duration wait_for_change);

  const std::vector<std::string> services_;
  absl::Mutex mu_;
  bool serving_ ABSL_GUARDED_BY(mu_) = true;
};

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_HEALTH_SERVICE_H_

// grpc.health.v1.Health for phalanx-master (see health_service.h).
#include "master/health_service.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace phalanx::master {
namespace {

using grpc::health::v1::HealthCheckResponse;

HealthCheckResponse Response(bool serving) {
  HealthCheckResponse r;
  r.set_status(serving ? HealthCheckResponse::SERVING : HealthCheckResponse::NOT_SERVING);
  return r;
}

}  // namespace

HealthServiceImpl::HealthServiceImpl(std::vector<std::string> services)
    : services_(std::move(services)) {}

void HealthServiceImpl::Shutdown() {
  absl::MutexLock lock(&mu_);
  serving_ = false;
}

bool HealthServiceImpl::Known(const std::string& service) const {
  return service.empty() ||
         std::find(services_.begin(), services_.end(), service) != services_.end();
}

grpc::Status HealthServiceImpl::Check(grpc::ServerContext*,
                                      const grpc::health::v1::HealthCheckRequest* req,
                                      HealthCheckResponse* resp) {
  if (!Known(req->service())) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        absl::StrCat("service: unknown service \"", req->service(), "\""));
  }
  *resp = Response(Serving(absl::ZeroDuration()));
  return grpc::Status::OK;
}

grpc::Status HealthServiceImpl::Watch(grpc::ServerContext* ctx,
                                      const grpc::health::v1::HealthCheckRequest* req,
                                      grpc::ServerWriter<HealthCheckResponse>* writer) {
  if (!Known(req->service())) {
    HealthCheckResponse unknown;
    unknown.set_status(HealthCheckResponse::SERVICE_UNKNOWN);
    writer->Write(unknown);
    return grpc::Status::OK;
  }
  bool serving = Serving(absl::ZeroDuration());
  if (!writer->Write(Response(serving))) return grpc::Status::OK;
  // The status changes only once, to NOT_SERVING; a cancelled watch is noticed within 200 ms.
  while (serving && !ctx->IsCancelled()) serving = Serving(absl::Milliseconds(200));
  if (!serving) writer->Write(Response(false));
  return grpc::Status::OK;
}

bool HealthServiceImpl::Serving(absl::Duration wait_for_change) {
  absl::MutexLock lock(&mu_);
  auto stopped = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !serving_; };
  mu_.AwaitWithTimeout(absl::Condition(&stopped), wait_for_change);
  return serving_;
}

}  // namespace phalanx::master

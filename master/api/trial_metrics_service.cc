// Trial metrics over gRPC (see services.h): AllocationService.ReportMetrics and
// GetSearcherOperation from the trial process, ExperimentService.GetTrialMetrics for users.
#include <algorithm>
#include <optional>
#include <vector>

#include "master/api/proto_convert.h"
#include "master/api/services.h"

namespace phalanx::master {
namespace {

constexpr int kDefaultMetricsPage = 1000;
constexpr int kMaxMetricsPage = 10000;

absl::StatusOr<MetricGroup> GroupOf(v1::MetricGroup group) {
  std::optional<MetricGroup> g = FromProto(group);
  if (!g) {
    return absl::InvalidArgumentError(
        "group: required, METRIC_GROUP_TRAINING or METRIC_GROUP_VALIDATION");
  }
  return *g;
}

}  // namespace

grpc::Status AllocationServiceImpl::ReportMetrics(grpc::ServerContext* ctx,
                                                  const v1::ReportMetricsRequest* req,
                                                  v1::ReportMetricsResponse*) {
  if (absl::Status s = Authorize(*ctx, req->allocation_id()); !s.ok()) return ToGrpcStatus(s);
  absl::StatusOr<MetricGroup> group = GroupOf(req->group());
  if (!group.ok()) return ToGrpcStatus(group.status());
  std::vector<MetricReport> reports;
  reports.reserve(std::min<size_t>(req->reports_size(), kMaxMetricReportsPerCall + 1));
  for (const v1::MetricReport& r : req->reports()) reports.push_back(FromProto(r));
  return ToGrpcStatus(jobs_.ReportMetrics(req->allocation_id(), *group, reports));
}

grpc::Status AllocationServiceImpl::GetSearcherOperation(grpc::ServerContext* ctx,
                                                         const v1::GetSearcherOperationRequest* req,
                                                         v1::GetSearcherOperationResponse* resp) {
  if (absl::Status s = Authorize(*ctx, req->allocation_id()); !s.ok()) return ToGrpcStatus(s);
  absl::StatusOr<SearcherOp> op = jobs_.SearcherOperation(req->allocation_id());
  if (!op.ok()) return ToGrpcStatus(op.status());
  resp->set_length(op->length);
  resp->set_done(op->done);
  return grpc::Status::OK;
}

grpc::Status ExperimentServiceImpl::GetTrialMetrics(grpc::ServerContext* ctx,
                                                    const v1::GetTrialMetricsRequest* req,
                                                    v1::GetTrialMetricsResponse* resp) {
  absl::StatusOr<User> user = auth_.Authenticate(*ctx);
  if (!user.ok()) return ToGrpcStatus(user.status());
  absl::StatusOr<MetricGroup> group = GroupOf(req->group());
  if (!group.ok()) return ToGrpcStatus(group.status());
  if (req->limit() < 0 || req->limit() > kMaxMetricsPage) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("limit: 0 (", kDefaultMetricsPage, ") to ", kMaxMetricsPage,
                                     ", got ", req->limit()));
  }
  bool more = false;
  absl::StatusOr<std::vector<MetricReport>> reports =
      jobs_.GetTrialMetrics(req->trial_id(), *group, req->after_steps(),
                            req->limit() == 0 ? kDefaultMetricsPage : req->limit(), &more);
  if (!reports.ok()) return ToGrpcStatus(reports.status());
  for (const MetricReport& r : *reports) ToProto(r, resp->add_reports());
  resp->set_more(more);
  return grpc::Status::OK;
}

}  // namespace phalanx::master

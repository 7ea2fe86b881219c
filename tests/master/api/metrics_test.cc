// phalanx-master's metrics: gRPC calls recorded by the interceptor, manager state after Update,
// served over HTTP and linted by the real promtool.
#include "master/api/metrics.h"

#include "tests/master/testing/service_fixture.h"
#include "tests/testing/http_client.h"
#include "tests/testing/promtool.h"

namespace phalanx::master {
namespace {

using ::testing::HasSubstr;

TEST_F(ServiceTest, MetricsRecordCallsAndStateAndPassPromtool) {
  MasterMetrics metrics;
  absl::StatusOr<std::unique_ptr<MasterServer>> server =
      MasterServer::Start("127.0.0.1:0", std::nullopt, *store_, *jobs_, &metrics);
  ASSERT_TRUE(server.ok()) << server.status();
  auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", (*server)->port()),
                                     grpc::InsecureChannelCredentials());
  v1::CreateExperimentRequest req;
  req.set_config("resources: {slots_per_trial: 4}\n");
  req.set_activate(true);
  v1::CreateExperimentResponse resp;
  ASSERT_TRUE(
      v1::ExperimentService::NewStub(channel)->CreateExperiment(Ctx().get(), req, &resp).ok());
  grpc::ClientContext anonymous;
  EXPECT_EQ(v1::ExperimentService::NewStub(channel)
                ->CreateExperiment(&anonymous, req, &resp)
                .error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  Play(Get(resp.experiment().id()).trials(0).allocation_id(), core::PodPhase::kRunning,
       /*preempt=*/true);

  MetricsServer http([&] {
    metrics.Update(jobs_->Stats(), *jobs_->Queue(""));
    return metrics.Serialize();
  });
  ASSERT_TRUE(http.Start("127.0.0.1", 0).ok());
  phalanx::testing::HttpClient client(absl::StrCat("http://127.0.0.1:", http.port()));
  absl::StatusOr<phalanx::testing::HttpReply> r = client.Get("/metrics");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->status, 200);
  const std::string& text = r->body;
  EXPECT_THAT(text, HasSubstr("phalanx_master_grpc_requests_total{code=\"OK\",method=\"/phalanx.v1."
                              "ExperimentService/CreateExperiment\"} 1"));
  EXPECT_THAT(text, HasSubstr("phalanx_master_grpc_requests_total{code=\"UNAUTHENTICATED\",method="
                              "\"/phalanx.v1.ExperimentService/CreateExperiment\"} 1"));
  EXPECT_THAT(text, HasSubstr("phalanx_master_allocations{state=\"preempting\"} 1"));
  EXPECT_THAT(text, HasSubstr("phalanx_master_preemptions_total{outcome=\"requested\"} 1"));
  EXPECT_THAT(text, HasSubstr("phalanx_master_queue_jobs{pool=\"gpu\",state=\"scheduled\"} 1"));
  absl::Status lint = phalanx::testing::PromtoolCheck(text);
  EXPECT_TRUE(lint.ok()) << lint << "\n" << text;
  EXPECT_EQ(client.Get("/healthz")->status, 200);
}

}  // namespace
}  // namespace phalanx::master

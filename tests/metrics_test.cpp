// Scrapes the server's /metrics over HTTP, as Prometheus would, and checks
// that the counters moved with the requests sent.
#include <curl/curl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

#include "server_fixture.h"

namespace gemmd::testing {
namespace {

using ::testing::HasSubstr;

std::string HttpGet(const std::string& url, long* status) {
  std::string body;
  CURL* curl = curl_easy_init();
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 10L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, +[](char* p, size_t s, size_t n, void* out) {
    static_cast<std::string*>(out)->append(p, s * n);
    return s * n;
  });
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  const CURLcode rc = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, status);
  curl_easy_cleanup(curl);
  if (rc != CURLE_OK) *status = -1;
  return body;
}

class MetricsTest : public ServerFixture {
 protected:
  void SetUp() override {
    ServerConfig c = LoopbackConfig();
    c.metrics_listen = "127.0.0.1:0";
    StartServer(c);
  }
  std::string Scrape() {
    long status = 0;
    std::string body = HttpGet("http://127.0.0.1:" + std::to_string(server().metrics_port()) + "/metrics", &status);
    EXPECT_EQ(status, 200);
    return body;
  }
};

TEST_F(MetricsTest, CountersMoveWithRequests) {
  const std::string before = Scrape();
  EXPECT_THAT(before, HasSubstr("# TYPE gemm_requests_total counter"));
  EXPECT_THAT(before, HasSubstr("# TYPE gemm_request_duration_seconds histogram"));
  EXPECT_EQ(Sample(before, "gemm_step_available{step=\"0\"}"), 1);
  EXPECT_EQ(Sample(before, "gemm_step_available{step=\"7\"}"), 0);
  EXPECT_EQ(Sample(before, "gemm_device_healthy{device=\"cpu:0\"}"), 1);
  EXPECT_EQ(Sample(before, "gemm_queue_depth{device=\"cpu:0\"}"), 0);
  // Kept steps read 0, so the withdrawn-step alert has a series to watch.
  EXPECT_EQ(Sample(before, "gemm_step_withdrawn{device=\"cpu:0\",step=\"0\"}"), 0);

  gemm::v1::MultiplyRequest req = SeededRequest(64, 32, 16, 1, 2);
  req.set_repeats(2);
  gemm::v1::MultiplyResponse resp;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(client().Multiply(req, &resp).ok());
  req.mutable_shape()->set_m(0);
  EXPECT_FALSE(client().Multiply(req, &resp).ok());
  gemm::v1::MatrixInfo info;
  ASSERT_TRUE(client().Upload(10, 10, std::string(200, '\0'), "", &info).ok());

  const std::string after = Scrape();
  EXPECT_EQ(Sample(after, "gemm_requests_total{code=\"OK\",method=\"Multiply\",step=\"0\"}"), 3);
  EXPECT_EQ(Sample(after, "gemm_requests_total{code=\"INVALID_ARGUMENT\",method=\"Multiply\",step=\"0\"}"), 1);
  EXPECT_EQ(Sample(after, "gemm_requests_total{code=\"OK\",method=\"UploadMatrix\",step=\"\"}"), 1);
  EXPECT_EQ(Sample(after, "gemm_request_duration_seconds_count{method=\"Multiply\",step=\"0\"}"), 4);
  // 3 requests x 2 repeats x 2mnk.
  EXPECT_EQ(Sample(after, "gemm_floating_point_operations_total{device=\"cpu:0\",step=\"0\"}"),
            3 * 2 * 2.0 * 64 * 32 * 16);
  EXPECT_EQ(Sample(after, "gemm_kernel_runs_total{device=\"cpu:0\",step=\"0\"}"), 3);
  EXPECT_EQ(Sample(after, "gemm_kernel_duration_seconds_count{device=\"cpu:0\",step=\"0\"}"), 3);
  EXPECT_EQ(Sample(after, "gemm_verification_failures_total{device=\"cpu:0\",step=\"0\"}"), 0);
  EXPECT_EQ(Sample(after, "gemm_requests_in_flight"), 0);
  EXPECT_EQ(Sample(after, "gemm_resident_matrix_bytes"), MatrixStore::Charge(200, 0));
  EXPECT_EQ(Sample(after, "gemm_resident_matrices"), 1);
  EXPECT_EQ(Sample(after, "gemm_matrix_quota_bytes"), static_cast<double>(config().matrix_quota_bytes));
  EXPECT_THAT(after, HasSubstr("gemm_build_info{engine=\"cpu\",version=\""));
}

// A client must not be able to mint label values: 500 requests with
// made-up steps once made 13,000 series and a 1 MB /metrics.
TEST_F(MetricsTest, InvalidStepsShareOneBoundedLabel) {
  gemm::v1::MultiplyResponse resp;
  for (uint32_t step = 1000; step < 1040; ++step) {
    gemm::v1::MultiplyRequest req = SeededRequest(8, 8, 8, 1, 2);
    req.set_step(step);
    EXPECT_EQ(client().Multiply(req, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
  const std::string text = Scrape();
  EXPECT_EQ(Sample(text, "gemm_requests_total{code=\"INVALID_ARGUMENT\",method=\"Multiply\",step=\"invalid\"}"), 40);
  EXPECT_EQ(Sample(text, "gemm_request_duration_seconds_count{method=\"Multiply\",step=\"invalid\"}"), 40);
  // Every numeric step label is a step of the catalogue.
  std::regex step_label("step=\"([0-9]+)\"");
  int labels = 0;
  for (std::sregex_iterator it(text.begin(), text.end(), step_label), end; it != end; ++it, ++labels) {
    EXPECT_LE(std::stoi((*it)[1]), 10) << (*it)[0];
  }
  EXPECT_GT(labels, 0);
}

TEST_F(MetricsTest, MetricNamesFollowPrometheusConventions) {
  const std::string text = Scrape();
  std::regex type_line("# TYPE (\\S+) (\\S+)");
  int families = 0;
  for (std::sregex_iterator it(text.begin(), text.end(), type_line), end; it != end; ++it) {
    const std::string name = (*it)[1], type = (*it)[2];
    if (name.rfind("exposer_", 0) == 0) continue;  // prometheus-cpp's own
    ++families;
    EXPECT_THAT(name, ::testing::StartsWith("gemm_"));
    if (type == "counter") EXPECT_THAT(name, ::testing::EndsWith("_total"));
    // A histogram is in a base unit; requests per launch have none.
    if (type == "histogram") {
      EXPECT_THAT(name, ::testing::AnyOf(::testing::EndsWith("_seconds"), ::testing::EndsWith("_bytes"),
                                         ::testing::Eq("gemm_batch_size")));
    }
  }
  EXPECT_GE(families, 12);
}

}  // namespace
}  // namespace gemmd::testing

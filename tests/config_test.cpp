#include "config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

namespace gemmd {
namespace {

ParsedConfig Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "gemmd");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return ParseServerConfig(static_cast<int>(argv.size()), argv.data());
}

TEST(Config, DefaultsAreServiceable) {
  auto p = Parse({});
  ASSERT_TRUE(p.config);
  EXPECT_EQ(p.config->listen, "0.0.0.0:50051");
  EXPECT_EQ(p.config->max_message_bytes, 128u << 20);  // an inline 4096³ request and its D
  EXPECT_EQ(p.config->engine, "auto");
}

TEST(Config, FlagsTakeSizesWithUnits) {
  auto p = Parse({"--listen", "127.0.0.1:7000", "--max-message-bytes", "16MB", "--matrix-quota-bytes", "2GB",
                  "--queue-capacity", "5", "--workers", "3", "--engine", "cpu"});
  ASSERT_TRUE(p.config);
  EXPECT_EQ(p.config->listen, "127.0.0.1:7000");
  EXPECT_EQ(p.config->max_message_bytes, 16u << 20);
  EXPECT_EQ(p.config->matrix_quota_bytes, 2ull << 30);
  EXPECT_EQ(p.config->queue_capacity, 5u);
  EXPECT_EQ(p.config->workers_per_device, 3u);
}

TEST(Config, EnvironmentFillsWhatFlagsLeaveOut) {
  setenv("GEMMD_QUEUE_CAPACITY", "17", 1);
  setenv("GEMMD_LISTEN", "127.0.0.1:1234", 1);
  auto p = Parse({"--listen", "127.0.0.1:999"});
  unsetenv("GEMMD_QUEUE_CAPACITY");
  unsetenv("GEMMD_LISTEN");
  ASSERT_TRUE(p.config);
  EXPECT_EQ(p.config->queue_capacity, 17u);
  EXPECT_EQ(p.config->listen, "127.0.0.1:999");  // a flag beats the environment
}

// Parses with stderr captured; the config (if any) and what was printed.
std::pair<ParsedConfig, std::string> ParseCapturingStderr(std::vector<std::string> args) {
  ::testing::internal::CaptureStderr();
  ParsedConfig p = Parse(std::move(args));
  return {std::move(p), ::testing::internal::GetCapturedStderr()};
}

TEST(Config, TlsFlagsMustComeTogether) {
  auto [p, err] = ParseCapturingStderr({"--tls-cert", "server.pem"});
  EXPECT_FALSE(p.config);
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(err.find("--tls-cert and --tls-key go together"), std::string::npos) << err;

  auto [q, err2] = ParseCapturingStderr({"--tls-client-ca", "ca.pem"});
  EXPECT_FALSE(q.config);
  EXPECT_NE(err2.find("--tls-client-ca needs --tls-cert and --tls-key"), std::string::npos) << err2;
}

TEST(Config, TokenComesFromAFileOrTheEnvironmentNeverAFlag) {
  auto [missing, err] = ParseCapturingStderr({"--auth-token-file", "/nonexistent/token"});
  EXPECT_FALSE(missing.config);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(err.find("cannot read the token file /nonexistent/token"), std::string::npos) << err;

  setenv("GEMMD_AUTH_TOKEN", "from-env", 1);
  auto p = Parse({});
  unsetenv("GEMMD_AUTH_TOKEN");
  ASSERT_TRUE(p.config);
  EXPECT_EQ(p.config->auth_token, "from-env");
  EXPECT_FALSE(Parse({"--auth-token", "x"}).config);  // no such flag: it would show in `ps`
}

TEST(Config, BadValuesStopWithAUsageError) {
  EXPECT_FALSE(Parse({"--engine", "tpu"}).config);
  EXPECT_NE(Parse({"--engine", "tpu"}).exit_code, 0);
  EXPECT_FALSE(Parse({"--workers", "0"}).config);
  EXPECT_FALSE(Parse({"--max-message-bytes", "1"}).config);
  EXPECT_FALSE(Parse({"--no-such-flag"}).config);
}

// The engines pass dimensions to APIs that take 32-bit ints.
TEST(Config, MaxDimStopsAtTheLargest32BitInt) {
  auto p = Parse({"--max-dim", "2147483647"});
  ASSERT_TRUE(p.config);
  EXPECT_EQ(p.config->max_dim, 2147483647);
  EXPECT_FALSE(Parse({"--max-dim", "2147483648"}).config);
}

// The cuBLAS plan is on unless turned off, by flag or environment; a value
// that is not a boolean is a usage error.
TEST(Config, CublasPlanIsOnUnlessTurnedOff) {
  auto on = Parse({});
  ASSERT_TRUE(on.config);
  EXPECT_TRUE(on.config->plan_cublas);
  auto off = Parse({"--plan-cublas", "false"});
  ASSERT_TRUE(off.config);
  EXPECT_FALSE(off.config->plan_cublas);
  setenv("GEMMD_PLAN_CUBLAS", "0", 1);
  auto env_off = Parse({});
  unsetenv("GEMMD_PLAN_CUBLAS");
  ASSERT_TRUE(env_off.config);
  EXPECT_FALSE(env_off.config->plan_cublas);
  auto [bad, printed] = ParseCapturingStderr({"--plan-cublas", "sometimes"});
  EXPECT_FALSE(bad.config);
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(printed.find("--plan-cublas"), std::string::npos) << printed;
}

TEST(Config, BatchingIsTheEnginesChoiceUnlessSet) {
  auto p = Parse({});
  ASSERT_TRUE(p.config);
  EXPECT_EQ(p.config->batch_max, 0u);
  EXPECT_EQ(BatchMaxFor(*p.config, "cuda"), 32u);
  EXPECT_EQ(BatchMaxFor(*p.config, "cpu"), 1u);
  p = Parse({"--batch-max", "1"});
  ASSERT_TRUE(p.config);
  EXPECT_EQ(BatchMaxFor(*p.config, "cuda"), 1u);
  p = Parse({"--batch-max", "8"});
  ASSERT_TRUE(p.config);
  EXPECT_EQ(BatchMaxFor(*p.config, "cpu"), 8u);
  EXPECT_FALSE(Parse({"--batch-max", "1025"}).config);
}

TEST(Config, ReplyThreadsDefaultToTwoAndMayBeNone) {
  auto p = Parse({});
  ASSERT_TRUE(p.config);
  EXPECT_EQ(p.config->reply_threads, 2u);
  p = Parse({"--reply-threads", "0"});
  ASSERT_TRUE(p.config);
  EXPECT_EQ(p.config->reply_threads, 0u);
  EXPECT_FALSE(Parse({"--reply-threads", "65"}).config);
  EXPECT_FALSE(Parse({"--reply-threads", "-1"}).config);
}

TEST(Config, MultiplyThreadsDefaultToTheServersChoice) {
  auto p = Parse({});
  ASSERT_TRUE(p.config);
  EXPECT_EQ(p.config->multiply_threads, 0u);  // a quarter of the cores, 1 to 4
  p = Parse({"--multiply-threads", "6"});
  ASSERT_TRUE(p.config);
  EXPECT_EQ(p.config->multiply_threads, 6u);
  EXPECT_FALSE(Parse({"--multiply-threads", "65"}).config);
  EXPECT_FALSE(Parse({"--multiply-threads", "-1"}).config);
}

TEST(Config, DeviceMemoryIsReservedUnlessTurnedOff) {
  auto p = Parse({});
  ASSERT_TRUE(p.config);
  EXPECT_EQ(p.config->reserve_device_mib, 1024u);
  p = Parse({"--reserve-device-mib", "0"});
  ASSERT_TRUE(p.config);
  EXPECT_EQ(p.config->reserve_device_mib, 0u);
  EXPECT_FALSE(Parse({"--reserve-device-mib", "-5"}).config);
  EXPECT_FALSE(Parse({"--reserve-device-mib", "2000000"}).config);
}

TEST(Config, TheDeviceCacheIsAutoASizeOrOff) {
  auto p = Parse({});
  ASSERT_TRUE(p.config);
  EXPECT_FALSE(p.config->device_cache_bytes.has_value()) << "auto: half the free device memory";
  p = Parse({"--device-cache-bytes", "0"});
  ASSERT_TRUE(p.config);
  EXPECT_EQ(p.config->device_cache_bytes, 0u);
  p = Parse({"--device-cache-bytes", "40G"});
  ASSERT_TRUE(p.config);
  EXPECT_EQ(p.config->device_cache_bytes, 40ull << 30);
  p = Parse({"--device-cache-bytes", "auto"});
  ASSERT_TRUE(p.config);
  EXPECT_FALSE(p.config->device_cache_bytes.has_value());
  EXPECT_FALSE(Parse({"--device-cache-bytes", "lots"}).config);
  EXPECT_FALSE(Parse({"--device-cache-bytes", "-1"}).config);
}

TEST(Config, StreamIdleLimitAndMatrixCountAreSettable) {
  auto p = Parse({"--stream-idle-seconds", "2.5", "--max-matrices", "7"});
  ASSERT_TRUE(p.config);
  EXPECT_DOUBLE_EQ(p.config->stream_idle_seconds, 2.5);
  EXPECT_EQ(p.config->max_matrices, 7u);
  EXPECT_FALSE(Parse({"--stream-idle-seconds", "0"}).config);
  EXPECT_FALSE(Parse({"--max-matrices", "0"}).config);
}

}  // namespace
}  // namespace gemmd

#include "config.h"

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <climits>
#include <filesystem>
#include <cstdlib>

#include "api/bearer_auth.h"
#include "version.h"

namespace gemmd {

ParsedConfig ParseServerConfig(int argc, char** argv) {
  ServerConfig c;
  CLI::App app{"gemmd: a GEMM service. D = A·Bᵀ in fp16 over gRPC, on GPUs or the CPU.", "gemmd"};
  app.set_version_flag("--version", std::string(kGemmdVersion));
  app.get_formatter()->column_width(40);

  const auto size = CLI::AsSizeValue(false);  // 64MiB, 2G, 4096...
  app.add_option("--listen", c.listen, "gRPC listen address (host:port; port 0 picks a free one)")
      ->envname("GEMMD_LISTEN")->capture_default_str();
  app.add_option("--metrics-listen", c.metrics_listen,
                 "Prometheus /metrics address; empty disables the endpoint")
      ->envname("GEMMD_METRICS_LISTEN")->capture_default_str();
  app.add_option("--max-message-bytes", c.max_message_bytes, "largest gRPC message, in and out")
      ->envname("GEMMD_MAX_MESSAGE_BYTES")->transform(size)->capture_default_str();
  app.add_option("--workers", c.workers_per_device, "worker threads per device")
      ->envname("GEMMD_WORKERS")->check(CLI::Range(1, 64))->capture_default_str();
  app.add_option("--queue-capacity", c.queue_capacity,
                 "requests that may wait for a device; more get RESOURCE_EXHAUSTED")
      ->envname("GEMMD_QUEUE_CAPACITY")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  app.add_option("--batch-max", c.batch_max,
                 "up to this many small step-0 requests of one shape and form (m*n*k <= 512^3) waiting for a "
                 "device run as one batched cuBLAS launch, each still verified and answered on its own; 1 turns batching off, 0 "
                 "lets the engine choose (32 on GPUs, off on the CPU engine)")
      ->envname("GEMMD_BATCH_MAX")->check(CLI::Range(0, 1024))->capture_default_str();
  app.add_option("--batch-window-us", c.batch_window_us,
                 "with batching, how long a device worker holding a batchable request waits for more of its shape "
                 "(adds up to this much latency); 0 takes only what is already queued")
      ->envname("GEMMD_BATCH_WINDOW_US")->check(CLI::Range(0, 1000000))->capture_default_str();
  app.add_option("--reply-threads", c.reply_threads,
                 "threads per device that send replies while its worker goes on: a batch's, and any request's "
                 "while others wait; 0 leaves them all to the workers")
      ->envname("GEMMD_REPLY_THREADS")->check(CLI::Range(0, 64))->capture_default_str();
  app.add_option("--multiply-threads", c.multiply_threads,
                 "threads taking Multiply calls from gRPC, a completion queue each; 0 = a quarter of the cores, "
                 "1 to 4")
      ->envname("GEMMD_MULTIPLY_THREADS")->check(CLI::Range(0, 64))->capture_default_str();
  app.add_option("--max-dim", c.max_dim, "largest m, n or k of one request")
      ->envname("GEMMD_MAX_DIM")->check(CLI::Range(int64_t{1}, int64_t{INT32_MAX}))->capture_default_str();
  app.add_option("--max-request-bytes", c.max_request_bytes, "largest A+B+D (fp16 bytes) of one request")
      ->envname("GEMMD_MAX_REQUEST_BYTES")->transform(size)->capture_default_str();
  app.add_option("--matrix-quota-bytes", c.matrix_quota_bytes, "memory for all stored matrices")
      ->envname("GEMMD_MATRIX_QUOTA_BYTES")->transform(size)->capture_default_str();
  app.add_option("--max-matrices", c.max_matrices, "stored matrices at a time (each also holds quota)")
      ->envname("GEMMD_MAX_MATRICES")->check(CLI::Range(uint64_t{1}, uint64_t{1} << 30))->capture_default_str();
  app.add_option("--reuse-host-bytes", c.reuse_host_bytes,
                 "memory of deleted matrices kept for the next matrix of the same size, so that it is not faulted in "
                 "and zeroed again (outside the quota; 0 frees at once)")
      ->envname("GEMMD_REUSE_HOST_BYTES")->transform(size)->capture_default_str();
  app.add_option("--matrix-dir", c.matrix_dir,
                 "keep stored matrices on disk here too, so handles survive a restart, a crash or kill -9 (an upload "
                 "is acknowledged once its file is fsynced); empty keeps them in memory only")
      ->envname("GEMMD_MATRIX_DIR");
  app.add_option("--identity-quota-bytes", c.identity_quota_bytes,
                 "stored matrices one identity may hold, counting the whole size of its uploads in progress (0: "
                 "the whole --matrix-quota-bytes), so that one tenant cannot take every other's quota")
      ->envname("GEMMD_IDENTITY_QUOTA_BYTES")->transform(size)->capture_default_str();
  app.add_option("--max-uploads-per-identity", c.max_uploads_per_identity,
                 "uploads in progress at a time per identity (each holds one of --max-matrices until it ends)")
      ->envname("GEMMD_MAX_UPLOADS_PER_IDENTITY")->check(CLI::Range(1u, 100000u))->capture_default_str();
  app.add_option("--max-repeats", c.max_repeats, "largest repeat count of one request")
      ->envname("GEMMD_MAX_REPEATS")->check(CLI::Range(1, 100000))->capture_default_str();
  app.add_option("--shutdown-grace-seconds", c.shutdown_grace_seconds,
                 "on SIGTERM, SIGINT, SIGHUP or SIGQUIT, how long in-flight requests may take to finish (a second "
                 "signal ends it at once)")
      ->envname("GEMMD_SHUTDOWN_GRACE_SECONDS")->check(CLI::Range(0.0, 3600.0))->capture_default_str();
  app.add_option("--drain-delay-seconds", c.drain_delay_seconds,
                 "on SIGTERM/SIGINT, report NOT_SERVING and keep serving this long (within the grace) before "
                 "refusing new calls, so that clients watching health move to another replica first")
      ->envname("GEMMD_DRAIN_DELAY_SECONDS")->check(CLI::Range(0.0, 600.0))->capture_default_str();
  app.add_option("--stream-idle-seconds", c.stream_idle_seconds,
                 "cancel an upload or download that moves no data for this long (its quota comes back)")
      ->envname("GEMMD_STREAM_IDLE_SECONDS")->check(CLI::Range(0.1, 86400.0))->capture_default_str();
  app.add_option("--listener-probe-seconds", c.listener_probe_seconds,
                 "probe the gRPC listener over loopback this often; after three probes in a row get no answer (gRPC "
                 "stops accepting for good after a descriptor flood), drain and exit with status 4 for the "
                 "supervisor to restart; 0 turns it off")
      ->envname("GEMMD_LISTENER_PROBE_SECONDS")->check(CLI::Range(0.0, 3600.0))->capture_default_str();
  app.add_option("--idle-trim-seconds", c.idle_trim_seconds,
                 "after this long without requests, give freed heap memory back to the system (after a burst); "
                 "0 never does")
      ->envname("GEMMD_IDLE_TRIM_SECONDS")->check(CLI::Range(0.0, 86400.0))->capture_default_str();
  app.add_option("--selftest-helper", c.selftest_helper,
                 "start-up self-test of the ladder's steps in this helper process, so that a kernel that faults "
                 "or hangs withdraws only its step: auto (gemmd-selftest beside gemmd), a path, or none (in process)")
      ->envname("GEMMD_SELFTEST_HELPER")->capture_default_str();
  app.add_option("--selftest-step-timeout-seconds", c.selftest_step_timeout_seconds,
                 "a step whose self-test gives no verdict in this long is withdrawn as hung")
      ->envname("GEMMD_SELFTEST_STEP_TIMEOUT_SECONDS")->check(CLI::Range(1.0, 3600.0))->capture_default_str();
  app.add_option("--engine", c.engine, "where GEMMs run: auto (GPUs if any, else CPU), cpu, cuda")
      ->envname("GEMMD_ENGINE")->check(CLI::IsMember({"auto", "cpu", "cuda"}))->capture_default_str();
  app.add_option("--gpu-telemetry-period-ms", c.gpu_telemetry_period_ms,
                 "read each GPU's power, clocks, temperature and throttle reasons (NVML) this often; 0 turns it off")
      ->envname("GEMMD_GPU_TELEMETRY_PERIOD_MS")->check(CLI::Range(0u, 3600000u))->capture_default_str();
  app.add_option("--eager-kernel-loading", c.eager_kernel_loading,
                 "load the ladder's GPU kernels at start-up, not at first use (sets CUDA_MODULE_LOADING=EAGER "
                 "unless it is set); cuBLAS loads its own at first use whatever this says: see --plan-cublas")
      ->envname("GEMMD_EAGER_KERNEL_LOADING")->capture_default_str();
  app.add_option("--plan-cublas", c.plan_cublas,
                 "at start-up, ask cuBLAS's heuristic for its kernel at every shape of a grid (1 to 8192 in m, n "
                 "and k) and load each; step 0 then runs the pick of the grid shape at or above the request's, so "
                 "no request pays a heuristic or a kernel load (about 1.2 s of start-up per GPU); the same for "
                 "bf16, fp32, fp8 and the other layouts, C and batches (about 3 s more)")
      ->envname("GEMMD_PLAN_CUBLAS")->capture_default_str();
  app.add_option("--keep-warm-ms", c.keep_warm_ms,
                 "keep GPU clocks up between requests: a tiny kernel after this many idle milliseconds, and every "
                 "period while idle (costs watts; the first request after a gap is then as fast as a steady one); "
                 "0 turns it off")
      ->envname("GEMMD_KEEP_WARM_MS")->check(CLI::Range(0u, 60000u))->capture_default_str();
  app.add_option("--reserve-device-mib", c.reserve_device_mib,
                 "device memory per GPU mapped and touched at start-up and kept for requests' buffers, so that a "
                 "request does not grow the memory pool on its way (a verified 8192^3 request needs 512 MiB); 0 "
                 "maps memory as requests need it")
      ->envname("GEMMD_RESERVE_DEVICE_MIB")->check(CLI::Range(0u, 1u << 20))->capture_default_str();
  std::string device_cache = "auto";
  app.add_option("--device-cache-bytes", device_cache,
                 "stored matrices kept in each GPU's memory after a Multiply reads them, so that the next one by "
                 "the same handle skips the copy (least recently used out first); auto: half the device memory "
                 "free after start-up; 0 turns it off")
      ->envname("GEMMD_DEVICE_CACHE_BYTES")->capture_default_str();
  app.add_option("--port-file", c.port_file, "write the bound gRPC port to this file once serving")
      ->envname("GEMMD_PORT_FILE");
  app.add_option("--log-level", c.log_level, "trace, debug, info, warn, error")
      ->envname("GEMMD_LOG_LEVEL")->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
      ->capture_default_str();

  app.add_option("--tls-cert", c.tls_cert, "PEM certificate chain: serve gRPC over TLS")->envname("GEMMD_TLS_CERT");
  app.add_option("--tls-key", c.tls_key, "PEM private key of --tls-cert")->envname("GEMMD_TLS_KEY");
  app.add_option("--tls-client-ca", c.tls_client_ca, "PEM CA: require client certificates it signed (mTLS)")
      ->envname("GEMMD_TLS_CLIENT_CA");
  app.add_option("--auth-token-file", c.auth_token_file,
                 "require 'authorization: Bearer <token>' on gemm.v1 calls; one 'TOKEN [NAME]' a line, each "
                 "NAME an identity owning its matrices (or set GEMMD_AUTH_TOKEN: one token)")
      ->envname("GEMMD_AUTH_TOKEN_FILE");
  app.add_option("--operator", c.operators,
                 "an identity (token name or mTLS subject, e.g. CN=ops) that sees and may delete every "
                 "stored matrix; repeatable");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return {std::nullopt, app.exit(e)};
  }
  if (c.max_message_bytes < 4096 || c.max_message_bytes > (2ull << 30) - 1) {
    std::fprintf(stderr, "--max-message-bytes must be between 4KiB and 2GiB-1 (protobuf's cap)\n");
    return {std::nullopt, 2};
  }
  if (device_cache != "auto") {
    std::string bytes = device_cache;
    bool parsed = false;
    try {
      parsed = size(bytes).empty();
    } catch (const std::exception&) {  // CLI11's size transform throws on an unknown unit
    }
    if (!parsed || bytes.empty() || bytes.find_first_not_of("0123456789") != std::string::npos) {
      std::fprintf(stderr, "--device-cache-bytes takes auto or a size (0, 512MiB, 40G), not '%s'\n",
                   device_cache.c_str());
      return {std::nullopt, 2};
    }
    c.device_cache_bytes = std::stoull(bytes);
  }
  if (c.tls_cert.empty() != c.tls_key.empty()) {
    std::fprintf(stderr, "--tls-cert and --tls-key go together\n");
    return {std::nullopt, 2};
  }
  if (!c.tls_client_ca.empty() && c.tls_cert.empty()) {
    std::fprintf(stderr, "--tls-client-ca needs --tls-cert and --tls-key (mutual TLS is TLS first)\n");
    return {std::nullopt, 2};
  }
  if (const char* token = std::getenv("GEMMD_AUTH_TOKEN"); token != nullptr) c.auth_token = token;
  if (!c.auth_token_file.empty()) {
    if (auto st = ReadTokenFile(c.auth_token_file, &c.auth_tokens); !st.ok()) {
      std::fprintf(stderr, "%s\n", std::string(st.message()).c_str());
      return {std::nullopt, 2};
    }
    c.auth_token.clear();  // the file, when given, is the whole list
  }
  return {c, 0};
}

std::string SelfTestHelperPath(const std::string& flag) {
  if (flag == "none") return "";
  if (flag != "auto") return flag;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const auto helper = self.parent_path() / "gemmd-selftest";
  return access(helper.c_str(), X_OK) == 0 ? helper.string() : "";
}

uint32_t BatchMaxFor(const ServerConfig& config, std::string_view engine_name) {
  if (config.batch_max != 0) return config.batch_max;
  return engine_name == "cuda" ? 32 : 1;
}

}  // namespace gemmd

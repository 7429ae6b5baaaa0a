// Everything an operator can set, as flags or GEMMD_* environment variables.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

#include "api/bearer_auth.h"

namespace gemmd {

struct ServerConfig {
  std::string listen = "0.0.0.0:50051";          // gRPC address; port 0 picks one
  std::string metrics_listen = "127.0.0.1:9464";  // Prometheus /metrics; "" disables
  uint64_t max_message_bytes = 128ull << 20;      // gRPC cap, both directions: an inline 4096³ A and B
  uint32_t workers_per_device = 1;
  uint32_t queue_capacity = 64;                   // requests waiting across devices
  // Batching: up to this many small step-0 requests of one shape share a
  // launch (1: off; 0: the engine's choice, BatchMaxFor), a worker waiting
  // this long for more to arrive.
  uint32_t batch_max = 0;
  uint32_t batch_window_us = 0;
  // Threads per device that send replies beside its workers (0: the
  // workers send them all; api/reply_senders.h).
  uint32_t reply_threads = 2;
  // Threads that take Multiply calls off gRPC's completion queues, one queue
  // each (api/unary_queues.h); 0: a quarter of the cores, 1 to 4.
  uint32_t multiply_threads = 0;
  int64_t max_dim = 65536;                        // largest m, n or k; at most 2^31-1
  uint64_t max_request_bytes = 4ull << 30;        // A + B + D of one Multiply
  uint64_t matrix_quota_bytes = 8ull << 30;       // all stored matrices together
  uint64_t max_matrices = 10000;                  // stored matrices at a time
  uint64_t identity_quota_bytes = 0;              // one identity's matrices; 0 = the whole quota
  uint32_t max_uploads_per_identity = 16;         // uploads in progress at a time, per identity
  std::string matrix_dir;                         // stored matrices also on disk here; "" = memory only
  uint64_t reuse_host_bytes = 512ull << 20;       // deleted matrices' memory kept for reuse
  uint32_t max_repeats = 100;
  double shutdown_grace_seconds = 30;             // in-flight work gets this long
  double drain_delay_seconds = 0;                 // NOT_SERVING, still serving, before the listener closes
  double stream_idle_seconds = 60;                // a stalled upload/download is cancelled after this
  // The listener is probed this often, and declared dead after three
  // silent probes (process/listener_probe.h); 0 = off.
  double listener_probe_seconds = 2;
  // Freed heap memory goes back to the system after this long without
  // requests (process/memory_trimmer.h); 0 = never.
  double idle_trim_seconds = 5;
  std::string engine = "auto";                    // auto | cpu | cuda
  // The ladder's start-up self-test: in a helper process ("auto": the
  // gemmd-selftest beside gemmd), or "none" for in this process.
  std::string selftest_helper = "auto";
  double selftest_step_timeout_seconds = 30;      // no verdict within this: the step hung
  // NVML telemetry (power, clocks, throttling) read this often; 0 = off.
  uint32_t gpu_telemetry_period_ms = 1000;
  // Load every kernel of the CUDA modules when the context is created
  // (CUDA_MODULE_LOADING=EAGER), so no request pays a first-use load.
  bool eager_kernel_loading = true;
  // Load, at start-up, the kernel cuBLAS's heuristic picks for each shape
  // of a grid, and run step 0 with the grid's pick: no first-use cost.
  bool plan_cublas = true;
  // After this long without a request, a tiny kernel keeps each GPU's clocks
  // up (and again every period while idle); 0 = off.
  uint32_t keep_warm_ms = 0;
  // Device memory (MiB per GPU) mapped and touched at start-up and kept in
  // its pool, so that a request's buffers do not grow the pool.
  uint32_t reserve_device_mib = 1024;
  // Stored matrices' copies kept on each GPU (engine/device_matrix_cache.h);
  // nullopt: half of the memory free once start-up is done.
  std::optional<uint64_t> device_cache_bytes;
  std::string port_file;                          // write the bound gRPC port here
  std::string log_level = "info";
  // TLS for gRPC: PEM files. With tls_client_ca, clients must present a
  // certificate it signed (mutual TLS).
  std::string tls_cert, tls_key, tls_client_ca;
  // Bearer token every gemm.v1 call must carry: from a file (a mounted
  // Secret) or GEMMD_AUTH_TOKEN; never a flag, so it stays out of `ps`.
  std::string auth_token_file;
  std::string auth_token;                // GEMMD_AUTH_TOKEN: identity "default"
  std::vector<NamedToken> auth_tokens;   // from auth_token_file, each with its identity
  // Identities (token names, or mTLS subjects such as "CN=ops") that see
  // and may delete every stored matrix.
  std::vector<std::string> operators;
};

// Parses flags (GEMMD_* env vars fill what flags leave out). Returns the
// config, or the exit code when the process should stop (--help, bad flag).
struct ParsedConfig {
  std::optional<ServerConfig> config;
  int exit_code = 0;
};
ParsedConfig ParseServerConfig(int argc, char** argv);

// --selftest-helper resolved: "auto" is gemmd-selftest beside this
// executable when it is there, "none" (or a missing "auto") is "": the
// self-test runs in process.
std::string SelfTestHelperPath(const std::string& flag);

// --batch-max 0 (the default): 32 on the CUDA engine, where one batched
// launch served small requests x1.04-1.98 faster than one launch each
// (H100, four runs, docs/service-path.md); 1 (off) on the CPU engine, which runs a batch job
// by job and so only loses the other workers' parallelism.
uint32_t BatchMaxFor(const ServerConfig& config, std::string_view engine_name);

}  // namespace gemmd

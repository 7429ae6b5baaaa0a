// gemmd: the GEMM server. Blocks the stop signals in every thread and waits
// for them here, so shutdown runs on an ordinary thread, not in a handler.
//
// Signals: SIGTERM, SIGINT, SIGHUP (a closed terminal) and SIGQUIT drain
// (NOT_SERVING, in-flight work finishes within the grace), and a second one
// of them ends the grace at once. SIGPIPE, SIGUSR1 and SIGUSR2 are
// ignored: a log pipe that closes must not take the server down.
// Exit status: 0 after a drain, 1 when it cannot start, 3 when every
// device was lost, 4 when the gRPC listener stopped accepting.
#include <malloc.h>

#include <absl/debugging/failure_signal_handler.h>
#include <absl/debugging/symbolize.h>
#include <absl/synchronization/mutex.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <csignal>
#include <fstream>

#include <sys/resource.h>
#include <unistd.h>

#include <thread>

#include <cstdlib>

#include "config.h"
#include "engine/engine_factory.h"
#include "gemm_server.h"

int main(int argc, char** argv) {
  // Big buffers (inline operands, D, gRPC's message buffers) come and go
  // with every large request. glibc maps each one afresh and unmaps it on
  // free, so every request paid its page faults again (a 32 MB D cost 14 ms
  // to allocate). Served from the heap and kept there, they are reused warm
  // (docs/service-path.md).
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, INT32_MAX);
  // Debian builds abseil with its debug checks, so every absl::Mutex lock in
  // gRPC also updates a process-wide lock-order graph under one spin lock
  // (docs/service-path.md). Off before any lock is taken.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // gRPC's default poller, epoll1, lets one thread of the process poll at a
  // time and hands the role to a waiting thread: the callback API's idle
  // threads then stand between Multiply's queue threads and their calls
  // (api/unary_queues.h). With poll, each queue's thread polls for itself.
  // Before gRPC starts; an operator's own setting wins.
  setenv("GRPC_POLL_STRATEGY", "poll", 0);
  // A crash prints its stack to stderr (the log) before the process dies.
  absl::InitializeSymbolizer(argv[0]);
  absl::InstallFailureSignalHandler({});
  auto parsed = gemmd::ParseServerConfig(argc, argv);
  if (!parsed.config) return parsed.exit_code;
  const gemmd::ServerConfig& config = *parsed.config;
  spdlog::set_default_logger(spdlog::stderr_color_mt("gemmd"));
  spdlog::set_level(spdlog::level::from_str(config.log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ %v");

  for (int ignored : {SIGPIPE, SIGUSR1, SIGUSR2}) std::signal(ignored, SIG_IGN);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  for (int stop : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&stop_signals, stop);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);  // inherited by every thread below

  // Every connection holds a descriptor: the soft limit (often 1,024) would
  // let a few hundred idle connections stop the listener for good
  // (process/listener_probe.h), while the hard limit is usually far higher.
  if (rlimit files{}; getrlimit(RLIMIT_NOFILE, &files) == 0) {
    if (files.rlim_cur < files.rlim_max) {
      const rlim_t soft = files.rlim_cur;
      files.rlim_cur = files.rlim_max;
      if (setrlimit(RLIMIT_NOFILE, &files) == 0) {
        spdlog::info("open-file limit raised from {} to {}", soft, files.rlim_max);
      }
    }
  }

  // Before any CUDA call: the module-loading mode is read once, when the
  // first context is created. An operator's own setting wins.
  if (config.eager_kernel_loading) setenv("CUDA_MODULE_LOADING", "EAGER", /*overwrite=*/0);
  gemmd::EngineOptions engine_options;
  engine_options.workers_per_device = config.workers_per_device;
  engine_options.selftest.helper_path = gemmd::SelfTestHelperPath(config.selftest_helper);
  engine_options.selftest.step_timeout_seconds = config.selftest_step_timeout_seconds;
  engine_options.keep_warm_ms = config.keep_warm_ms;
  engine_options.reserved_pool_bytes = static_cast<uint64_t>(config.reserve_device_mib) << 20;
  engine_options.device_cache_bytes = config.device_cache_bytes;
  engine_options.plan_vendor_kernels = config.plan_cublas;
  auto choice = gemmd::CreateEngine(config.engine, engine_options);
  if (!choice.ok()) {
    spdlog::critical("{}", std::string(choice.status().message()));
    return 1;
  }
  spdlog::info("{}", choice->why);
  gemmd::GemmServer server(config, std::move(choice->engine));
  // With every device lost (a sticky CUDA error ends CUDA for the whole
  // process) nothing but a new process can serve again: drain and exit with
  // kExitDevicesLost, so that the supervisor (Kubernetes, systemd, docker
  // --restart) starts a fresh one. The signal wakes the sigwait below.
  constexpr int kExitDevicesLost = 3;
  std::atomic<bool> devices_lost{false};
  server.OnAllDevicesLost([&devices_lost] {
    devices_lost = true;
    kill(getpid(), SIGTERM);
  });
  // The same for a listener that stopped accepting: the calls already
  // connected still drain.
  constexpr int kExitListenerDead = 4;
  std::atomic<bool> listener_dead{false};
  server.OnListenerDead([&listener_dead](const std::string&) {
    listener_dead = true;
    kill(getpid(), SIGTERM);
  });
  if (auto st = server.Start(); !st.ok()) {
    spdlog::critical("{}", std::string(st.message()));
    return 1;
  }
  if (!config.port_file.empty()) {
    std::ofstream(config.port_file) << server.port() << "\n";
  }

  int sig = 0;
  sigwait(&stop_signals, &sig);
  if (devices_lost) {
    spdlog::critical("every device is out of service: draining, then exiting with status {} for a restart",
                     kExitDevicesLost);
  } else if (listener_dead) {
    spdlog::critical("draining what is connected, then exiting with status {} for a restart", kExitListenerDead);
  } else {
    spdlog::info("{} received: draining (grace {} s, of which {} s NOT_SERVING but still taking calls; a second "
                 "signal ends the grace)",
                 std::string("SIG") + sigabbrev_np(sig), config.shutdown_grace_seconds, config.drain_delay_seconds);
  }
  std::thread draining([&] {
    server.Shutdown(std::chrono::duration<double>(config.shutdown_grace_seconds),
                    std::chrono::duration<double>(config.drain_delay_seconds));
    kill(getpid(), SIGTERM);  // wakes the wait below once the drain is over
  });
  // A second signal during the drain ends the grace; the one the drain
  // sends itself when it is over ends the wait.
  int again = 0;
  sigwait(&stop_signals, &again);
  server.EndGrace();
  draining.join();
  spdlog::info("stopped cleanly");
  return devices_lost ? kExitDevicesLost : listener_dead ? kExitListenerDead : 0;
}

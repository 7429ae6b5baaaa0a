// Assembles one gemmd: engine, dispatcher, matrix store, metrics, the gRPC
// service with health and reflection. main() and the end-to-end test
// fixture both start servers through this class.
#pragma once

#include <absl/status/status.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>

#include "api/gemm_service.h"
#include "config.h"
#include "engine/dispatcher.h"
#include "engine/engine.h"
#include "engine/matrix_store.h"
#include "metrics/metrics.h"
#include "process/listener_probe.h"
#include "process/memory_trimmer.h"
#include "telemetry/gpu_telemetry.h"

namespace gemmd {

class GemmServer {
 public:
  GemmServer(ServerConfig config, std::unique_ptr<Engine> engine);
  ~GemmServer();

  // Binds, warms every device up (health NOT_SERVING meanwhile), then
  // reports SERVING. Returns once serving.
  absl::Status Start();

  int port() const { return port_; }
  int metrics_port() const { return metrics_.port(); }
  Metrics& metrics() { return metrics_; }
  // See GemmService::SetBeforeReplyHookForTest; before Start.
  void SetBeforeReplyHookForTest(std::function<void(grpc::ServerContextBase*)> hook) {
    service_->SetBeforeReplyHookForTest(std::move(hook));
  }
  // Requests waiting for a device (not running).
  size_t queued() const { return dispatcher_->queued(); }

  // Called once (from a worker thread, or from Start) when no device is
  // left in service, e.g. after a sticky CUDA error, which only a restart of
  // the process repairs. Set before Start.
  void OnAllDevicesLost(std::function<void()> callback);
  // Called once, from the listener probe's thread, when the gRPC listener
  // stopped accepting connections (process/listener_probe.h); only a new
  // process can serve again. Set before Start.
  void OnListenerDead(std::function<void(const std::string& why)> callback);

  // Reports NOT_SERVING and goes on serving for `drain_delay` (clients that
  // watch health move away meanwhile), then stops accepting, lets in-flight
  // calls finish within the rest of `grace`, cancels what is left, drains
  // the queue and stops the workers. Idempotent.
  // Streams that move no data end at once with UNAVAILABLE instead of
  // holding the grace (an idle client would otherwise hold every restart).
  void Shutdown(std::chrono::duration<double> grace,
                std::chrono::duration<double> drain_delay = std::chrono::duration<double>(0));
  // Ends a Shutdown's grace now (a second signal): what still runs is
  // cancelled. From any thread; does nothing before Shutdown.
  void EndGrace();

 private:
  ServerConfig config_;
  Metrics metrics_;  // first in, last out: everything below reports to it
  std::unique_ptr<GpuTelemetry> telemetry_;  // null without NVML or GPUs
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<MatrixStore> store_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<GemmService> service_;
  std::unique_ptr<UnaryQueues> multiply_queues_;  // outlives server_
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  // Health is SERVING while some device is; with every device lost only a
  // restart brings a GPU context back, so probes must see it. From Start
  // and from the worker that found a device lost.
  void UpdateHealth();
  std::mutex health_mu_;
  bool warm_ = false;  // every device warmed up: health may read SERVING
  bool all_lost_ = false;
  bool shut_down_ = false;
  std::function<void()> on_all_devices_lost_;
  std::function<void(const std::string&)> on_listener_dead_;
  std::unique_ptr<ListenerProbe> listener_probe_;
  std::unique_ptr<MemoryTrimmer> memory_trimmer_;
  // Cancels every call and stream now (a second signal); once.
  void CancelEverything();
  std::mutex grace_mu_;
  std::condition_variable grace_cv_;
  bool grace_ended_ = false;
  bool grace_started_ = false;  // the listener is closing: calls may be cancelled
  bool grace_over_ = false;     // every call has ended: nothing left to cancel
  std::atomic<bool> cancelled_everything_{false};
};

}  // namespace gemmd

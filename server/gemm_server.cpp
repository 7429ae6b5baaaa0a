#include "gemm_server.h"

#include "engine/matrix_files.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "gemm/steps.h"
#include "thread_name.h"
#include "version.h"

namespace gemmd {

namespace {
constexpr const char* kServiceName = "gemm.v1.GemmService";
}

namespace {

absl::Status ReadPem(const std::string& path, const char* what, std::string* pem) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  *pem = text.str();
  if (!in || pem->find("-----BEGIN") == std::string::npos) {
    return absl::InvalidArgumentError(std::string("cannot read a PEM ") + what + " from " + path);
  }
  return absl::OkStatus();
}

// Plaintext, TLS, or mutual TLS, as configured.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(const ServerConfig& c) {
  if (c.tls_cert.empty()) {
    if (!c.auth_token.empty() || !c.auth_tokens.empty()) {
      spdlog::warn("bearer tokens travel in plaintext: serve with --tls-cert/--tls-key");
    }
    return grpc::InsecureServerCredentials();
  }
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  if (auto st = ReadPem(c.tls_cert, "certificate", &pair.cert_chain); !st.ok()) return st;
  if (auto st = ReadPem(c.tls_key, "private key", &pair.private_key); !st.ok()) return st;
  grpc::SslServerCredentialsOptions options(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  options.pem_key_cert_pairs.push_back(std::move(pair));
  if (!c.tls_client_ca.empty()) {
    if (auto st = ReadPem(c.tls_client_ca, "client CA", &options.pem_root_certs); !st.ok()) return st;
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

}  // namespace

GemmServer::GemmServer(ServerConfig config, std::unique_ptr<Engine> engine)
    : config_(std::move(config)), engine_(std::move(engine)) {
  const auto devices = engine_->devices();
  if (config_.gpu_telemetry_period_ms > 0 && engine_->name() == "cuda") {
    std::vector<TelemetryDevice> gpus;
    for (const auto& d : devices) gpus.push_back({d.id, d.pci_bus_id});
    std::string why;
    telemetry_ = GpuTelemetry::Start(gpus, metrics_.registry(),
                                     std::chrono::milliseconds(config_.gpu_telemetry_period_ms), &why);
    if (telemetry_) {
      spdlog::info("GPU telemetry (NVML) every {} ms", config_.gpu_telemetry_period_ms);
    } else {
      spdlog::warn("no GPU telemetry: {}", why);
    }
  }
  // One set of threads faults in new buffers ahead of their first write, for
  // the store and for inline replies (hostmem/populate_pages.h).
  const auto populator =
      std::make_shared<gemm::hostmem::PagePopulator>(gemm::hostmem::PagePopulator::DefaultThreads());
  store_ = std::make_unique<MatrixStore>(
      config_.matrix_quota_bytes, [this](uint64_t bytes, size_t count) { metrics_.SetResidentMatrices(bytes, count); },
      config_.max_matrices,
      HostBufferPool::Create(
          config_.reuse_host_bytes, [this](uint64_t kept) { metrics_.SetReusableHostBytes(kept); }, populator));
  store_->SetIdentityLimits(config_.identity_quota_bytes, config_.max_uploads_per_identity);
  DispatcherOptions dopts;
  dopts.queue_capacity = config_.queue_capacity;
  dopts.workers_per_device = config_.workers_per_device;
  BatchPolicy batching;
  batching.max_batch = BatchMaxFor(config_, engine_->name());
  batching.window = std::chrono::microseconds(config_.batch_window_us);
  dopts.max_batch = batching.max_batch;
  dopts.batch_window = batching.window;
  dopts.on_queue_depth = [this, devices](int device, size_t depth) {
    metrics_.SetQueueDepth(devices[device].id, depth);
  };
  dispatcher_ = std::make_unique<Dispatcher>(*engine_, dopts);

  ServiceOptions sopts;
  sopts.limits.max_dim = config_.max_dim;
  sopts.limits.max_request_bytes = config_.max_request_bytes;
  sopts.limits.max_message_bytes = config_.max_message_bytes;
  sopts.limits.max_repeats = config_.max_repeats;
  sopts.queue_capacity = config_.queue_capacity;
  sopts.batching = batching;
  // Per device, as the workers whose replies they send.
  sopts.reply_threads = config_.reply_threads * static_cast<unsigned>(devices.size());
  std::vector<NamedToken> tokens = config_.auth_tokens;
  if (!config_.auth_token.empty()) tokens.push_back({config_.auth_token, kDefaultIdentity});
  sopts.identity = CallerIdentity(BearerAuth(std::move(tokens)), config_.operators);
  sopts.stream_idle_seconds = config_.stream_idle_seconds;
  sopts.populator = populator;
  sopts.on_device_lost = [this] { UpdateHealth(); };
  sopts.sm_clock_mhz = [this](const std::string& device) { return telemetry_ ? telemetry_->SmClockMhz(device) : 0; };
  service_ = std::make_unique<GemmService>(*engine_, *dispatcher_, *store_, metrics_, sopts);

  metrics_.SetQuota(config_.matrix_quota_bytes);
  metrics_.SetQueueCapacity(config_.queue_capacity);
  metrics_.SetBuildInfo(kGemmdVersion, engine_->name());
  for (const auto& d : devices) {
    metrics_.SetQueueDepth(d.id, 0);
  }
}

GemmServer::~GemmServer() { Shutdown(std::chrono::seconds(0)); }

absl::Status GemmServer::Start() {
  if (!config_.matrix_dir.empty()) {
    auto files = MatrixFiles::Open(config_.matrix_dir);
    if (!files.ok()) return files.status();
    const auto start = std::chrono::steady_clock::now();
    const size_t loaded = store_->AttachFiles(std::move(*files));
    spdlog::info("stored matrices kept in {}: {} loaded ({} bytes) in {:.0f} ms", config_.matrix_dir, loaded,
                 store_->used_bytes(),
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  if (!config_.metrics_listen.empty()) {
    try {
      metrics_.Serve(config_.metrics_listen);
    } catch (const std::exception& e) {
      return absl::UnavailableError("cannot serve metrics on " + config_.metrics_listen + ": " + e.what());
    }
  }

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  auto credentials = ServerCredentials(config_);
  if (!credentials.ok()) return credentials.status();
  builder.AddListeningPort(config_.listen, *credentials, &port_);
  builder.SetMaxReceiveMessageSize(static_cast<int>(config_.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(config_.max_message_bytes));
  // Keepalive pings find peers that vanished without closing the TCP
  // connection (a crashed client, a dropped route), whose calls would
  // otherwise hold what they reserved.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // Clients may ping as often as every 10 s without being told off.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10'000);
  // A connection that has not finished its handshake (TLS, or the HTTP/2
  // preface) by then is closed: idle TCP connections cannot pile up for
  // gRPC's default two minutes and hold the process's descriptors.
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, 10'000);
  // gRPC binds with SO_REUSEPORT unless told not to: a second gemmd on the
  // same port would start and take half the connections (and want the same
  // GPUs) instead of failing.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(service_.get());
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  multiply_queues_ = std::make_unique<UnaryQueues>(
      builder, config_.multiply_threads ? config_.multiply_threads : std::clamp(cores / 4, 1u, 4u));
  {
    // Workers read server_ (UpdateHealth) under the same lock.
    std::lock_guard lock(health_mu_);
    server_ = builder.BuildAndStart();
    if (!server_ || port_ == 0) {
      return absl::UnavailableError("cannot listen on " + config_.listen +
                                    " (another process may hold that port; gRPC's log above says why)");
    }
    // Multiply answers from here on: UNAVAILABLE until the devices are warm.
    multiply_queues_->Start(
        [service = service_.get()](grpc::ServerContext* ctx, grpc::ByteBuffer* request,
                                   grpc::ServerAsyncResponseWriter<grpc::ByteBuffer>* responder,
                                   grpc::ServerCompletionQueue* cq, void* tag) {
          service->RequestMultiply(ctx, request, responder, cq, cq, tag);
        },
        [service = service_.get()](QueuedCall* call) { service->Multiply(call); });
    // NOT_SERVING until every device is warm; Multiply meanwhile answers
    // UNAVAILABLE (GemmService::SetReady).
    auto* health = server_->GetHealthCheckService();
    health->SetServingStatus("", false);
    health->SetServingStatus(kServiceName, false);
  }

  // Warm every device before saying SERVING, so the first request pays no
  // start-up cost: all at once, since each takes seconds (the self-test and
  // the cuBLAS plan) and shares nothing with the others.
  const auto devices = engine_->devices();
  std::vector<absl::Status> warmed(devices.size());
  std::vector<double> warm_ms(devices.size());
  {
    std::vector<std::thread> warmers;
    for (size_t d = 0; d < devices.size(); ++d) {
      warmers.emplace_back([this, d, &warmed, &warm_ms] {
        NameThisThread("warm-up-" + std::to_string(d));
        const auto start = std::chrono::steady_clock::now();
        warmed[d] = engine_->Warmup(static_cast<int>(d));
        warm_ms[d] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      });
    }
    for (auto& t : warmers) t.join();
  }
  for (size_t d = 0; d < devices.size(); ++d) {
    const int di = static_cast<int>(d);
    const absl::Status& st = warmed[d];
    const double ms = warm_ms[d];
    if (!st.ok()) {
      spdlog::error("device {} failed its warm-up: {}", devices[d].id, std::string(st.message()));
    } else {
      spdlog::info("device {} ({}) warm in {:.1f} ms", devices[d].id, devices[d].name, ms);
    }
    service_->PublishDeviceState(di);
    for (const gemm::StepInfo& info : gemm::AllSteps()) {
      const StepAvailability a = engine_->availability(info.step, di);
      if (a.available) metrics_.InitSeries(info.step, devices[d].id);
      if (a.withdrawn) metrics_.SetStepWithdrawn(info.step, devices[d].id);
    }
  }
  // One line per distinct reason, not one per step.
  std::map<std::string, std::string> unavailable;  // reason -> steps
  for (const gemm::StepInfo& info : gemm::AllSteps()) {
    const StepAvailability any = AvailabilityOnAnyDevice(*engine_, info.step);
    metrics_.SetStepAvailable(info.step, any.available);
    if (!any.available) {
      std::string& steps = unavailable[any.reason];
      steps += (steps.empty() ? "" : ",") + std::to_string(info.step);
    }
  }
  for (const auto& [reason, steps] : unavailable) spdlog::info("steps {} unavailable: {}", steps, reason);
  dispatcher_->RunOnEveryWorker([this](int device) { engine_->WarmWorker(device); }, std::chrono::seconds(30));
  service_->SetReady();
  {
    std::lock_guard lock(health_mu_);
    warm_ = true;
  }
  UpdateHealth();
  if (config_.listener_probe_seconds > 0) {
    ListenerProbe::Options probe;
    probe.host = ProbeHostFor(config_.listen);
    probe.port = port_;
    probe.period = probe.timeout =
        std::chrono::milliseconds(static_cast<int64_t>(config_.listener_probe_seconds * 1000));
    listener_probe_ = std::make_unique<ListenerProbe>(probe, [this](const std::string& why) {
      spdlog::critical("{}", why);
      if (on_listener_dead_) on_listener_dead_(why);
    });
  }
  if (config_.idle_trim_seconds > 0) {
    memory_trimmer_ = std::make_unique<MemoryTrimmer>(
        [this] { return metrics_.requests_recorded(); }, [this] { return metrics_.multiply_in_flight(); },
        std::chrono::milliseconds(static_cast<int64_t>(config_.idle_trim_seconds * 1000)),
        [](int64_t returned) {
          spdlog::debug("idle: malloc_trim gave {} MiB back to the system", returned >> 20);
        });
  }
  spdlog::info("gemmd {} serving gemm.v1 on port {} ({} engine, {} device(s)); metrics on {}", kGemmdVersion,
               port_, engine_->name(), devices.size(),
               config_.metrics_listen.empty() ? "nowhere (disabled)"
                                              : "port " + std::to_string(metrics_.port()) + " /metrics");
  return absl::OkStatus();
}

void GemmServer::OnAllDevicesLost(std::function<void()> callback) { on_all_devices_lost_ = std::move(callback); }

void GemmServer::OnListenerDead(std::function<void(const std::string&)> callback) {
  on_listener_dead_ = std::move(callback);
}

void GemmServer::EndGrace() {
  bool in_grace = false;
  {
    std::lock_guard lock(grace_mu_);
    grace_ended_ = true;
    in_grace = grace_started_ && !grace_over_;
  }
  grace_cv_.notify_all();
  // Once the listener is closing, what still runs is cancelled before this
  // returns; earlier, Shutdown does it when it gets there.
  if (in_grace) CancelEverything();
}

void GemmServer::CancelEverything() {
  if (cancelled_everything_.exchange(true)) return;
  spdlog::warn("second signal: the grace ends now, and the calls still running are cancelled");
  service_->EndAllStreams();
  grpc_server_cancel_all_calls(server_->c_server());
}

void GemmServer::UpdateHealth() {
  std::function<void()> lost;
  {
    std::lock_guard lock(health_mu_);
    if (!server_ || !warm_ || shut_down_) return;
    bool any_healthy = false;
    const size_t devices = engine_->devices().size();
    for (size_t d = 0; d < devices; ++d) any_healthy |= engine_->healthy(static_cast<int>(d));
    if (!any_healthy && !all_lost_) {
      all_lost_ = true;
      lost = on_all_devices_lost_;
      spdlog::error("every device is out of service: health is NOT_SERVING");
    }
    auto* health = server_->GetHealthCheckService();
    health->SetServingStatus("", any_healthy);
    health->SetServingStatus(kServiceName, any_healthy);
  }
  if (lost) lost();
}

void GemmServer::Shutdown(std::chrono::duration<double> grace, std::chrono::duration<double> drain_delay) {
  {
    std::lock_guard lock(health_mu_);
    if (shut_down_) return;
    shut_down_ = true;
  }
  // The probe would take a closed listener for a dead one.
  listener_probe_.reset();
  // From here server_ no longer changes: Start is over (or never ran), and
  // UpdateHealth returns early.
  if (server_) {
    auto* health = server_->GetHealthCheckService();
    health->SetServingStatus("", false);
    health->SetServingStatus(kServiceName, false);
    // gRPC cancels, without running it, a call that reaches a server after
    // its Shutdown began and before the client saw the GOAWAY (our clients
    // retry that CANCELLED). Whatever watches health (a load balancer, a
    // gRPC client with healthCheckConfig, Kubernetes endpoints) stops
    // sending here during the delay, so fewer calls meet that race.
    const auto delay = std::min(drain_delay, grace);
    {
      std::unique_lock lock(grace_mu_);
      grace_cv_.wait_for(lock, delay, [this] { return grace_ended_; });
    }
    // A stream that moves no data for a second ends now, and so does one
    // that stops moving later in the grace: an idle client does not hold a
    // restart for the whole grace.
    service_->BeginShutdown(std::chrono::seconds(1));
    // Stops accepting; waits for in-flight calls until the deadline, then
    // cancels them (the workers see IsCancelled and finish them early).
    bool done = false;
    std::thread stopper([&] {
      server_->Shutdown(std::chrono::system_clock::now() +
                        std::chrono::duration_cast<std::chrono::system_clock::duration>(grace - delay));
      std::lock_guard lock(grace_mu_);
      done = true;
      grace_cv_.notify_all();
    });
    {
      std::unique_lock lock(grace_mu_);
      grace_started_ = true;
      grace_cv_.wait(lock, [&] { return done || grace_ended_; });
      if (!done) {
        lock.unlock();
        CancelEverything();
      }
    }
    stopper.join();
    std::lock_guard lock(grace_mu_);
    grace_over_ = true;
  }
  dispatcher_->Shutdown();
  if (server_) server_->Wait();
  // Every call is answered and gone from gRPC: the queues drain and stop.
  if (multiply_queues_) multiply_queues_->Shutdown();
  memory_trimmer_.reset();
}

}  // namespace gemmd

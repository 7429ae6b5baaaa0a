// grpc-echo-bench: the floor gemmd's service path is measured against, on
// the same machine and in the same run. One process serves a generic unary
// method over loopback that answers each call with as many bytes as the call
// asks for, and nothing else: no parsing, no GPU, no copies beyond gRPC's.
//   --mode latency:  tiny calls, `--concurrency` in flight for `--seconds`:
//                    p50 / p99 latency and calls per second.
//   --mode transfer: `--count` calls each sending `--up-bytes` and receiving
//                    `--down-bytes` (as an inline Multiply would): the median;
//                    with --fresh-connection each on a new connection.
// --server-api picks how the echo is served: gRPC's callback API (as gemmd
// serves), or the completion-queue API with a thread per queue, so that the
// floor is not one API's cost. --connections spreads the calls over that
// many TCP connections (one is the default, as one channel makes).
// --pipelined drives the calls as gemm-client bench does: one thread per
// connection keeps its share in flight (client/unary_pipeline.h).
// --busy-poll makes the client poll for each reply instead of sleeping, as
// gemm-client --busy-poll does; --server-busy-poll does the same for the
// completion-queue server's threads; --health adds gRPC's default health
// service, a callback service, to either server (gemmd serves one), and
// --sync-service a service on the synchronous API (gemmd's reflection is
// one), to see what their threads cost the completion-queue server.
// --serve and --target split the server and the client into two processes,
// as gemmd and gemm-client are. Prints one line of `key=value` pairs.
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <absl/synchronization/mutex.h>

#include "grpc/health/v1/health.grpc.pb.h"
#include "unary_pipeline.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kMaxMessage = 512 << 20;

// The first 8 bytes of a request name the size of its reply: that many
// bytes, in `data`, which must outlive the reply.
grpc::ByteBuffer ReplyTo(grpc::ByteBuffer& request, std::string* data) {
  std::vector<grpc::Slice> slices;
  uint64_t size = 0;
  if (request.Dump(&slices).ok() && !slices.empty() && slices[0].size() >= 8) {
    std::memcpy(&size, slices[0].begin(), 8);
  }
  data->assign(std::min<uint64_t>(size, kMaxMessage), 'x');
  grpc::Slice slice(data->data(), data->size(), grpc::Slice::STATIC_SLICE);
  return grpc::ByteBuffer(&slice, 1);
}

class EchoService final : public grpc::CallbackGenericService {
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext*) override {
    class Reactor final : public grpc::ServerGenericBidiReactor {
     public:
      Reactor() { StartRead(&request_); }
      void OnReadDone(bool ok) override {
        if (!ok) return Finish(grpc::Status::OK);
        reply_ = ReplyTo(request_, &reply_data_);
        StartWriteAndFinish(&reply_, grpc::WriteOptions(), grpc::Status::OK);
      }
      void OnDone() override { delete this; }

     private:
      grpc::ByteBuffer request_, reply_;
      std::string reply_data_;
    };
    return new Reactor;
  }
};

// The same echo on the completion-queue API: each call a three-state
// machine (requested, read, answered) driven by its queue's own thread.
class AsyncEchoCall {
 public:
  AsyncEchoCall(grpc::AsyncGenericService* service, grpc::ServerCompletionQueue* cq) : service_(service), cq_(cq) {
    service_->RequestCall(&ctx_, &stream_, cq_, cq_, this);
  }
  void Proceed(bool ok) {
    switch (state_) {
      case State::kRequested:
        if (!ok) return delete this;  // shutting down
        new AsyncEchoCall(service_, cq_);
        state_ = State::kRead;
        return stream_.Read(&request_, this);
      case State::kRead:
        reply_ = ReplyTo(request_, &reply_data_);  // a failed read leaves no request: an empty reply
        state_ = State::kAnswered;
        return stream_.WriteAndFinish(reply_, grpc::WriteOptions(), grpc::Status::OK, this);
      case State::kAnswered:
        return delete this;
    }
  }

 private:
  enum class State { kRequested, kRead, kAnswered };
  grpc::AsyncGenericService* service_;
  grpc::ServerCompletionQueue* cq_;
  grpc::GenericServerContext ctx_;
  grpc::GenericServerAsyncReaderWriter stream_{&ctx_};
  grpc::ByteBuffer request_, reply_;
  std::string reply_data_;
  State state_ = State::kRequested;
};

grpc::ByteBuffer Request(uint64_t up_bytes, uint64_t down_bytes, std::string* storage) {
  storage->assign(std::max<uint64_t>(up_bytes, 8), 'y');
  std::memcpy(storage->data(), &down_bytes, 8);
  grpc::Slice slice(storage->data(), storage->size(), grpc::Slice::STATIC_SLICE);
  return grpc::ByteBuffer(&slice, 1);
}

// One blocking unary call on the calling thread's own completion queue (as
// a generated synchronous stub makes it: no hand-over to another thread);
// its wall time in seconds, or -1 on failure.
double Call(grpc::GenericStub& stub, const grpc::ByteBuffer& request, bool busy_poll = false) {
  grpc::ClientContext ctx;
  grpc::CompletionQueue cq;
  grpc::ByteBuffer reply;
  grpc::Status status;
  const auto start = Clock::now();
  auto call = stub.PrepareUnaryCall(&ctx, "/echo.Echo/Call", request, &cq);
  call->StartCall();
  call->Finish(&reply, &status, reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  const bool got = gemmc::NextEvent(cq, busy_poll, &tag, &ok);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  return got && ok && status.ok() ? seconds : -1;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"grpc-echo-bench: bare gRPC unary calls over loopback, the floor for gemmd's service path"};
  std::string mode = "latency";
  int concurrency = 1, count = 5;
  double seconds = 3;
  uint64_t up_bytes = 64, down_bytes = 64;
  std::string server_api = "callback";
  int connections = 1, server_threads = 4;
  bool busy_poll = false, server_busy_poll = false, health = false, sync_service = false, fresh_connection = false;
  bool pipelined = false;
  app.add_option("--mode", mode, "latency or transfer")->check(CLI::IsMember({"latency", "transfer"}));
  app.add_option("--concurrency", concurrency, "calls in flight (latency)")->check(CLI::Range(1, 1024));
  app.add_option("--seconds", seconds, "how long to run (latency)");
  app.add_option("--count", count, "calls (transfer)")->check(CLI::Range(1, 1000));
  app.add_option("--up-bytes", up_bytes, "bytes each call sends")->check(CLI::Range(uint64_t{8}, uint64_t{kMaxMessage}));
  app.add_option("--down-bytes", down_bytes, "bytes each reply carries")->check(CLI::Range(uint64_t{0}, uint64_t{kMaxMessage}));
  app.add_option("--server-api", server_api, "callback (as gemmd) or async (completion queues)")
      ->check(CLI::IsMember({"callback", "async"}));
  app.add_option("--server-threads", server_threads, "completion queues, a thread each (async)")->check(CLI::Range(1, 64));
  std::vector<std::string> channel_args;
  app.add_option("--arg", channel_args, "name=integer: a gRPC channel argument, set on both ends (repeatable)");
  app.add_option("--connections", connections, "TCP connections the calls are spread over")->check(CLI::Range(1, 64));
  std::string serve_port_file, target;
  app.add_option("--serve", serve_port_file,
                 "only serve the echo, writing its port to this file, until SIGTERM: the floor between two processes");
  app.add_option("--target", target, "only the client, of an echo served by another process (--serve) at host:port");
  app.add_flag("--fresh-connection", fresh_connection,
               "transfer: each call on a new connection, opened by a tiny call first, as a one-shot client's");
  app.add_flag("--busy-poll", busy_poll, "the client polls for each reply instead of sleeping (gemm-client --busy-poll)");
  app.add_flag("--pipelined", pipelined,
               "latency: one thread per connection keeps its share of the calls in flight through a completion "
               "queue, as gemm-client bench does, instead of a thread per call");
  app.add_flag("--server-busy-poll", server_busy_poll, "the completion-queue server's threads poll instead of sleeping");
  app.add_flag("--health", health, "also serve gRPC's default health service (a callback service, as gemmd has)");
  app.add_flag("--sync-service", sync_service,
               "also serve a service on the synchronous API (as gemmd's reflection is), never called");
  CLI11_PARSE(app, argc, argv);
  // As gemmd and gemm-client do, so that the floor is gRPC under the same
  // process settings: no lock-order graph behind every gRPC lock.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  if (!target.empty() && !serve_port_file.empty()) {
    return std::fprintf(stderr, "--serve and --target exclude each other\n"), 2;
  }
  const char* const server_process = target.empty() ? "same-process" : "other-process";
  // Blocked before gRPC starts its threads, so that only sigwait takes them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  if (!serve_port_file.empty()) pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  grpc::EnableDefaultHealthCheckService(health);

  EchoService service;
  grpc::health::v1::Health::Service sync_health;  // its methods answer UNIMPLEMENTED; only its threads matter
  grpc::AsyncGenericService async_service;
  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> queues;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(kMaxMessage);
  builder.SetMaxSendMessageSize(kMaxMessage);
  std::vector<std::pair<std::string, int>> parsed_args;
  for (const auto& a : channel_args) {
    const auto eq = a.find('=');
    if (eq == std::string::npos) return std::fprintf(stderr, "--arg %s: not name=integer\n", a.c_str()), 2;
    int value = 0;
    const char* digits = a.data() + eq + 1;
    if (std::from_chars(digits, a.data() + a.size(), value).ptr != a.data() + a.size() || eq + 1 == a.size()) {
      return std::fprintf(stderr, "--arg %s: not name=integer\n", a.c_str()), 2;
    }
    parsed_args.emplace_back(a.substr(0, eq), value);
    builder.AddChannelArgument(parsed_args.back().first, parsed_args.back().second);
  }
  if (server_api == "callback") {
    builder.RegisterCallbackGenericService(&service);
  } else {
    builder.RegisterAsyncGenericService(&async_service);
    for (int i = 0; i < server_threads; ++i) queues.push_back(builder.AddCompletionQueue());
  }
  if (sync_service) builder.RegisterService(&sync_health);
  // --target: a client of an echo in another process, and no server here.
  std::unique_ptr<grpc::Server> server;
  if (target.empty()) {
    server = builder.BuildAndStart();
    if (!server) return std::fprintf(stderr, "cannot listen on loopback\n"), 1;
  } else {
    queues.clear();
  }
  std::vector<std::thread> server_threads_run;
  for (auto& cq : queues) {
    for (int i = 0; i < 64; ++i) new AsyncEchoCall(&async_service, cq.get());
    server_threads_run.emplace_back([cq = cq.get(), server_busy_poll] {
      void* tag = nullptr;
      bool ok = false;
      if (server_busy_poll) {
        for (;;) {
          const auto r = cq->AsyncNext(&tag, &ok, gpr_inf_past(GPR_CLOCK_MONOTONIC));
          if (r == grpc::CompletionQueue::SHUTDOWN) break;
          if (r == grpc::CompletionQueue::GOT_EVENT) static_cast<AsyncEchoCall*>(tag)->Proceed(ok);
        }
        return;
      }
      while (cq->Next(&tag, &ok)) static_cast<AsyncEchoCall*>(tag)->Proceed(ok);
    });
  }

  // A channel of its own subchannel pool is a TCP connection of its own.
  std::vector<std::unique_ptr<grpc::GenericStub>> stubs;
  const auto connect = [&] {
    stubs.clear();
    for (int i = 0; i < connections; ++i) {
      grpc::ChannelArguments args;
      args.SetMaxReceiveMessageSize(kMaxMessage);
      args.SetMaxSendMessageSize(kMaxMessage);
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
      for (const auto& [name, value] : parsed_args) args.SetInt(name, value);
      const std::string address = target.empty() ? "127.0.0.1:" + std::to_string(port) : target;
      stubs.push_back(std::make_unique<grpc::GenericStub>(
          grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args)));
    }
  };
  const auto shut_down = [&] {
    if (server) server->Shutdown();
    for (auto& cq : queues) cq->Shutdown();
    for (auto& t : server_threads_run) t.join();
  };
  if (!serve_port_file.empty()) {  // --serve: until SIGTERM or SIGINT
    std::ofstream(serve_port_file) << port << "\n";
    int sig = 0;
    sigwait(&stop_signals, &sig);
    shut_down();
    return 0;
  }
  connect();

  if (mode == "transfer") {
    // With several connections the bytes are split evenly: each moves its
    // share at once, as a client sending A and B (and fetching D) in
    // parallel pieces would.
    const auto n = static_cast<uint64_t>(connections);
    std::vector<std::string> storage(connections);
    std::vector<grpc::ByteBuffer> requests;
    for (int c = 0; c < connections; ++c) {
      requests.push_back(Request(up_bytes / n, down_bytes / n, &storage[static_cast<size_t>(c)]));
    }
    const auto transfer = [&] {
      if (fresh_connection) {  // connected by a tiny call, as gemm-client run's ListKernels does
        connect();
        std::string tiny;
        const grpc::ByteBuffer hello = Request(8, 0, &tiny);
        for (auto& stub : stubs) (void)Call(*stub, hello);
      }
      const auto start = Clock::now();
      std::vector<double> each(connections);
      std::vector<std::thread> threads;
      for (int c = 0; c < connections; ++c) {
        threads.emplace_back([&, c] { each[c] = Call(*stubs[c], requests[c]); });
      }
      for (auto& t : threads) t.join();
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      return *std::min_element(each.begin(), each.end()) < 0 ? -1 : seconds;
    };
    (void)transfer();  // connect and warm up
    std::vector<double> times;
    for (int i = 0; i < count; ++i) times.push_back(transfer());
    shut_down();
    if (*std::min_element(times.begin(), times.end()) < 0) return std::fprintf(stderr, "a call failed\n"), 1;
    std::printf("mode=transfer server=%s server_api=%s fresh_connection=%d connections=%d up_bytes=%lu "
                "down_bytes=%lu calls=%d median_ms=%.3f min_ms=%.3f\n",
                server_process, server_api.c_str(), fresh_connection, connections, up_bytes, down_bytes, count,
                Percentile(times, 0.5) * 1e3, Percentile(times, 0.0) * 1e3);
    return 0;
  }

  std::string storage;
  const grpc::ByteBuffer request = Request(up_bytes, down_bytes, &storage);
  for (int i = 0; i < 100 * connections; ++i) (void)Call(*stubs[i % connections], request);  // connect, warm up
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::vector<double>> latencies(static_cast<size_t>(concurrency));
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  if (pipelined) {  // a thread per connection with its share of the calls, as gemm-client bench drives them
    for (int c = 0; c < std::min(connections, concurrency); ++c) {
      const size_t depth = gemmc::CallsOnConnection(static_cast<size_t>(concurrency),
                                                     static_cast<size_t>(connections), static_cast<size_t>(c));
      threads.emplace_back([&, c, depth] {
        gemmc::PipelineHooks hooks;
        hooks.next = [&](size_t, grpc::ClientContext*, grpc::ByteBuffer* out) {
          *out = request;
          return !stop.load(std::memory_order_relaxed);
        };
        hooks.done = [&](size_t, const grpc::ClientContext&, const grpc::Status& status, const grpc::ByteBuffer&,
                         double s) {
          if (status.ok()) latencies[static_cast<size_t>(c)].push_back(s);
          else ++failures;
          return 0.0;
        };
        gemmc::RunPipeline(*stubs[static_cast<size_t>(c)], "/echo.Echo/Call", depth, busy_poll, hooks);
      });
    }
  } else {
    for (int t = 0; t < concurrency; ++t) {
      threads.emplace_back([&, t] {
        while (!stop.load(std::memory_order_relaxed)) {
          const double s = Call(*stubs[static_cast<size_t>(t % connections)], request, busy_poll);
          if (s < 0) ++failures;
          else latencies[static_cast<size_t>(t)].push_back(s);
        }
      });
    }
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (const auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::printf("mode=latency server=%s server_api=%s server_threads=%d health=%d sync_service=%d busy_poll=%d "
              "server_busy_poll=%d pipelined=%d connections=%d concurrency=%d calls=%zu failures=%d calls_per_s=%.0f p50_us=%.1f "
              "p99_us=%.1f\n",
              server_process, server_api.c_str(), server_api == "async" ? server_threads : 0, health, sync_service,
              busy_poll, server_busy_poll, pipelined,
              connections, concurrency, all.size(), failures.load(), static_cast<double>(all.size()) / elapsed,
              Percentile(all, 0.5) * 1e6, Percentile(all, 0.99) * 1e6);
  shut_down();
  return failures.load() == 0 ? 0 : 1;
}

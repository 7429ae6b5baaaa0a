// gemm-client bench: a closed-loop load test. `concurrency` requests are kept
// in flight, cycling through every (shape, step) pair with fresh
// server-generated inputs (or, with --inline, A and B in the request and D
// in the reply), until the duration or count is reached. Generated-input
// requests are driven by one thread per connection (RunPipeline); inline
// ones by a thread each, as `run` sends them.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "commands.h"
#include "gemm/half.h"
#include "gemm/random_fill.h"
#include "unary_pipeline.h"

namespace gemmc {
namespace {

using Clock = std::chrono::steady_clock;

// A refused request's first back-off, in seconds; it doubles up to 2 s.
constexpr double kFirstBackoff = 0.025;

struct Sample {
  size_t combo;
  double latency;  // client round trip, seconds
  double kernel;   // server's kernel seconds
  double tflops;
  gemm::v1::Timing server;  // the server's phases
  grpc::StatusCode code;
  int retries;  // gRPC's retries before the answer (gemmd-previous-attempts)
  std::string message;  // a refusal's sentence
};

struct Combo {
  int64_t m, n, k;
  uint32_t step;
};

// A request for `c` with the run's settings and form; its operands are the
// caller's (a C, when the form reads one, is generated from `seed`).
gemm::v1::MultiplyRequest RequestFor(const Combo& c, const BenchArgs& args, uint64_t seed = 1,
                                     gemm::GemmForm* form = nullptr) {
  gemm::v1::MultiplyRequest req = MultiplyRequestFor(c.m, c.n, c.k, c.step, args.repeats, args.benchmark,
                                                     args.verify || args.fast_verify, args.fast_verify);
  gemm::GemmForm resolved;
  ApplyForm(args.form, &req, &resolved);  // checked once before the run
  if (resolved.ReadsC()) req.mutable_c()->mutable_random()->set_seed(seed);
  if (form != nullptr) *form = resolved;
  return req;
}

// Operand `id` of `c` (A or B) as --inline and --stored send it: what the
// server would generate from `seed`, in the form's type, over its batch.
struct OperandBytes {
  std::string bytes;
  int64_t rows = 0, cols = 0;  // as uploaded
  gemm::ElementType type = gemm::ElementType::kF16;
};
OperandBytes GeneratedOperand(const Combo& c, const gemm::GemmForm& form, uint64_t seed, gemm::OperandId id) {
  const gemm::OperandStorage s = id == gemm::OperandId::kA ? gemm::StorageOfA(form, c.m, c.k)
                                                           : gemm::StorageOfB(form, c.n, c.k);
  OperandBytes out;
  out.type = s.type;
  out.rows = s.StoredRows(form.batch);
  out.cols = out.rows == 0 ? 0 : s.cols;
  out.bytes = GeneratedBytes(s.type, s.Footprint(form.batch), seed, id);
  return out;
}

// Nearest-rank percentile of sorted values.
double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * sorted.size()));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

}  // namespace

uint32_t AutoConnections(uint32_t concurrency) { return std::clamp((concurrency + 3) / 4, 1u, 8u); }

int CmdBench(GemmClient& client, const BenchArgs& args) {
  {
    gemm::v1::MultiplyRequest probe = MultiplyRequestFor(8, 8, 16, 0, 1, false, false);
    gemm::GemmForm form;
    if (auto err = ApplyForm(args.form, &probe, &form); !err.empty()) {
      std::cerr << "error: " << err << "\n";
      return 2;
    }
  }
  std::vector<Combo> combos;
  for (const auto& s : args.shapes) {
    Combo c{};
    if (!ParseShape(s, &c.m, &c.n, &c.k)) {
      std::cerr << "error: shape '" << s << "' is not MxNxK (e.g. 1024x1024x512)\n";
      return 2;
    }
    for (uint32_t step : args.steps) {
      c.step = step;
      combos.push_back(c);
    }
  }
  const double duration = args.count == 0 && args.duration_seconds <= 0 ? 10.0 : args.duration_seconds;
  const uint32_t connections =
      std::min(args.connections ? args.connections : AutoConnections(args.concurrency), args.concurrency);
  std::fprintf(stderr, "bench: %zu shape/step pairs, concurrency %u over %u connection(s)%s, %s, replies awaited %s\n",
               combos.size(), args.concurrency, connections, args.connections ? "" : " (one per 4 in flight)",
               args.count ? (std::to_string(args.count) + " requests").c_str()
                          : (std::to_string(duration) + " s").c_str(),
               client.options().busy_poll ? "by polling" : "asleep");
  // A thread per connection polls, or with --inline one per request in flight.
  const uint32_t polling_threads = args.inline_data ? args.concurrency : connections;
  if (client.options().busy_poll && polling_threads > std::max(1u, std::thread::hardware_concurrency() / 2)) {
    std::fprintf(stderr, "bench: warning: %u polling threads on %u cores compete with the server for the CPU\n",
                 polling_threads, std::thread::hardware_concurrency());
  }

  // --inline: each pair's request, A and B made once, sent by every thread
  // as `run --transport inline` sends it (its bytes referenced, not copied;
  // D gathered into memory the thread keeps), so that the latency is a
  // warm client's whole round trip.
  std::vector<gemm::v1::MultiplyRequest> inline_requests(args.inline_data ? combos.size() : 0);
  for (size_t ci = 0; ci < inline_requests.size(); ++ci) {
    const Combo& c = combos[ci];
    gemm::GemmForm form;
    gemm::v1::MultiplyRequest& req = inline_requests[ci] = RequestFor(c, args, ci + 1, &form);
    req.mutable_a()->set_data(GeneratedOperand(c, form, ci + 1, gemm::OperandId::kA).bytes);
    req.mutable_b()->set_data(GeneratedOperand(c, form, ci + 1, gemm::OperandId::kB).bytes);
    req.set_output(gemm::v1::OUTPUT_INLINE);
  }

  // --stored: each pair's A and B uploaded once, in the server's memory only.
  std::vector<std::array<std::string, 2>> stored(args.stored ? combos.size() : 0);
  const auto delete_stored = [&] {
    for (const auto& pair : stored) {
      for (const auto& handle : pair) {
        if (!handle.empty()) client.Delete(handle);
      }
    }
  };
  for (size_t ci = 0; ci < stored.size(); ++ci) {
    const Combo& c = combos[ci];
    gemm::GemmForm form;
    RequestFor(c, args, 1, &form);
    for (auto [i, operand] : {std::pair{0, gemm::OperandId::kA}, std::pair{1, gemm::OperandId::kB}}) {
      const OperandBytes generated = GeneratedOperand(c, form, ci + 1, operand);
      if (generated.cols == 0) {
        delete_stored();
        std::cerr << "error: --stored needs batch strides of whole rows\n";
        return 2;
      }
      gemm::v1::MatrixHeader header;
      header.set_rows(generated.rows);
      header.set_cols(generated.cols);
      header.set_type(ToProtoType(generated.type));
      header.set_label(std::string(i == 0 ? "A" : "B") + " of gemm-client bench --stored");
      header.set_transient(true);
      gemm::v1::MatrixInfo info;
      if (auto st = client.Upload(header, generated.bytes, &info); !st.ok()) {
        delete_stored();
        std::cerr << "error: upload of " << (i == 0 ? "A" : "B") << " for --stored: " << CodeName(st.error_code())
                  << ": " << st.error_message() << "\n";
        return 1;
      }
      stored[ci][i] = info.handle();
    }
  }

  // The first connection is the caller's; each further one a channel of its own.
  const auto extra = OwnConnections(client, connections - 1);
  std::vector<GemmClient*> clients{&client};
  for (const auto& c : extra) clients.push_back(c.get());
  std::atomic<uint64_t> next{0};
  std::mutex mu;
  std::vector<Sample> samples;
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(duration);
  // The next request's number, or false once the count or the time is reached.
  const auto take = [&](uint64_t* i) {
    *i = next.fetch_add(1);
    return args.count ? *i < args.count : Clock::now() < end;
  };
  // After a refusal gRPC already retried a few times, the caller backs off
  // (exponential, with jitter) instead of spinning: seconds to wait, ending
  // with the run.
  const auto backoff_after = [&](grpc::StatusCode code, double* backoff, std::mt19937& rng) {
    if (code != grpc::StatusCode::UNAVAILABLE && code != grpc::StatusCode::RESOURCE_EXHAUSTED) {
      *backoff = kFirstBackoff;
      return 0.0;
    }
    *backoff = std::min(*backoff * 2, 2.0);
    double wait = *backoff * std::uniform_real_distribution<double>(0.5, 1.0)(rng);
    if (!args.count) wait = std::min(wait, std::chrono::duration<double>(end - Clock::now()).count());
    return std::max(wait, 0.0);
  };
  const auto sample = [](size_t ci, double latency, const grpc::Status& st, const gemm::v1::MultiplyResponse& resp,
                         int retries) {
    grpc::StatusCode code = st.error_code();
    if (st.ok() && resp.verification().performed() && !resp.verification().passed()) {
      code = grpc::StatusCode::DATA_LOSS;  // counted as an error: wrong result
    }
    return Sample{ci,   latency, resp.timing().kernel_seconds(), resp.tflops(), resp.timing(), code, retries,
                  st.ok() ? std::string() : st.error_message()};
  };
  std::vector<std::thread> threads;
  if (args.inline_data) {
    // A thread per request in flight, each a blocking call as `run` makes it.
    for (uint32_t t = 0; t < args.concurrency; ++t) {
      threads.emplace_back([&, t] {
        std::vector<Sample> mine;
        MatrixBytes d;  // an inline D, gathered into the same memory each time
        std::mt19937 rng(t + 1);
        double backoff = kFirstBackoff;
        GemmClient& to = *clients[t % clients.size()];
        for (uint64_t i = 0; take(&i);) {
          const size_t ci = i % combos.size();
          gemm::v1::MultiplyResponse resp;
          int retries = 0;
          ClientTiming timing;
          const auto t0 = Clock::now();
          const grpc::Status st = to.MultiplyTimed(inline_requests[ci], &resp, &timing, &d, &retries);
          mine.push_back(sample(ci, std::chrono::duration<double>(Clock::now() - t0).count(), st, resp, retries));
          const double wait = backoff_after(mine.back().code, &backoff, rng);
          if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
        }
        std::lock_guard lock(mu);
        samples.insert(samples.end(), mine.begin(), mine.end());
      });
    }
  } else {
    // A thread per connection, keeping its share of the requests in flight.
    for (uint32_t c = 0; c < connections; ++c) {
      const size_t depth = CallsOnConnection(args.concurrency, connections, c);
      threads.emplace_back([&, c, depth] {
        std::vector<Sample> mine;
        std::vector<size_t> combo_of(depth);
        std::vector<double> backoff(depth, kFirstBackoff);
        std::mt19937 rng(c + 1);
        clients[c]->MultiplyPipelined(
            depth,
            [&](size_t slot, gemm::v1::MultiplyRequest* req) {
              uint64_t i = 0;
              if (!take(&i)) return false;
              combo_of[slot] = i % combos.size();
              *req = RequestFor(combos[combo_of[slot]], args, i + 1);
              if (args.stored) {
                req->mutable_a()->set_handle(stored[combo_of[slot]][0]);
                req->mutable_b()->set_handle(stored[combo_of[slot]][1]);
              } else {
                req->mutable_a()->mutable_random()->set_seed(i + 1);  // fresh data every request
                req->mutable_b()->mutable_random()->set_seed(i + 1);
              }
              return true;
            },
            [&](size_t slot, const grpc::Status& st, const gemm::v1::MultiplyResponse& resp, double seconds,
                int retries) {
              mine.push_back(sample(combo_of[slot], seconds, st, resp, retries));
              return backoff_after(mine.back().code, &backoff[slot], rng);
            });
        std::lock_guard lock(mu);
        samples.insert(samples.end(), mine.begin(), mine.end());
      });
    }
  }
  for (auto& t : threads) t.join();
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  delete_stored();

  nlohmann::json rows = nlohmann::json::array();
  size_t total_ok = 0;
  uint64_t total_retries = 0;
  std::printf("%-18s %4s %7s %6s %9s %9s %9s %9s %10s %8s\n", "shape", "step", "ok", "errors", "req/s", "p50 ms",
              "p90 ms", "p99 ms", "kernel ms", "TFLOPS");
  for (size_t ci = 0; ci < combos.size(); ++ci) {
    std::vector<double> lat, kern, tf;
    // The server's phases, to set beside the round trip: where a small
    // request's time goes (docs/service-path.md).
    std::map<std::string, std::vector<double>> phases;
    std::map<std::string, uint64_t> errors;
    std::map<std::string, std::string> first_message;  // per code: what the server (or gRPC) said
    uint64_t retries = 0;
    // Calls that failed with a code the retry policy retries, and whose
    // last attempt never reached gemmd (no trailer to count its attempts):
    // gRPC made up to kRetryServiceConfig's attempts, which the client
    // cannot see.
    uint64_t retried_failures = 0;
    for (const auto& s : samples) {
      if (s.combo != ci) continue;
      retries += static_cast<uint64_t>(s.retries);
      const bool retryable = s.code == grpc::StatusCode::UNAVAILABLE || s.code == grpc::StatusCode::CANCELLED ||
                             s.code == grpc::StatusCode::RESOURCE_EXHAUSTED;
      if (retryable && s.retries == 0) ++retried_failures;
      if (s.code == grpc::StatusCode::OK) {
        lat.push_back(s.latency);
        kern.push_back(s.kernel);
        tf.push_back(s.tflops);
        const gemm::v1::Timing& t = s.server;
        for (auto [name, value] : {std::pair{"prepare", t.prepare_seconds()}, {"queue", t.queue_seconds()},
                                   {"upload", t.upload_seconds()}, {"compute", t.compute_seconds()},
                                   {"download", t.download_seconds()}, {"reply", t.reply_seconds()},
                                   {"server total", t.total_seconds()}}) {
          phases[name].push_back(value);
        }
      } else {
        const std::string name = s.code == grpc::StatusCode::DATA_LOSS ? "VERIFICATION_FAILED" : CodeName(s.code);
        ++errors[name];
        first_message.emplace(name, s.message);
      }
    }
    std::sort(lat.begin(), lat.end());
    std::sort(kern.begin(), kern.end());
    std::sort(tf.begin(), tf.end());
    total_ok += lat.size();
    uint64_t nerr = 0;
    for (auto& [_, n] : errors) nerr += n;
    const Combo& c = combos[ci];
    const std::string shape = std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k);
    nlohmann::json row = {{"shape", shape},
                          {"m", c.m},
                          {"n", c.n},
                          {"k", c.k},
                          {"step", c.step},
                          {"ok", lat.size()},
                          {"errors", errors},
                          {"retries", retries},
                          {"failed_after_unseen_retries", retried_failures},
                          {"requests_per_second", lat.size() / wall},
                          {"latency_p50_ms", Percentile(lat, 50) * 1e3},
                          {"latency_p90_ms", Percentile(lat, 90) * 1e3},
                          {"latency_p99_ms", Percentile(lat, 99) * 1e3},
                          {"kernel_median_ms", Percentile(kern, 50) * 1e3},
                          {"tflops_median", Percentile(tf, 50)}};
    std::printf("%-18s %4u %7zu %6lu %9.1f %9.3f %9.3f %9.3f %10.4f %8.3f\n", shape.c_str(), c.step, lat.size(),
                nerr, lat.size() / wall, Percentile(lat, 50) * 1e3, Percentile(lat, 90) * 1e3,
                Percentile(lat, 99) * 1e3, Percentile(kern, 50) * 1e3, Percentile(tf, 50));
    if (!lat.empty()) {
      std::printf("    server p50 ms:");
      for (const char* name : {"prepare", "queue", "upload", "compute", "download", "reply", "server total"}) {
        std::sort(phases[name].begin(), phases[name].end());
        std::printf(" %s %.3f", name, Percentile(phases[name], 50) * 1e3);
        row["server_p50_ms"][name] = Percentile(phases[name], 50) * 1e3;
      }
      std::printf("\n");
    }
    rows.push_back(row);
    for (auto& [name, n] : errors) {
      const std::string& said = first_message[name];
      std::printf("    %lu x %s%s%s\n", n, name.c_str(), said.empty() ? "" : ": ", said.c_str());
    }
    if (retries > 0) std::printf("    %lu retries by gRPC's retry policy, seen by the server\n", retries);
    if (retried_failures > 0) {
      std::printf("    %lu calls failed with a retryable code after retries the server never saw (up to 4 each)\n",
                  retried_failures);
    }
    total_retries += retries;
  }
  std::printf("total: %zu ok of %zu in %.2f s, %.1f req/s, %lu retried\n", total_ok, samples.size(), wall,
              total_ok / wall, total_retries);

  if (!args.json_file.empty()) {
    nlohmann::json doc = {{"wall_seconds", wall}, {"concurrency", args.concurrency},
                          {"connections", connections}, {"results", rows}};
    std::ofstream(args.json_file) << doc.dump(2) << "\n";
  }
  if (!args.csv_file.empty()) {
    std::ofstream f(args.csv_file);
    f << "shape,m,n,k,step,ok,errors,requests_per_second,latency_p50_ms,latency_p90_ms,latency_p99_ms,"
         "kernel_median_ms,tflops_median\n";
    for (const auto& r : rows) {
      uint64_t nerr = 0;
      for (const auto& [_, n] : r["errors"].items()) nerr += n.get<uint64_t>();
      f << r["shape"].get<std::string>() << ',' << r["m"] << ',' << r["n"] << ',' << r["k"] << ',' << r["step"]
        << ',' << r["ok"] << ',' << nerr << ',' << r["requests_per_second"] << ',' << r["latency_p50_ms"] << ','
        << r["latency_p90_ms"] << ',' << r["latency_p99_ms"] << ',' << r["kernel_median_ms"] << ','
        << r["tflops_median"] << '\n';
    }
  }
  return total_ok > 0 ? 0 : 1;
}

}  // namespace gemmc

// gemm-client: talks to a gemmd server. `gemm-client --help` lists commands.
#include <malloc.h>

#include <CLI/CLI.hpp>
#include <absl/synchronization/mutex.h>

#include <cstdlib>
#include <iostream>

#include "commands.h"

int main(int argc, char** argv) {
  // Big buffers (inline operands, D, gRPC's message buffers) come and go
  // with every large request. glibc maps each one afresh and unmaps it on
  // free, so every request paid its page faults again (a 32 MB D cost 14 ms
  // to allocate). Served from the heap and kept there, they are reused warm
  // (docs/service-path.md).
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, INT32_MAX);
  // As gemmd does: no lock-order graph behind every gRPC lock (Debian's
  // abseil keeps one otherwise; docs/service-path.md).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  CLI::App app{"gemm-client: run GEMMs on a gemmd server", "gemm-client"};
  app.require_subcommand(1);
  gemmc::ClientOptions opts;
  app.add_option("--target", opts.target, "server address; dns:///host:port balances over every replica")
      ->envname("GEMM_TARGET")->capture_default_str();
  app.add_option("--timeout", opts.timeout_seconds,
                 "deadline of each call in seconds; within it a call waits out a server restart; 0 = none (and "
                 "no waiting)")
      ->capture_default_str()
      ->envname("GEMM_TIMEOUT")->capture_default_str();
  app.add_flag("--busy-poll", opts.busy_poll,
               "wait for each Multiply's reply by polling, not sleeping: lower latency, a busy core per call in flight")
      ->envname("GEMM_BUSY_POLL");
  app.add_option("--max-message-bytes", opts.max_message_bytes, "largest message (match the server's)")
      ->envname("GEMM_MAX_MESSAGE_BYTES")->transform(CLI::AsSizeValue(false))->capture_default_str();

  std::string tls_ca_file, tls_cert_file, tls_key_file, token_file;
  app.add_flag("--tls", opts.use_tls, "use TLS, trusting the system's CAs (implied by --tls-ca/--tls-cert)")
      ->envname("GEMM_TLS");
  app.add_option("--tls-ca", tls_ca_file, "PEM CA that signed the server's certificate")->envname("GEMM_TLS_CA");
  app.add_option("--tls-cert", tls_cert_file, "PEM client certificate, for mutual TLS")->envname("GEMM_TLS_CERT");
  app.add_option("--tls-key", tls_key_file, "PEM key of --tls-cert")->envname("GEMM_TLS_KEY");
  app.add_option("--tls-server-name", opts.tls_server_name, "name to check the server's certificate against")
      ->envname("GEMM_TLS_SERVER_NAME");
  app.add_option("--token-file", token_file, "bearer token file (or set GEMM_TOKEN)")->envname("GEMM_TOKEN_FILE");

  auto* list = app.add_subcommand("list", "kernel steps, devices and limits of the server");

  std::string service;
  double wait = 0;
  auto* health = app.add_subcommand("health", "grpc.health.v1 check; exit 0 when SERVING");
  health->add_option("--service", service, "service name; empty = whole server");
  health->add_option("--wait", wait, "keep asking for up to this many seconds");

  gemmc::RunArgs run_args;
  auto* run = app.add_subcommand("run", "multiply once and print the report");
  run->add_option("--m", run_args.m, "rows of A and D")->capture_default_str();
  run->add_option("--n", run_args.n, "rows of B, columns of D")->capture_default_str();
  run->add_option("--k", run_args.k, "columns of A and B")->capture_default_str();
  run->add_option("--step", run_args.step, "kernel step: 0 vendor library, 1-10 the ladder")->capture_default_str();
  run->add_option("--seed", run_args.seed, "server-generated random inputs from this seed (default: fresh)");
  auto* a_opt = run->add_option("--a", run_args.a_file, "A from a raw little-endian file of --type (m*k elements)");
  auto* b_opt = run->add_option("--b", run_args.b_file, "B from a raw little-endian file of --type (n*k elements)");
  a_opt->needs(b_opt);
  b_opt->needs(a_opt);
  auto* a_handle = run->add_option("--a-handle", run_args.a_handle,
                                   "A: a stored matrix (m x k, or as --a-layout says), e.g. from upload");
  auto* b_handle =
      run->add_option("--b-handle", run_args.b_handle, "B: a stored matrix (n x k, or as --b-layout says)");
  a_handle->needs(b_handle)->excludes(a_opt);
  b_handle->needs(a_handle)->excludes(b_opt);
  run->add_option("--out", run_args.out_file, "write D (raw, in D's type) to this file");
  gemmc::AddFormOptions(run, &run_args.form, /*with_c=*/true);
  auto* no_verify = run->add_flag("--no-verify", run_args.no_verify, "skip the check against the reference");
  run->add_flag("--fast-verify", run_args.fast_verify,
                "VERIFICATION_FAST: check D by random projections and sampled elements instead of a second GEMM "
                "(docs/verification.md says what it catches)")
      ->excludes(no_verify);
  run->add_option("--repeats", run_args.repeats, "kernel runs; the report gives the median")->capture_default_str();
  run->add_option("--transport", run_args.transport,
                  "how file inputs travel: auto, inline (in the request), handle (chunked upload)")
      ->check(CLI::IsMember({"auto", "inline", "handle"}))->capture_default_str();
  run->add_option("--connections", run_args.connections,
                  "over this many TCP connections at once: A and B uploaded by handle side by side, and D stored "
                  "and fetched in as many ranges (one gRPC connection moves about 1.5 GB/s over loopback)")
      ->check(CLI::Range(1, 64))->capture_default_str();
  run->add_flag("--json", run_args.json, "print the reply as JSON");
  run->add_flag("--benchmark", run_args.benchmark,
                "time as gemm-bench does: L2 flushed and D poisoned before every repeat");

  int64_t rows = 0, cols = 0;
  std::string file, label, handle;
  std::string upload_type = "fp16";
  auto* upload = app.add_subcommand("upload", "upload a raw matrix in chunks; prints its handle");
  upload->add_option("--rows", rows)->required();
  upload->add_option("--cols", cols)->required();
  upload->add_option("--type", upload_type, "its element type")
      ->check(CLI::IsMember({"fp16", "bf16", "fp32", "fp8_e4m3", "fp8_e5m2"}))->capture_default_str();
  upload->add_option("--file", file)->required()->check(CLI::ExistingFile);
  upload->add_option("--label", label);
  bool transient = false;
  upload->add_flag("--transient", transient,
                   "keep it in the server's memory only, not in its matrix directory: quicker to store, lost when "
                   "the server restarts");
  auto* download = app.add_subcommand("download", "download a stored matrix to a raw file (in its type)");
  download->add_option("--handle", handle)->required();
  download->add_option("--out", file)->required();
  auto* del = app.add_subcommand("delete", "delete a stored matrix");
  del->add_option("--handle", handle)->required();
  auto* matrices = app.add_subcommand("matrices", "list stored matrices and the quota");

  gemmc::BenchArgs bench_args;
  auto* bench = app.add_subcommand("bench", "load test: throughput and latency percentiles");
  bench->add_option("--shapes", bench_args.shapes, "MxNxK,...")
      ->delimiter(',')->capture_default_str();
  bench->add_option("--steps", bench_args.steps, "steps to cycle through")->delimiter(',')->capture_default_str();
  bench->add_option("--concurrency", bench_args.concurrency, "requests in flight")
      ->check(CLI::Range(1, 4096))->capture_default_str();
  bench->add_option("--connections", bench_args.connections,
                    "TCP connections the requests are spread over; by default one per 4 requests in flight, at "
                    "most 8 (one gRPC connection is handled by one thread at a time on each side)")
      ->check(CLI::Range(1, 64))->default_str("auto");
  auto* dur = bench->add_option("--duration", bench_args.duration_seconds, "seconds to run (default 10)");
  auto* cnt = bench->add_option("--count", bench_args.count, "requests to send, instead of --duration");
  dur->excludes(cnt);
  bench->add_option("--repeats", bench_args.repeats, "kernel runs per request")->capture_default_str();
  bench->add_flag("--verify", bench_args.verify, "verify every result (slower)");
  bench->add_flag("--fast-verify", bench_args.fast_verify, "verify every result with VERIFICATION_FAST");
  auto* inline_flag = bench->add_flag(
      "--inline", bench_args.inline_data,
      "send A and B in each request and take D back in the reply (the matrices a seed makes, once per shape), "
      "instead of server-generated inputs and no D");
  bench->add_flag("--stored", bench_args.stored,
                  "upload A and B once per shape (the matrices a seed makes) and multiply by their handles in every "
                  "request, as a model server multiplies by its weights; deleted at the end")
      ->excludes(inline_flag);
  bench->add_flag("--benchmark", bench_args.benchmark,
                  "each request times as gemm-bench does: L2 flushed and D poisoned before every repeat");
  gemmc::AddFormOptions(bench, &bench_args.form, /*with_c=*/false);
  bench->add_option("--csv", bench_args.csv_file, "write per-(shape, step) results as CSV");
  bench->add_option("--json", bench_args.json_file, "write per-(shape, step) results as JSON");

  CLI11_PARSE(app, argc, argv);
  if (tls_cert_file.empty() != tls_key_file.empty()) {
    std::cerr << "error: --tls-cert and --tls-key go together\n";
    return 2;
  }
  for (auto [path, pem] : {std::pair{&tls_ca_file, &opts.tls_ca}, std::pair{&tls_cert_file, &opts.tls_cert},
                           std::pair{&tls_key_file, &opts.tls_key}}) {
    if (!path->empty() && !gemmc::ReadFile(*path, pem)) return std::cerr << "error: cannot read " << *path << "\n", 2;
  }
  if (const char* token = std::getenv("GEMM_TOKEN"); token != nullptr) opts.token = token;
  if (!token_file.empty()) {
    if (!gemmc::ReadFile(token_file, &opts.token)) return std::cerr << "error: cannot read " << token_file << "\n", 2;
    opts.token = gemmc::Trim(opts.token);
  }
  gemmc::GemmClient client(opts);
  if (*list) return gemmc::CmdList(client);
  if (*health) return gemmc::CmdHealth(client, service, wait);
  if (*run) return gemmc::CmdRun(client, run_args);
  if (*upload) return gemmc::CmdUpload(client, rows, cols, file, label, transient, upload_type);
  if (*download) return gemmc::CmdDownload(client, handle, file);
  if (*del) return gemmc::CmdDelete(client, handle);
  if (*matrices) return gemmc::CmdMatrices(client);
  if (*bench) return gemmc::CmdBench(client, bench_args);
  return 2;
}

// gemm-client's subcommands; each returns the process exit code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "form_options.h"
#include "gemm_client.h"

namespace gemmc {

// Whole file into `out`; false if it cannot be read.
bool ReadFile(const std::string& path, std::string* out);
// Without leading and trailing whitespace.
std::string Trim(const std::string& s);

struct RunArgs {
  int64_t m = 512, n = 512, k = 512;
  uint32_t step = 0;
  uint64_t seed = 0;  // 0: a fresh one
  std::string a_file, b_file, out_file;
  // Matrices stored earlier (by upload, or by anyone the caller may read):
  // multiplied by handle, left stored.
  std::string a_handle, b_handle;
  bool no_verify = false;
  bool fast_verify = false;  // VERIFICATION_FAST instead of the full check
  uint32_t repeats = 1;
  std::string transport = "auto";  // auto | inline | handle
  // With more than one: handles, A and B uploaded at once and D fetched in
  // this many ranges at once, each over a TCP connection of its own.
  uint32_t connections = 1;
  bool json = false;
  bool benchmark = false;  // gemm-bench's hygiene on the server: L2 flushed, D poisoned per repeat
  FormArgs form;           // types, layouts, alpha/beta/C, batch
};

struct BenchArgs {
  std::vector<std::string> shapes{"512x512x512"};
  std::vector<uint32_t> steps{0};
  uint32_t concurrency = 1;
  // TCP connections the requests are spread over; 0: AutoConnections.
  uint32_t connections = 0;
  double duration_seconds = 0;  // with count = 0: 10 s
  uint64_t count = 0;
  uint32_t repeats = 1;
  bool verify = false;
  bool fast_verify = false;  // implies verify
  bool benchmark = false;
  // A and B sent in each request and D returned in its reply, as a client
  // with its own data sends them, instead of server-generated inputs.
  bool inline_data = false;
  // A and B uploaded once per shape and multiplied by handle in every
  // request, as a model server multiplies by its weights.
  bool stored = false;
  std::string csv_file, json_file;
  FormArgs form;  // the same form in every request
};

int CmdList(GemmClient& client);
int CmdHealth(GemmClient& client, const std::string& service, double wait_seconds);
int CmdRun(GemmClient& client, const RunArgs& args);
int CmdUpload(GemmClient& client, int64_t rows, int64_t cols, const std::string& file, const std::string& label,
              bool transient, const std::string& type = "fp16");
int CmdDownload(GemmClient& client, const std::string& handle, const std::string& file);
int CmdDelete(GemmClient& client, const std::string& handle);
int CmdMatrices(GemmClient& client);
int CmdBench(GemmClient& client, const BenchArgs& args);

// Prints "<what>: 42% (1.2 of 2.9 GiB)" on stderr, live on a terminal.
Progress ProgressPrinter(const std::string& what);

// bench's connections when none are asked for: one per four requests in
// flight, at most eight. One gRPC connection is read and written by one
// thread at a time on each side, and caps a load test at that connection's
// rate, well under what the server answers (docs/service-path.md; on an
// H100 host 32 in flight ran 25K req/s over one, 35K over two, 42K over
// eight, and no more over sixteen). gRPC's performance guide advises a pool of
// channels for such load. One request in flight keeps one connection.
uint32_t AutoConnections(uint32_t concurrency);

// A Multiply of m×n×k on `step` with run's and bench's settings; its
// operands and output are the caller's to set.
gemm::v1::MultiplyRequest MultiplyRequestFor(int64_t m, int64_t n, int64_t k, uint32_t step, uint32_t repeats,
                                             bool benchmark, bool verify, bool fast = false);

// "512x384x256" -> m, n, k; false on a malformed string.
bool ParseShape(const std::string& text, int64_t* m, int64_t* n, int64_t* k);

}  // namespace gemmc

#include "commands.h"

#include <google/protobuf/util/json_util.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

namespace gemmc {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kReplyOverhead = 64 * 1024;

int Fail(const std::string& what, const grpc::Status& st) {
  std::cerr << "error: " << what << ": " << CodeName(st.error_code()) << ": " << st.error_message() << "\n";
  return 1;
}

std::string HumanBytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", b, units[u]);
  return buf;
}

bool WriteFile(const std::string& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(f);
}

void PrintReport(const gemm::v1::MultiplyResponse& r, const gemmc::ClientTiming& c, double round_trip) {
  const auto& s = r.shape();
  const auto& v = r.verification();
  const auto& t = r.timing();
  const std::string batch = r.batch_count() > 1 ? " x " + std::to_string(r.batch_count()) + " (a batch)" : "";
  std::printf("gemm %ldx%ldx%ld%s step %u on %s (%s engine), D %s\n", s.m(), s.n(), s.k(), batch.c_str(), r.step(),
              r.device().c_str(), r.engine().c_str(), TypeName(r.d_type()));
  if (v.performed() && v.mode() == gemm::v1::VERIFICATION_FAST) {
    std::printf("  verification  %s (fast: %u random vectors a side and %lu sampled elements; %lu failed, %lu "
                "non-finite;\n                worst row or column at %.2f of its bound; sure to catch one element "
                "off by more than %.3g; reference %s)\n",
                v.passed() ? "PASSED" : "FAILED", v.sketch_vectors(), v.elements(), v.mismatches(), v.non_finite(),
                v.worst_line_ratio(), v.sure_error(), v.reference().c_str());
  } else if (v.performed()) {
    // The bound's K-aware term, where it is not negligible (docs/verification.md).
    char accumulation[48] = "";
    if (v.accumulation_atol() >= 5e-4) std::snprintf(accumulation, sizeof accumulation, " + %.3g", v.accumulation_atol());
    std::printf("  verification  %s: max |err| %.3g, %lu of %lu elements out of tolerance, %lu non-finite\n"
                "                (|d-ref| <= %.3g + %.3g*|ref|%s; reference %s)\n",
                v.passed() ? "PASSED" : "FAILED", v.max_abs_error(), v.mismatches(), v.elements(), v.non_finite(),
                v.atol(), v.rtol(), accumulation, v.reference().c_str());
  } else {
    std::printf("  verification  skipped\n");
  }
  std::printf("  kernel        %.4f ms (median of %u), %.3f TFLOPS", t.kernel_seconds() * 1e3, t.repeats(),
              r.tflops());
  if (r.sm_clock_mhz() > 0) std::printf(", SM clock %u MHz", r.sm_clock_mhz());
  std::printf("\n");
  const double server_phases = t.prepare_seconds() + t.queue_seconds() + t.upload_seconds() + t.compute_seconds() +
                               t.download_seconds() + t.reply_seconds();
  std::printf("  server        prepare %.3f, queue %.3f, upload %.3f, compute %.3f (kernel %.3f x %u, verify %.3f), "
              "download %.3f, reply %.3f: %.3f of its total %.3f ms\n",
              t.prepare_seconds() * 1e3, t.queue_seconds() * 1e3, t.upload_seconds() * 1e3,
              t.compute_seconds() * 1e3, t.kernel_seconds() * 1e3, t.repeats(), t.verify_seconds() * 1e3,
              t.download_seconds() * 1e3, t.reply_seconds() * 1e3, server_phases * 1e3, t.total_seconds() * 1e3);
  std::printf("  client        serialize %.3f, call %.3f (gRPC and network: the call less the server's total, "
              "%.3f), deserialize %.3f ms\n",
              c.serialize_seconds * 1e3, c.call_seconds * 1e3, (c.call_seconds - t.total_seconds()) * 1e3,
              c.deserialize_seconds * 1e3);
  std::printf("  round trip    %.3f ms\n", round_trip * 1e3);
  if (!r.d_handle().empty()) std::printf("  D handle      %s\n", r.d_handle().c_str());
}

}  // namespace

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  *out = std::move(ss).str();
  return true;
}

std::string Trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

Progress ProgressPrinter(const std::string& what) {
  const bool tty = isatty(STDERR_FILENO);
  auto last_quarter = std::make_shared<int>(-1);
  auto start = Clock::now();
  return [=](uint64_t done, uint64_t total) {
    if (total == 0) return;
    const int pct = static_cast<int>(100.0 * done / total);
    const double secs = std::chrono::duration<double>(Clock::now() - start).count();
    const std::string rate = secs > 0 ? HumanBytes(done / secs) + "/s" : "";
    if (tty) {
      std::fprintf(stderr, "\r%s: %3d%% (%s of %s, %s)   ", what.c_str(), pct, HumanBytes(done).c_str(),
                   HumanBytes(total).c_str(), rate.c_str());
      if (done == total) std::fprintf(stderr, "\n");
    } else if (pct / 25 != *last_quarter) {  // logs get a line per quarter
      *last_quarter = pct / 25;
      std::fprintf(stderr, "%s: %d%% (%s of %s)\n", what.c_str(), pct, HumanBytes(done).c_str(),
                   HumanBytes(total).c_str());
    }
  };
}

gemm::v1::MultiplyRequest MultiplyRequestFor(int64_t m, int64_t n, int64_t k, uint32_t step, uint32_t repeats,
                                             bool benchmark, bool verify, bool fast) {
  gemm::v1::MultiplyRequest req;
  req.mutable_shape()->set_m(m);
  req.mutable_shape()->set_n(n);
  req.mutable_shape()->set_k(k);
  req.set_step(step);
  req.set_repeats(repeats);
  req.set_benchmark(benchmark);
  req.set_verification(!verify ? gemm::v1::VERIFICATION_NONE
                               : fast  ? gemm::v1::VERIFICATION_FAST
                                       : gemm::v1::VERIFICATION_FULL);
  return req;
}

bool ParseShape(const std::string& text, int64_t* m, int64_t* n, int64_t* k) {
  char x1 = 0, x2 = 0;
  std::istringstream in(text);
  long long a = 0, b = 0, c = 0;
  if (!(in >> a >> x1 >> b >> x2 >> c) || x1 != 'x' || x2 != 'x' || !in.eof()) return false;
  *m = a;
  *n = b;
  *k = c;
  return true;
}

int CmdList(GemmClient& client) {
  gemm::v1::ListKernelsResponse r;
  if (auto st = client.ListKernels(&r); !st.ok()) return Fail("ListKernels", st);
  std::printf("gemmd %s, %s engine\n\nsteps:\n", r.server_version().c_str(), r.engine().c_str());
  for (const auto& k : r.kernels()) {
    std::string limits;
    if (k.limits().max_m()) limits += " m<=" + std::to_string(k.limits().max_m());
    if (k.limits().max_n()) limits += " n<=" + std::to_string(k.limits().max_n());
    if (k.limits().max_k()) limits += " k<=" + std::to_string(k.limits().max_k());
    std::printf("  %2u %-17s %-13s %s%s\n", k.step(), k.name().c_str(), k.available() ? "available" : "unavailable",
                k.description().c_str(), limits.empty() ? "" : (" [" + limits.substr(1) + "]").c_str());
    if (!k.available()) std::printf("     %-17s %s\n", "", k.unavailable_reason().c_str());
    if (!k.poor_fit().empty()) std::printf("     %-17s poor fit: %s\n", "", k.poor_fit().c_str());
  }
  std::printf("\ndevices:\n");
  for (const auto& d : r.devices()) {
    std::string steps;
    for (auto s : d.available_steps()) steps += (steps.empty() ? "" : ",") + std::to_string(s);
    std::printf("  %-8s %-40s %s %s, %s, steps %s\n", d.id().c_str(), d.name().c_str(), d.kind().c_str(),
                d.arch().c_str(), d.healthy() ? "healthy" : "UNHEALTHY", steps.c_str());
  }
  const auto& l = r.limits();
  std::printf("\nlimits: max dim %ld, max request %s, max message %s, matrix quota %s, max repeats %u, queue %u\n",
              l.max_dim(), HumanBytes(l.max_request_bytes()).c_str(), HumanBytes(l.max_message_bytes()).c_str(),
              HumanBytes(l.matrix_quota_bytes()).c_str(), l.max_repeats(), l.queue_capacity());
  return 0;
}

int CmdHealth(GemmClient& client, const std::string& service, double wait_seconds) {
  const auto until = Clock::now() + std::chrono::duration<double>(wait_seconds);
  for (;;) {
    grpc::health::v1::HealthCheckResponse::ServingStatus status{};
    grpc::Status st = client.Health(service, &status);
    if (st.ok() && status == grpc::health::v1::HealthCheckResponse::SERVING) {
      std::printf("SERVING\n");
      return 0;
    }
    if (Clock::now() >= until) {
      if (!st.ok()) return Fail("health", st);
      std::printf("%s\n", grpc::health::v1::HealthCheckResponse::ServingStatus_Name(status).c_str());
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

int CmdRun(GemmClient& client, const RunArgs& a) {
  gemm::v1::ListKernelsResponse kernels;
  if (auto st = client.ListKernels(&kernels); !st.ok()) return Fail("ListKernels", st);
  const uint64_t max_message = std::min(kernels.limits().max_message_bytes(), client.options().max_message_bytes);

  gemm::v1::MultiplyRequest req =
      MultiplyRequestFor(a.m, a.n, a.k, a.step, a.repeats, a.benchmark, !a.no_verify, a.fast_verify);
  gemm::GemmForm form;
  if (auto err = ApplyForm(a.form, &req, &form); !err.empty()) return std::cerr << "error: " << err << "\n", 2;
  const gemm::OperandStorage a_storage = gemm::StorageOfA(form, a.m, a.k), b_storage = gemm::StorageOfB(form, a.n, a.k);

  // The connections beyond the caller's, when asked for.
  const auto own = OwnConnections(client, a.connections - 1);
  std::vector<GemmClient*> clients{&client};
  for (const auto& c : own) clients.push_back(c.get());
  const bool parallel = clients.size() > 1;
  // Connected before the clock starts, as the bare-gRPC floor's are.
  for (GemmClient* c : clients) {
    c->channel()->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10));
  }
  auto start = Clock::now();  // the exchange: uploads, the Multiply, D's download
  double upload_seconds = 0, download_seconds = 0, end_to_end = 0;

  std::vector<std::string> uploaded;  // handles to delete afterwards
  if (!a.a_handle.empty()) {
    req.mutable_a()->set_handle(a.a_handle);
    req.mutable_b()->set_handle(a.b_handle);
  } else if (!a.a_file.empty()) {
    std::string abytes, bbytes;
    if (!ReadFile(a.a_file, &abytes)) return std::cerr << "error: cannot read " << a.a_file << "\n", 2;
    if (!ReadFile(a.b_file, &bbytes)) return std::cerr << "error: cannot read " << a.b_file << "\n", 2;
    const bool inline_fits = abytes.size() + bbytes.size() + kReplyOverhead <= max_message;
    start = Clock::now();  // the files are read
    if (a.transport == "inline" || (a.transport == "auto" && inline_fits && !parallel)) {
      req.mutable_a()->set_data(std::move(abytes));
      req.mutable_b()->set_data(std::move(bbytes));
    } else {
      // Each operand in row blocks, the connections shared between A and B,
      // every block uploaded at once on a connection of its own; a progress
      // line only when there is one upload at a time.
      const auto t = Clock::now();
      struct Block {
        const char* name;
        gemm::v1::Operand* op;  // named by this block's handle
        bool alone;             // the operand's only block: a plain handle
        int64_t rows, cols;
        gemm::v1::ElementType type;
        std::string_view bytes;
        GemmClient* via;
        gemm::v1::MatrixInfo info;
        grpc::Status status;
      };
      std::vector<Block> blocks;
      const size_t a_blocks = std::max<size_t>(1, clients.size() / 2);
      const size_t b_blocks = std::max<size_t>(1, clients.size() - a_blocks);
      for (auto [name, op, storage, bytes, count] : {std::tuple{"A", req.mutable_a(), a_storage, &abytes, a_blocks},
                                                    std::tuple{"B", req.mutable_b(), b_storage, &bbytes, b_blocks}}) {
        const int64_t rows = storage.StoredRows(form.batch), cols = storage.cols;
        if (rows == 0) {
          return std::cerr << "error: " << name << "'s batch stride is not a whole number of its rows; send it "
                           << "inline (--transport inline)\n", 2;
        }
        count = std::min<size_t>(count, static_cast<size_t>(rows));
        const int64_t row_bytes = cols * static_cast<int64_t>(gemm::ElementBytes(storage.type));
        for (size_t i = 0; i < count; ++i) {
          const int64_t r0 = rows * static_cast<int64_t>(i) / static_cast<int64_t>(count);
          const int64_t r1 = rows * static_cast<int64_t>(i + 1) / static_cast<int64_t>(count);
          blocks.push_back({name, op, count == 1, r1 - r0, cols, ToProtoType(storage.type),
                            std::string_view(*bytes).substr(r0 * row_bytes, (r1 - r0) * row_bytes),
                            clients[blocks.size() % clients.size()], {}, {}});
        }
      }
      // Scratch, deleted once D is here: kept in the server's memory only,
      // not written to its matrix directory (on a server that keeps one,
      // durable blocks took 4096^3 over four connections from 25-42 ms to
      // 86-116 on an H100 host).
      const auto upload = [&](Block& b) {
        gemm::v1::MatrixHeader header;
        header.set_rows(b.rows);
        header.set_cols(b.cols);
        header.set_type(b.type);
        header.set_label(std::string(b.name) + " of gemm-client run");
        header.set_transient(true);
        b.status = b.via->Upload(header, b.bytes, &b.info,
                                 parallel ? Progress{} : ProgressPrinter(std::string("upload ") + b.name));
      };
      if (parallel) {
        std::vector<std::thread> threads;
        for (size_t i = 1; i < blocks.size(); ++i) threads.emplace_back(upload, std::ref(blocks[i]));
        upload(blocks[0]);
        for (auto& th : threads) th.join();
      } else {
        for (Block& b : blocks) upload(b);
      }
      upload_seconds = std::chrono::duration<double>(Clock::now() - t).count();
      for (const Block& b : blocks) {
        if (b.status.ok()) uploaded.push_back(b.info.handle());
      }
      for (const Block& b : blocks) {
        if (!b.status.ok()) {
          for (const auto& h : uploaded) client.Delete(h);
          return Fail(std::string("upload ") + b.name, b.status);
        }
      }
      for (const Block& b : blocks) {  // in row order within each operand
        if (b.alone) {
          b.op->set_handle(b.info.handle());
        } else {
          b.op->mutable_row_blocks()->add_handles(b.info.handle());
        }
      }
    }
  } else {
    const uint64_t seed = a.seed ? a.seed : std::random_device{}();
    req.mutable_a()->mutable_random()->set_seed(seed);
    req.mutable_b()->mutable_random()->set_seed(seed);
  }
  if (form.ReadsC()) {  // C: a stored matrix, a file (inline, or uploaded when too big), or generated
    if (!a.form.c_handle.empty()) {
      req.mutable_c()->set_handle(a.form.c_handle);
    } else if (!a.form.c_file.empty()) {
      std::string cbytes;
      if (!ReadFile(a.form.c_file, &cbytes)) return std::cerr << "error: cannot read " << a.form.c_file << "\n", 2;
      if (cbytes.size() + req.ByteSizeLong() + kReplyOverhead <= max_message) {
        req.mutable_c()->set_data(std::move(cbytes));
      } else {
        gemm::v1::MatrixHeader header;
        const gemm::OperandStorage c_storage = gemm::StorageOfC(form, a.m, a.n);
        const int64_t rows = c_storage.StoredRows(form.batch);
        if (rows == 0) return std::cerr << "error: C's batch stride is not a whole number of its rows\n", 2;
        header.set_rows(rows);
        header.set_cols(c_storage.cols);
        header.set_type(ToProtoType(c_storage.type));
        header.set_label("C of gemm-client run");
        header.set_transient(true);
        gemm::v1::MatrixInfo info;
        if (auto st = client.Upload(header, cbytes, &info, ProgressPrinter("upload C")); !st.ok()) {
          for (const auto& h : uploaded) client.Delete(h);
          return Fail("upload C", st);
        }
        uploaded.push_back(info.handle());
        req.mutable_c()->set_handle(info.handle());
      }
    } else {
      req.mutable_c()->mutable_random()->set_seed(a.seed ? a.seed : std::random_device{}());
    }
  }
  const uint64_t d_bytes =
      static_cast<uint64_t>(form.batch) * static_cast<uint64_t>(a.m) * a.n * gemm::ElementBytes(form.d);
  if (!a.out_file.empty()) {
    const bool d_fits = d_bytes + kReplyOverhead <= max_message;
    req.set_output(d_fits && !parallel ? gemm::v1::OUTPUT_INLINE : gemm::v1::OUTPUT_HANDLE);
    req.set_transient_output(req.output() == gemm::v1::OUTPUT_HANDLE);  // downloaded, then deleted
  }

  gemm::v1::MultiplyResponse resp;
  gemmc::ClientTiming client_timing;
  gemmc::MatrixBytes d_inline;  // an inline D, gathered by several threads
  const auto t0 = Clock::now();
  grpc::Status st = client.MultiplyTimed(req, &resp, &client_timing, &d_inline);
  const double round_trip = std::chrono::duration<double>(Clock::now() - t0).count();
  end_to_end = std::chrono::duration<double>(Clock::now() - start).count();
  // A's and B's blocks go once D is here, off the timed path, on every way out.
  struct DeleteOnExit {
    GemmClient& client;
    const std::vector<std::string>& handles;
    ~DeleteOnExit() {
      for (const auto& h : handles) client.Delete(h);
    }
  } delete_inputs{client, uploaded};
  if (!st.ok()) return Fail("Multiply", st);

  if (!a.out_file.empty()) {
    std::string d;
    std::unique_ptr<char[]> d_ranges;  // untouched memory, for DownloadParallel
    std::string_view d_bytes_got = d_inline.view();
    if (!resp.d_handle().empty()) {
      const auto t = Clock::now();
      if (parallel) d_ranges.reset(new char[d_bytes]);
      const grpc::Status dst = parallel ? DownloadParallel(clients, resp.d_handle(), d_bytes, d_ranges.get())
                                        : client.Download(resp.d_handle(), &d, nullptr, ProgressPrinter("download D"));
      d_bytes_got = parallel ? std::string_view(d_ranges.get(), d_bytes) : std::string_view(d);
      download_seconds = std::chrono::duration<double>(Clock::now() - t).count();
      client.Delete(resp.d_handle());
      if (!dst.ok()) return Fail("download D", dst);
      resp.clear_d_handle();
    }
    end_to_end = std::chrono::duration<double>(Clock::now() - start).count();
    if (!WriteFile(a.out_file, d_bytes_got)) return std::cerr << "error: cannot write " << a.out_file << "\n", 2;
  }
  if (a.json) {
    resp.clear_d();
    std::string json;
    google::protobuf::util::JsonPrintOptions o;
    o.add_whitespace = true;
    o.always_print_primitive_fields = true;
    (void)google::protobuf::util::MessageToJsonString(resp, &json, o);
    // The client's own phases join the reply's fields, as one object.
    const size_t end = json.rfind('}');
    char client_json[512];
    std::snprintf(client_json, sizeof(client_json),
                  ",\n \"client\": {\"serializeSeconds\": %.9f, \"callSeconds\": %.9f, "
                  "\"deserializeSeconds\": %.9f, \"roundTripSeconds\": %.9f, \"connections\": %zu, "
                  "\"uploadSeconds\": %.9f, \"downloadSeconds\": %.9f, \"endToEndSeconds\": %.9f}\n",
                  client_timing.serialize_seconds, client_timing.call_seconds, client_timing.deserialize_seconds,
                  round_trip, clients.size(), upload_seconds, download_seconds, end_to_end);
    if (end != std::string::npos) json.insert(end, client_json);
    std::printf("%s", json.c_str());
  } else {
    PrintReport(resp, client_timing, round_trip);
    if (upload_seconds > 0 || download_seconds > 0) {
      std::printf("  end to end    %.3f ms: uploads %.3f, the Multiply %.3f, D's download %.3f (%zu connection%s)\n",
                  end_to_end * 1e3, upload_seconds * 1e3, round_trip * 1e3, download_seconds * 1e3, clients.size(),
                  clients.size() == 1 ? "" : "s");
    }
  }
  return resp.verification().performed() && !resp.verification().passed() ? 3 : 0;
}

int CmdUpload(GemmClient& client, int64_t rows, int64_t cols, const std::string& file, const std::string& label,
              bool transient, const std::string& type) {
  std::string bytes;
  if (!ReadFile(file, &bytes)) return std::cerr << "error: cannot read " << file << "\n", 2;
  gemm::v1::MatrixHeader header;
  gemm::v1::ElementType element = gemm::v1::FP16;
  if (!ParseElementType(type, &element)) return std::cerr << "error: unknown --type " << type << "\n", 2;
  header.set_type(element);
  header.set_rows(rows);
  header.set_cols(cols);
  header.set_label(label);
  header.set_transient(transient);
  gemm::v1::MatrixInfo info;
  if (auto st = client.Upload(header, bytes, &info, ProgressPrinter("upload")); !st.ok()) {
    return Fail("upload", st);
  }
  std::printf("%s\n", info.handle().c_str());
  return 0;
}

int CmdDownload(GemmClient& client, const std::string& handle, const std::string& file) {
  std::string bytes;
  gemm::v1::MatrixInfo info;
  if (auto st = client.Download(handle, &bytes, &info, ProgressPrinter("download")); !st.ok()) {
    return Fail("download", st);
  }
  if (!WriteFile(file, bytes)) return std::cerr << "error: cannot write " << file << "\n", 2;
  std::printf("%s: %ldx%ld %s, %s -> %s\n", handle.c_str(), info.rows(), info.cols(), TypeName(info.type()),
              HumanBytes(info.bytes()).c_str(), file.c_str());
  return 0;
}

int CmdDelete(GemmClient& client, const std::string& handle) {
  uint64_t freed = 0;
  if (auto st = client.Delete(handle, &freed); !st.ok()) return Fail("delete", st);
  std::printf("deleted %s (%s freed)\n", handle.c_str(), HumanBytes(freed).c_str());
  return 0;
}

int CmdMatrices(GemmClient& client) {
  gemm::v1::ListMatricesResponse r;
  if (auto st = client.ListMatrices(&r); !st.ok()) return Fail("ListMatrices", st);
  for (const auto& m : r.matrices()) {
    std::printf("%s  %ldx%ld %s  %s%s  %s\n", m.handle().c_str(), m.rows(), m.cols(), TypeName(m.type()),
                HumanBytes(m.bytes()).c_str(), m.transient() ? "  transient" : "", m.label().c_str());
  }
  std::printf("%d matrices, %s of %s quota used\n", r.matrices_size(), HumanBytes(r.used_bytes()).c_str(),
              HumanBytes(r.quota_bytes()).c_str());
  return 0;
}

}  // namespace gemmc

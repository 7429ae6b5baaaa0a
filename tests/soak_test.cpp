// A soak across faults, on one machine: two gemmd replicas (127.0.0.1 and
// 127.0.0.2, one port) behind a dns:// name that resolves to both, and
// clients sending verified Multiply requests, inline through the name and by
// handle to the replica that holds the handle. Meanwhile one replica is
// killed with SIGKILL and restarted on the same --matrix-dir, then each in
// turn gets a SIGTERM rolling restart. At the end every request succeeded
// verified (D checked here too, against an fp64 reference), at once or after
// retries; every acknowledged upload is still served byte for byte (a
// handle client checks the B it replaces, then deletes it, as a real client
// would, so the store stays small at any request rate); and each replica's
// memory stayed under the bound and grew by at most the growth bound over
// each of its starts.
//
// Environment (CI runs the defaults; scripts/gpu/run.sh a longer one):
//   GEMMD_SOAK_SECONDS (12), GEMMD_SOAK_CLIENTS (6), GEMMD_SOAK_ENGINE (cpu),
//   GEMMD_SOAK_STEPS (0; e.g. 0,10 on a GPU), GEMMD_SOAK_RSS_MIB (256),
//   GEMMD_SOAK_RSS_GROWTH_MIB (64).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "gemm_client.h"
#include "gemmd_process.h"
#include "loopback_dns.h"
#include "test_util.h"

namespace gemmd::testing {
namespace {

using Clock = std::chrono::steady_clock;
using gemm::v1::MultiplyRequest;
using gemm::v1::MultiplyResponse;

std::string Env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

struct SoakConfig {
  double seconds = std::stod(Env("GEMMD_SOAK_SECONDS", "12"));
  int clients = std::stoi(Env("GEMMD_SOAK_CLIENTS", "6"));
  std::string engine = Env("GEMMD_SOAK_ENGINE", "cpu");
  std::vector<uint32_t> steps = [] {
    std::vector<uint32_t> out;
    std::stringstream list(Env("GEMMD_SOAK_STEPS", "0"));
    for (std::string s; std::getline(list, s, ',');) out.push_back(static_cast<uint32_t>(std::stoul(s)));
    return out;
  }();
  double rss_bound_mib = std::stod(Env("GEMMD_SOAK_RSS_MIB", "256"));
  double rss_growth_mib = std::stod(Env("GEMMD_SOAK_RSS_GROWTH_MIB", "64"));
};

// What the clients saw, over the whole soak.
struct Tally {
  std::atomic<int64_t> requests{0}, first_try{0}, after_retries{0}, grpc_retries{0}, client_retries{0};
  std::atomic<int64_t> uploads{0}, replaced_intact{0};
  std::mutex mu;
  std::vector<std::string> failures;
  const Clock::time_point start = Clock::now();
  void Fail(std::string what) {
    char at[32];
    std::snprintf(at, sizeof(at), "at %.2f s: ", std::chrono::duration<double>(Clock::now() - start).count());
    std::lock_guard lock(mu);
    failures.push_back(at + std::move(what));
  }
};

// Retries what the server did not do (down, draining, queue full, or
// cancelled unrun by a shutdown: gemm_client.h) with exponential backoff
// and jitter, for up to a minute, longer than a restart: gRPC's own retries
// stop once its throttling budget is spent, as in a burst of failures.
template <typename Call>
grpc::Status Persist(Call call, Tally* tally, std::mt19937* rng, bool* retried) {
  const auto give_up = Clock::now() + std::chrono::seconds(60);
  double backoff_s = 0.05;
  for (;;) {
    grpc::Status st = call();
    const bool transient = st.error_code() == grpc::StatusCode::UNAVAILABLE ||
                           st.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED ||
                           st.error_code() == grpc::StatusCode::CANCELLED;
    if (st.ok() || !transient || Clock::now() > give_up) return st;
    *retried = true;
    ++tally->client_retries;
    std::this_thread::sleep_for(std::chrono::duration<double>(backoff_s * std::uniform_real_distribution(0.5, 1.5)(*rng)));
    backoff_s = std::min(backoff_s * 2, 1.0);
  }
}

// A port free on both loopback addresses, below Linux's ephemeral range
// (32768 and up), so that no other test's port-0 server takes it while a
// replica is down between its kill and its restart.
int FreePortOutsideTheEphemeralRange() {
  std::mt19937 rng(static_cast<uint32_t>(getpid()) ^ static_cast<uint32_t>(Clock::now().time_since_epoch().count()));
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int port = std::uniform_int_distribution(20000, 32000)(rng);
    bool free = true;
    for (const char* address : {"127.0.0.1", "127.0.0.2"}) {
      const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in sa{};
      sa.sin_family = AF_INET;
      sa.sin_port = htons(static_cast<uint16_t>(port));
      inet_pton(AF_INET, address, &sa.sin_addr);
      free &= fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0;
      if (fd >= 0) close(fd);
    }
    if (free) return port;
  }
  throw std::runtime_error("no free port below 32000 on 127.0.0.1 and 127.0.0.2");
}

class Replica {
 public:
  Replica(std::string address, const SoakConfig& config, const std::filesystem::path& work)
      : address_(std::move(address)), config_(config), work_(work), dir_(work / ("store-" + address_)) {}

  // Every start of either replica uses the one port the DNS name carries.
  void Start(int port) {
    port_ = port;
    const std::string port_file = (work_ / ("port-" + address_)).string();
    std::filesystem::remove(port_file);
    process_ = std::make_unique<GemmdProcess>(
        std::vector<std::string>{"--engine", config_.engine, "--listen", address_ + ":" + std::to_string(port),
                                 "--metrics-listen", "", "--port-file", port_file, "--matrix-dir", dir_.string(),
                                 "--shutdown-grace-seconds", "10", "--log-level", "warn"},
        (work_ / ("log-" + address_)).string());
    process_->Start();
    started_rss_mib_ = -1;
    const auto give_up = Clock::now() + std::chrono::seconds(120);
    for (;;) {
      std::ifstream in(port_file);
      if (in >> port_ && port_ > 0) break;
      if (Clock::now() > give_up) throw std::runtime_error(address_ + " did not start: " + process_->LogTail(10));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    gemmc::GemmClient probe({.target = target(), .timeout_seconds = 2});
    for (;;) {
      grpc::health::v1::HealthCheckResponse::ServingStatus serving{};
      if (probe.Health("", &serving).ok() && serving == grpc::health::v1::HealthCheckResponse::SERVING) break;
      if (Clock::now() > give_up) throw std::runtime_error(address_ + " is not serving: " + process_->LogTail(10));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  int Stop(int signal) { return process_->Stop(signal); }
  // The first sample after a start is that start's baseline: what a warm
  // server holds (on a GPU, its CUDA context and pinned staging).
  void SampleMemory() {
    const double rss = process_->RssMiB();
    if (started_rss_mib_ < 0) started_rss_mib_ = rss;
    max_rss_mib_ = std::max(max_rss_mib_, rss);
    max_growth_mib_ = std::max(max_growth_mib_, rss - started_rss_mib_);
  }

  std::string target() const { return "ipv4:" + address_ + ":" + std::to_string(port_); }
  int port() const { return port_; }
  double max_rss_mib() const { return max_rss_mib_; }
  double max_growth_mib() const { return max_growth_mib_; }
  std::string LogTail() const { return process_->LogTail(20); }

 private:
  std::string address_;
  const SoakConfig& config_;
  std::filesystem::path work_, dir_;
  std::unique_ptr<GemmdProcess> process_;
  int port_ = 0;
  double max_rss_mib_ = 0, max_growth_mib_ = 0, started_rss_mib_ = -1;
};

// One stored matrix as the client knows it: where, and what it must hold.
struct Stored {
  int replica;
  std::string handle, bytes;
};

class SoakTest : public ::testing::Test {
 protected:
  void SetUp() override {
    work_ = std::filesystem::temp_directory_path() / ("gemmd-soak-" + std::to_string(getpid()));
    std::filesystem::create_directories(work_);
    replicas_.push_back(std::make_unique<Replica>("127.0.0.1", config_, work_));
    replicas_.push_back(std::make_unique<Replica>("127.0.0.2", config_, work_));
    const int port = FreePortOutsideTheEphemeralRange();
    replicas_[0]->Start(port);
    replicas_[1]->Start(port);
    dns_ = std::make_unique<LoopbackDns>("gemmd.soak.test", std::vector<std::string>{"127.0.0.1", "127.0.0.2"});
  }
  void TearDown() override {
    replicas_.clear();
    std::filesystem::remove_all(work_);
  }

  // The i-th request of a client: D inline, the steps taking turns.
  MultiplyRequest Request(int64_t m, int64_t n, int64_t k, int i) const {
    MultiplyRequest req;
    req.mutable_shape()->set_m(m);
    req.mutable_shape()->set_n(n);
    req.mutable_shape()->set_k(k);
    req.set_step(config_.steps[i % config_.steps.size()]);
    req.set_output(gemm::v1::OUTPUT_INLINE);
    return req;
  }

  // Inline A and B through the DNS name: whichever replica round_robin picks.
  void InlineClient(int id, const std::atomic<bool>& stop) {
    gemmc::GemmClient client({.target = dns_->Target(replicas_[0]->port()), .timeout_seconds = 30});
    std::mt19937 rng(1000 + id);
    for (int i = 0; !stop; ++i) {
      std::uniform_int_distribution<int64_t> dim(8, 96);
      const int64_t m = dim(rng), n = dim(rng), k = dim(rng);
      MultiplyRequest req = Request(m, n, k, i);
      req.mutable_a()->set_data(RandomHalfBytes(m, k, rng()));
      req.mutable_b()->set_data(RandomHalfBytes(n, k, rng()));
      Check(client, req, ReferenceGemm(ToDouble(req.a().data()), ToDouble(req.b().data()), m, n, k), &rng,
            "inline client " + std::to_string(id));
    }
  }

  // A and B uploaded to one replica and used by handle there; every few
  // requests a fresh B is uploaded, so uploads and kills overlap.
  void HandleClient(int id, const std::atomic<bool>& stop) {
    const int replica = (id / 2) % 2;
    gemmc::GemmClient client({.target = replicas_[replica]->target(), .timeout_seconds = 30});
    std::mt19937 rng(2000 + id);
    const int64_t m = 72, n = 40 + 8 * id, k = 56;
    auto upload = [&](int64_t rows, int64_t cols) -> const Stored* {
      std::string bytes = RandomHalfBytes(rows, cols, rng());
      gemm::v1::MatrixInfo info;
      bool retried = false;
      // A stream cut by a kill is not acknowledged: the whole upload goes again.
      const grpc::Status st = Persist([&] { return client.Upload(rows, cols, bytes, "soak", &info); }, &tally_,
                                      &rng, &retried);
      if (!st.ok()) {
        tally_.Fail("upload on replica " + std::to_string(replica) + ": " + st.error_message());
        return nullptr;
      }
      ++tally_.uploads;
      std::lock_guard lock(stored_mu_);
      stored_.push_back(std::make_unique<Stored>(Stored{replica, info.handle(), std::move(bytes)}));
      return stored_.back().get();
    };
    // The B being replaced, byte for byte, then deleted. A retried delete
    // may find the handle gone: its first attempt deleted it, and a kill
    // took the reply (then gRPC's own policy retried it).
    auto retire = [&](const Stored* old) {
      std::string back;
      bool retried = false;
      grpc::Status st = Persist([&] { return client.Download(old->handle, &back); }, &tally_, &rng, &retried);
      if (!st.ok() || back != old->bytes) {
        return tally_.Fail("replaced B " + old->handle + " on replica " + std::to_string(replica) + ": " +
                           (st.ok() ? "came back different" : st.error_message()));
      }
      ++tally_.replaced_intact;
      retried = false;
      st = Persist(
          [&] {
            int retries = 0;
            grpc::Status s = client.Delete(old->handle, nullptr, &retries);
            tally_.grpc_retries += retries;
            retried |= retries > 0;
            return s;
          },
          &tally_, &rng, &retried);
      if (!st.ok() && !(retried && st.error_code() == grpc::StatusCode::NOT_FOUND)) {
        return tally_.Fail("deleting " + old->handle + ": " + st.error_message());
      }
      std::lock_guard lock(stored_mu_);
      std::erase_if(stored_, [&](const auto& s) { return s.get() == old; });
    };
    const Stored* a = upload(m, k);
    const Stored* b = upload(n, k);
    for (int i = 0; a != nullptr && b != nullptr && !stop; ++i) {
      if (i > 0 && i % 8 == 0) {
        const Stored* old = b;
        if ((b = upload(n, k)) == nullptr) break;
        retire(old);
      }
      MultiplyRequest req = Request(m, n, k, i);
      req.mutable_a()->set_handle(a->handle);
      req.mutable_b()->set_handle(b->handle);
      Check(client, req, ReferenceGemm(ToDouble(a->bytes), ToDouble(b->bytes), m, n, k), &rng,
            "handle client " + std::to_string(id));
    }
  }

  void Check(gemmc::GemmClient& client, const MultiplyRequest& req, const std::vector<double>& ref,
             std::mt19937* rng, const std::string& who) {
    ++tally_.requests;
    MultiplyResponse resp;
    bool retried = false;
    const grpc::Status st = Persist(
        [&] {
          int retries = 0;
          grpc::Status s = client.Multiply(req, &resp, &retries);
          tally_.grpc_retries += retries;
          retried |= retries > 0;
          return s;
        },
        &tally_, rng, &retried);
    if (!st.ok()) return tally_.Fail(who + ": " + gemmc::CodeName(st.error_code()) + " " + st.error_message());
    if (!resp.verification().passed()) return tally_.Fail(who + ": the server's verification failed");
    if (const int64_t bad = CountMismatches(resp.d(), ref); bad != 0) {
      return tally_.Fail(who + ": " + std::to_string(bad) + " elements of D differ from the fp64 reference");
    }
    ++(retried ? tally_.after_retries : tally_.first_try);
  }

  // Waits `seconds` while sampling each replica's memory.
  void Soak(double seconds) {
    const auto until = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < until) {
      for (auto& r : replicas_) r->SampleMemory();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  SoakConfig config_;
  std::filesystem::path work_;
  std::vector<std::unique_ptr<Replica>> replicas_;
  std::unique_ptr<LoopbackDns> dns_;
  Tally tally_;
  std::mutex stored_mu_;
  std::vector<std::unique_ptr<Stored>> stored_;
};

TEST_F(SoakTest, NothingIsLostAcrossAKillAndRollingRestarts) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int id = 0; id < config_.clients; ++id) {
    clients.emplace_back([this, id, &stop] { id % 2 == 0 ? InlineClient(id, stop) : HandleClient(id, stop); });
  }
  const double T = config_.seconds;
  std::vector<std::string> events;
  auto restart = [&](int r, int signal, const char* what) {
    const auto t0 = Clock::now();
    const int rc = replicas_[r]->Stop(signal);
    if (signal == SIGTERM) EXPECT_EQ(rc, 0) << "a SIGTERM drain exits 0:\n" << replicas_[r]->LogTail();
    replicas_[r]->Start(replicas_[r]->port());
    char line[160];
    std::snprintf(line, sizeof(line), "at %.2f s: %s replica %d (exit %d), serving again after %.2f s",
                  std::chrono::duration<double>(t0 - tally_.start).count(), what, r + 1, rc,
                  std::chrono::duration<double>(Clock::now() - t0).count());
    events.emplace_back(line);
  };
  Soak(0.15 * T);
  restart(1, SIGKILL, "SIGKILL");
  Soak(0.25 * T);
  restart(0, SIGTERM, "SIGTERM rolling restart of");
  Soak(0.25 * T);
  restart(1, SIGTERM, "SIGTERM rolling restart of");
  Soak(0.35 * T);
  stop = true;
  for (auto& c : clients) c.join();

  // Every acknowledged upload, on the replica that took it, byte for byte.
  int intact = 0;
  for (const auto& s : stored_) {
    gemmc::GemmClient client({.target = replicas_[s->replica]->target(), .timeout_seconds = 30});
    std::string back;
    const grpc::Status st = client.Download(s->handle, &back);
    EXPECT_TRUE(st.ok()) << s->handle << " on replica " << s->replica + 1 << ": " << st.error_message();
    EXPECT_TRUE(!st.ok() || back == s->bytes) << s->handle << " came back different";
    intact += st.ok() && back == s->bytes;
  }

  std::printf("soak: %.0f s, %d clients, engine %s, 2 replicas behind %s (%d DNS queries)\n", T, config_.clients,
              config_.engine.c_str(), dns_->Target(replicas_[0]->port()).c_str(), dns_->queries());
  for (const auto& e : events) std::printf("soak:   %s\n", e.c_str());
  std::printf("soak: requests %ld: verified first time %ld, verified after retries %ld, failed %zu\n",
              tally_.requests.load(), tally_.first_try.load(), tally_.after_retries.load(), tally_.failures.size());
  std::printf("soak: retries by gRPC's policy %ld, by the client's backoff %ld\n", tally_.grpc_retries.load(),
              tally_.client_retries.load());
  std::printf("soak: uploads acknowledged %ld: intact when replaced %ld (then deleted), intact at the end %d\n",
              tally_.uploads.load(), tally_.replaced_intact.load(), intact);
  std::printf("soak: peak RSS replica 1 %.0f MiB, replica 2 %.0f MiB (bound %.0f MiB); most growth over a start "
              "%.0f and %.0f MiB (bound %.0f MiB)\n",
              replicas_[0]->max_rss_mib(), replicas_[1]->max_rss_mib(), config_.rss_bound_mib,
              replicas_[0]->max_growth_mib(), replicas_[1]->max_growth_mib(), config_.rss_growth_mib);

  for (size_t i = 0; i < std::min<size_t>(tally_.failures.size(), 5); ++i) ADD_FAILURE() << tally_.failures[i];
  EXPECT_TRUE(tally_.failures.empty());
  EXPECT_EQ(intact, static_cast<int>(stored_.size()));
  EXPECT_EQ(tally_.uploads.load(), static_cast<int64_t>(stored_.size()) + tally_.replaced_intact.load());
  EXPECT_EQ(tally_.first_try + tally_.after_retries, tally_.requests);
  EXPECT_GT(tally_.requests, 10 * config_.clients) << "too few requests to have soaked anything";
  EXPECT_GT(dns_->queries(), 0) << "the inline clients did not resolve through the DNS name";
#if !defined(__SANITIZE_ADDRESS__)
  for (auto& r : replicas_) {
    EXPECT_LE(r->max_rss_mib(), config_.rss_bound_mib);
    EXPECT_LE(r->max_growth_mib(), config_.rss_growth_mib);
  }
#endif
}

// The DNS answer itself, without sockets: a query for the name gets every
// address; another name gets NXDOMAIN.
TEST(LoopbackDnsTest, AnswersItsNameWithEveryAddressAndOtherNamesWithNxdomain) {
  LoopbackDns dns("gemmd.soak.test", {"127.0.0.1", "127.0.0.2"});
  auto query = [](const std::string& name, uint16_t type) {
    std::string q = {'\x12', '\x34', '\x01', '\x00', 0, 1, 0, 0, 0, 0, 0, 0};
    std::stringstream labels(name);
    for (std::string label; std::getline(labels, label, '.');) q += static_cast<char>(label.size()) + label;
    q += std::string{0, 0, static_cast<char>(type), 0, 1};
    return q;
  };
  const std::string a = dns.Answer(query("GEMMD.soak.test", 1));
  ASSERT_GE(a.size(), 12u);
  EXPECT_EQ(a.substr(0, 2), "\x12\x34");      // the query's id
  EXPECT_EQ(static_cast<uint8_t>(a[3]) & 0xf, 0);  // NOERROR
  EXPECT_EQ(a[7], 2);                         // two answers
  EXPECT_NE(a.find(std::string("\x7f\x00\x00\x01", 4)), std::string::npos);
  EXPECT_NE(a.find(std::string("\x7f\x00\x00\x02", 4)), std::string::npos);
  const std::string aaaa = dns.Answer(query("gemmd.soak.test", 28));
  EXPECT_EQ(aaaa[7], 0) << "no IPv6 addresses";
  const std::string other = dns.Answer(query("other.test", 1));
  EXPECT_EQ(static_cast<uint8_t>(other[3]) & 0xf, 3);  // NXDOMAIN
  EXPECT_TRUE(dns.Answer("short").empty());
}

}  // namespace
}  // namespace gemmd::testing

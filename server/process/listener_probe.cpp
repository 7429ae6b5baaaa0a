#include "process/listener_probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>


namespace gemmd {

namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::string ProbeHostFor(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  std::string host = colon == std::string::npos ? listen : listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty() || host == "0.0.0.0" || host == "*") return "127.0.0.1";
  if (host == "::") return "::1";
  return host;
}

namespace {

// The inode of the server's end of the TCP connection from local port
// `client_port` to `server_port`, from /proc/net/tcp and tcp6: 0 while the
// connection waits in the listener's accept queue (no process holds it
// yet), the socket's inode once it is accepted (1 once the server closed
// it); -1 when there is no such connection (accepted and gone already).
long long ServerSideInode(int server_port, int client_port) {
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::FILE* f = std::fopen(table, "r");
    if (f == nullptr) continue;
    char line[512];
    long long found = -1;
    (void)std::fgets(line, sizeof line, f);  // the header
    while (found < 0 && std::fgets(line, sizeof line, f)) {
      char local[64], remote[64];
      unsigned state = 0;
      unsigned long long inode = 0;
      // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
      if (std::sscanf(line, "%*s %63s %63s %x %*s %*s %*s %*s %*s %llu", local, remote, &state, &inode) != 4) continue;
      const char* lp = std::strrchr(local, ':');
      const char* rp = std::strrchr(remote, ':');
      if (lp == nullptr || rp == nullptr) continue;
      if (std::strtol(lp + 1, nullptr, 16) == server_port && std::strtol(rp + 1, nullptr, 16) == client_port) {
        // Only an established connection can wait in the accept queue; one
        // the server has closed already (FIN_WAIT, CLOSE...) was accepted.
        found = state == 0x01 ? static_cast<long long>(inode) : 1;
      }
    }
    std::fclose(f);
    if (found >= 0) return found;
  }
  return -1;
}

}  // namespace

ListenerProbe::Outcome ListenerProbe::ProbeOnce(const std::string& host, int port,
                                                std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || found == nullptr) {
    return Outcome::kNoDescriptor;  // nothing to judge by
  }
  Fd fd(::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (fd.get() < 0) {
    ::freeaddrinfo(found);
    return Outcome::kNoDescriptor;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const auto left_ms = [&] {
    return static_cast<int>(std::max<int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count()));
  };
  const int connected = ::connect(fd.get(), found->ai_addr, found->ai_addrlen);
  ::freeaddrinfo(found);
  if (connected != 0 && errno != EINPROGRESS) return Outcome::kAnswered;  // refused: not this probe's business
  if (connected != 0) {
    // The kernel completes the handshake while the accept queue has room;
    // a full queue leaves the connection pending: nobody accepts.
    pollfd p{fd.get(), POLLOUT, 0};
    if (::poll(&p, 1, left_ms()) <= 0) return Outcome::kSilent;
    int error = 0;
    socklen_t len = sizeof error;
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &len);
    if (error != 0) return Outcome::kAnswered;
  }
  sockaddr_storage self{};
  socklen_t self_len = sizeof self;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&self), &self_len) != 0) return Outcome::kNoDescriptor;
  const int client_port = ntohs(self.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&self)->sin6_port
                                                           : reinterpret_cast<sockaddr_in*>(&self)->sin_port);
  // Accepted once the server's end belongs to a process (nothing is sent:
  // a TLS listener would log every probe's bytes as a failed handshake).
  for (;;) {
    const long long inode = ServerSideInode(port, client_port);
    if (inode != 0) return Outcome::kAnswered;  // accepted (or accepted and closed already)
    if (left_ms() == 0) return Outcome::kSilent;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

ListenerProbe::ListenerProbe(Options options, std::function<void(const std::string&)> on_dead)
    : options_(std::move(options)),
      on_dead_(std::move(on_dead)),
      thread_("listener-probe", options_.period, [this] { return Tick(); }) {}

bool ListenerProbe::Tick() {
  const Outcome outcome = ProbeOnce(options_.host, options_.port, options_.timeout);
  if (outcome == Outcome::kAnswered) silent_ = 0;
  if (outcome != Outcome::kSilent || ++silent_ < options_.failures) return true;
  on_dead_("the gRPC listener on port " + std::to_string(options_.port) + " stopped accepting connections: " +
           std::to_string(silent_) + " probes in a row got no answer within " +
           std::to_string(options_.timeout.count()) +
           " ms (gRPC 1.51 stops accepting for good after accept4 fails, e.g. with \"Too many open files\" "
           "during a connection flood)");
  return false;
}

}  // namespace gemmd

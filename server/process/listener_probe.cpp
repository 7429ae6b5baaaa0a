#include "process/listener_probe.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>


namespace gemmd {

namespace {

constexpr char kHttp2Preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

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

ListenerProbe::Outcome ListenerProbe::ProbeOnce(const std::string& host, int port,
                                                std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || found == nullptr) {
    return Outcome::kNoDescriptor;  // nothing to judge by
  }
  Fd fd(::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) {
    ::freeaddrinfo(found);
    return Outcome::kNoDescriptor;
  }
  const int connected = ::connect(fd.get(), found->ai_addr, found->ai_addrlen);
  ::freeaddrinfo(found);
  // A refused connection is an answer (no listener at all is not this
  // probe's business: gRPC's port is bound for the process's life).
  if (connected != 0) return Outcome::kAnswered;
  if (::send(fd.get(), kHttp2Preface, sizeof kHttp2Preface - 1, MSG_NOSIGNAL) < 0) return Outcome::kAnswered;
  pollfd p{fd.get(), POLLIN, 0};
  const int ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
  return ready > 0 ? Outcome::kAnswered : Outcome::kSilent;
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

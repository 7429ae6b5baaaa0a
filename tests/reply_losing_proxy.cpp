#include "reply_losing_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

namespace gemmd::testing {
namespace {

using Clock = std::chrono::steady_clock;

bool SendAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

sockaddr_in Loopback(int port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return sa;
}

}  // namespace

ReplyLosingProxy::ReplyLosingProxy(int upstream_port) : upstream_port_(upstream_port) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa = Loopback(0);
  socklen_t len = sizeof(sa);
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 ||
      listen(listen_fd_, 16) != 0 || getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    throw std::runtime_error("the proxy cannot listen on 127.0.0.1");
  }
  port_ = ntohs(sa.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

ReplyLosingProxy::~ReplyLosingProxy() {
  stop_ = true;
  acceptor_.join();
  close(listen_fd_);
  std::lock_guard lock(mu_);
  for (auto& t : relays_) t.join();
}

void ReplyLosingProxy::LoseTheReplyTo(std::string pattern, std::chrono::milliseconds grace) {
  std::lock_guard lock(mu_);
  pattern_ = std::move(pattern);
  grace_ = grace;
}

void ReplyLosingProxy::AcceptLoop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) continue;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::lock_guard lock(mu_);
    relays_.emplace_back([this, fd] { Relay(fd); });
  }
}

void ReplyLosingProxy::Relay(int client_fd) {
  const int server_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const sockaddr_in upstream = Loopback(upstream_port_);
  if (server_fd < 0 || connect(server_fd, reinterpret_cast<const sockaddr*>(&upstream), sizeof(upstream)) != 0) {
    if (server_fd >= 0) close(server_fd);
    close(client_fd);
    return;
  }
  std::string seen;  // the client's recent bytes, so a pattern split across reads is found
  bool losing = false;
  Clock::time_point cut_at{};
  char buf[1 << 16];
  while (!stop_ && !(losing && Clock::now() >= cut_at)) {
    pollfd p[2] = {{client_fd, POLLIN, 0}, {server_fd, POLLIN, 0}};
    if (poll(p, 2, 10) < 0) break;
    if (p[0].revents != 0) {
      const ssize_t n = recv(client_fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      if (std::lock_guard lock(mu_); !losing && !pattern_.empty()) {
        seen.append(buf, static_cast<size_t>(n));
        if (seen.find(pattern_) != std::string::npos) {
          losing = true;
          cut_at = Clock::now() + grace_;
          pattern_.clear();
        } else if (seen.size() > pattern_.size()) {
          seen.erase(0, seen.size() - pattern_.size());
        }
      }
      if (!SendAll(server_fd, buf, static_cast<size_t>(n))) break;
    }
    if (p[1].revents != 0) {
      const ssize_t n = recv(server_fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      if (!losing && !SendAll(client_fd, buf, static_cast<size_t>(n))) break;
    }
  }
  if (losing) ++replies_lost_;
  shutdown(client_fd, SHUT_RDWR);
  shutdown(server_fd, SHUT_RDWR);
  close(client_fd);
  close(server_fd);
}

}  // namespace gemmd::testing

// A TCP proxy on loopback that can lose a reply: the bytes a client sends
// reach the server, then the connection is cut before the server's answer
// comes back, as when a server is killed between doing a call's work and
// replying. It reproduces, on demand, what a soak's SIGKILL does by chance.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gemmd::testing {

class ReplyLosingProxy {
 public:
  // Listens on 127.0.0.1 (a free port) and relays each connection to
  // 127.0.0.1:`upstream_port`.
  explicit ReplyLosingProxy(int upstream_port);
  ~ReplyLosingProxy();
  ReplyLosingProxy(const ReplyLosingProxy&) = delete;
  ReplyLosingProxy& operator=(const ReplyLosingProxy&) = delete;

  int port() const { return port_; }
  // The next client bytes that contain `pattern` are delivered; `grace`
  // later their connection is cut, and nothing the server sent after them
  // is passed back. Once only.
  void LoseTheReplyTo(std::string pattern, std::chrono::milliseconds grace = std::chrono::milliseconds(300));
  int replies_lost() const { return replies_lost_.load(); }

 private:
  void AcceptLoop();
  void Relay(int client_fd);

  int upstream_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> replies_lost_{0};
  std::mutex mu_;
  std::string pattern_;  // empty: relay everything
  std::chrono::milliseconds grace_{0};
  std::thread acceptor_;
  std::vector<std::thread> relays_;  // guarded by mu_
};

}  // namespace gemmd::testing

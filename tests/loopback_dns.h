// A DNS server on a loopback UDP port that answers one name with a fixed set
// of IPv4 addresses, so that a test can put several gemmd replicas behind a
// real dns:// target (gRPC's c-ares resolver, pointed at this server by the
// target's authority: dns://127.0.0.1:PORT/NAME:GRPC_PORT).
//
// It answers A queries for its name with every address, every other query
// with an empty NOERROR, and names it does not serve with NXDOMAIN. TTL 0:
// each resolution asks again. No TCP, no EDNS, no compression in questions:
// what c-ares sends to a resolver on loopback.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace gemmd::testing {

class LoopbackDns {
 public:
  LoopbackDns(std::string name, std::vector<std::string> ipv4_addresses);
  ~LoopbackDns();
  LoopbackDns(const LoopbackDns&) = delete;
  LoopbackDns& operator=(const LoopbackDns&) = delete;

  int port() const { return port_; }
  // The gRPC target that resolves through this server.
  std::string Target(int grpc_port) const;
  int queries() const { return queries_.load(); }

  // The reply to one query datagram; empty when it is not a query to answer.
  // Public so that the parser is tested without sockets.
  std::string Answer(const std::string& query) const;

 private:
  void Serve();

  std::string name_;  // lower case, no trailing dot
  std::vector<uint32_t> addresses_;  // network order
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> queries_{0};
  std::thread thread_;
};

}  // namespace gemmd::testing

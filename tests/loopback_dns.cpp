#include "loopback_dns.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace gemmd::testing {
namespace {

// RFC 1035 §4.1: a 12-byte header, then the question: labels, QTYPE, QCLASS.
constexpr size_t kHeaderBytes = 12;
constexpr uint16_t kTypeA = 1, kClassIn = 1;
constexpr uint16_t kFlagResponse = 0x8000, kFlagAuthoritative = 0x0400, kFlagRecursionAvailable = 0x0080;
constexpr uint16_t kOpcodeAndRecursionDesired = 0x7900;
constexpr uint16_t kRcodeNxDomain = 3;

uint16_t Get16(const std::string& s, size_t at) {
  return static_cast<uint16_t>(static_cast<uint8_t>(s[at]) << 8 | static_cast<uint8_t>(s[at + 1]));
}
void Put16(std::string* s, uint16_t v) {
  s->push_back(static_cast<char>(v >> 8));
  s->push_back(static_cast<char>(v & 0xff));
}

}  // namespace

LoopbackDns::LoopbackDns(std::string name, std::vector<std::string> ipv4_addresses) : name_(std::move(name)) {
  std::transform(name_.begin(), name_.end(), name_.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const auto& a : ipv4_addresses) {
    in_addr addr{};
    if (inet_pton(AF_INET, a.c_str(), &addr) != 1) throw std::invalid_argument("not an IPv4 address: " + a);
    addresses_.push_back(addr.s_addr);
  }
  fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(sa);
  if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 ||
      getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    throw std::runtime_error("cannot bind a UDP socket on 127.0.0.1");
  }
  port_ = ntohs(sa.sin_port);
  thread_ = std::thread([this] { Serve(); });
}

LoopbackDns::~LoopbackDns() {
  stop_ = true;
  thread_.join();
  close(fd_);
}

std::string LoopbackDns::Target(int grpc_port) const {
  return "dns://127.0.0.1:" + std::to_string(port_) + "/" + name_ + ":" + std::to_string(grpc_port);
}

std::string LoopbackDns::Answer(const std::string& query) const {
  if (query.size() < kHeaderBytes + 5 || (Get16(query, 2) & kFlagResponse) || Get16(query, 4) != 1) return {};
  std::string name;
  size_t at = kHeaderBytes;
  while (at < query.size() && query[at] != 0) {
    const size_t len = static_cast<uint8_t>(query[at]);
    if (len > 63 || at + 1 + len >= query.size()) return {};  // a pointer or a truncated label
    if (!name.empty()) name += '.';
    for (size_t i = 0; i < len; ++i) name += static_cast<char>(std::tolower(static_cast<unsigned char>(query[at + 1 + i])));
    at += 1 + len;
  }
  if (at + 5 > query.size()) return {};
  const uint16_t qtype = Get16(query, at + 1), qclass = Get16(query, at + 3);
  const size_t question_end = at + 5;

  const bool ours = name == name_;
  const uint16_t answers = ours && qtype == kTypeA && qclass == kClassIn ? addresses_.size() : 0;
  std::string reply = query.substr(0, 2);  // the query's id
  Put16(&reply, kFlagResponse | (Get16(query, 2) & kOpcodeAndRecursionDesired) | kFlagAuthoritative |
                    kFlagRecursionAvailable | (ours ? 0 : kRcodeNxDomain));
  Put16(&reply, 1);
  Put16(&reply, answers);
  Put16(&reply, 0);
  Put16(&reply, 0);
  reply += query.substr(kHeaderBytes, question_end - kHeaderBytes);
  for (uint16_t i = 0; i < answers; ++i) {
    Put16(&reply, 0xc000 | kHeaderBytes);  // the name: a pointer to the question's
    Put16(&reply, kTypeA);
    Put16(&reply, kClassIn);
    Put16(&reply, 0);  // TTL, 32 bits: 0
    Put16(&reply, 0);
    Put16(&reply, 4);
    reply.append(reinterpret_cast<const char*>(&addresses_[i]), 4);
  }
  return reply;
}

void LoopbackDns::Serve() {
  char buf[512];  // RFC 1035's UDP limit
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    sockaddr_in from{};
    socklen_t len = sizeof(from);
    const ssize_t n = recvfrom(fd_, buf, sizeof(buf), 0, reinterpret_cast<sockaddr*>(&from), &len);
    if (n <= 0) continue;
    ++queries_;
    const std::string reply = Answer(std::string(buf, static_cast<size_t>(n)));
    if (!reply.empty()) sendto(fd_, reply.data(), reply.size(), 0, reinterpret_cast<sockaddr*>(&from), len);
  }
}

}  // namespace gemmd::testing

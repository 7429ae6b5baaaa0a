// Watches that the gRPC listener still accepts connections. gRPC 1.51's
// TCP listener stops for good once accept4 fails with anything but EAGAIN
// (grpc/grpc issues 16058, 20418, 31080): a burst of connections past the
// process's file limit (EMFILE) leaves the port in LISTEN, with the kernel
// completing handshakes that nobody accepts, and every later call times
// out. Nothing in the process can restart that listener, so the probe
// reports it and main() drains and exits for the supervisor to restart.
//
// The probe opens a TCP connection to the port, sends nothing, and watches
// the server's end of it in /proc/net/tcp: while the connection waits in
// the listener's accept queue no process holds that socket (inode 0); once
// gRPC accepts it, gemmd does. Accepted within the timeout counts as alive,
// and so does a refused connection (no listener is not this probe's
// business); still queued at the timeout, or a queue too full to take the
// connection at all, counts as a failure. Nothing is written, so a TLS
// listener logs no failed handshake. A probe that cannot get a descriptor
// itself (the flood still holds them) counts as neither: the listener is
// judged once connections can be made again.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "process/periodic_thread.h"

namespace gemmd {

class ListenerProbe {
 public:
  struct Options {
    std::string host = "127.0.0.1";  // where the listener is reached from here
    int port = 0;
    std::chrono::milliseconds period{2000};
    std::chrono::milliseconds timeout{2000};
    int failures = 3;  // in a row, before the listener is declared dead
  };
  enum class Outcome { kAnswered, kSilent, kNoDescriptor };

  // `on_dead` runs once, on the probe's thread, with a sentence for the log.
  ListenerProbe(Options options, std::function<void(const std::string&)> on_dead);

  // One probe, as the thread makes it.
  static Outcome ProbeOnce(const std::string& host, int port, std::chrono::milliseconds timeout);

 private:
  bool Tick();  // false once the listener is declared dead
  const Options options_;
  const std::function<void(const std::string&)> on_dead_;
  int silent_ = 0;  // probes in a row with no answer
  PeriodicThread thread_;
};

// The host a local probe reaches a listen address by ("0.0.0.0:50051" and
// "[::]:50051" are reached on loopback).
std::string ProbeHostFor(const std::string& listen);

}  // namespace gemmd

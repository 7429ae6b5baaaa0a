// A gemmd in its own process, for tests that kill servers: started from the
// binary beside the test (or the build's), stopped with a signal, its memory
// read from /proc.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace gemmd::testing {

class GemmdProcess {
 public:
  // `args` follow the binary's name; output goes to `log_path` (appended).
  GemmdProcess(std::vector<std::string> args, std::string log_path);
  ~GemmdProcess();  // SIGKILL if still running
  GemmdProcess(const GemmdProcess&) = delete;
  GemmdProcess& operator=(const GemmdProcess&) = delete;

  // The binary: gemmd beside this test's executable, else GEMMD_BUILD_PATH.
  static std::string Binary();

  void Start();
  // Sends `signal` and waits for the exit; returns the exit code, or
  // 128 + the signal that ended it.
  int Stop(int signal);
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  // Resident memory now, in MiB (0 when not running).
  double RssMiB() const;
  std::string LogTail(int lines) const;

 private:
  std::vector<std::string> args_;
  std::string log_path_;
  pid_t pid_ = -1;
};

}  // namespace gemmd::testing

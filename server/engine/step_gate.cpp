#include "engine/step_gate.h"

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <sstream>

extern char** environ;

namespace gemmd {

namespace step_gate_protocol {
std::string Start(int step) { return "start " + std::to_string(step); }
std::string Pass(int step) { return "pass " + std::to_string(step); }
std::string Fail(int step, const std::string& reason) { return "fail " + std::to_string(step) + " " + reason; }
}  // namespace step_gate_protocol

namespace {

using Clock = std::chrono::steady_clock;

std::string ExitText(int status) {
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + strsignal(WTERMSIG(status));
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  return "status " + std::to_string(status);
}

struct Helper {
  pid_t pid = -1;
  int out = -1;  // read end of its stdout
  std::string buffer;
};

// Starts the helper for `steps` with its stdout on a pipe; "" or why not.
std::string Spawn(const StepGateOptions& options, int device, const std::vector<int>& steps, Helper* helper) {
  int fds[2];
  if (pipe(fds) != 0) return std::string("pipe: ") + strerror(errno);
  std::string list;
  for (int s : steps) list += (list.empty() ? "" : ",") + std::to_string(s);
  const std::string dev = std::to_string(device);
  const char* argv[] = {options.helper_path.c_str(), "--device", dev.c_str(), "--steps", list.c_str(), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  // gemmd blocks SIGINT/SIGTERM in every thread (main.cpp); the helper
  // starts with none blocked.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  const int rc = posix_spawn(&helper->pid, options.helper_path.c_str(), &actions, &attr,
                             const_cast<char* const*>(argv), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return "cannot start " + options.helper_path + ": " + strerror(rc);
  }
  helper->out = fds[0];
  return "";
}

// The next line of the helper's output; false at its end, or with
// *timed_out once `deadline` passes.
bool ReadLine(Helper& h, Clock::time_point deadline, std::string* line, bool* timed_out) {
  *timed_out = false;
  for (;;) {
    if (auto nl = h.buffer.find('\n'); nl != std::string::npos) {
      *line = h.buffer.substr(0, nl);
      h.buffer.erase(0, nl + 1);
      return true;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      *timed_out = true;
      return false;
    }
    pollfd p{h.out, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready < 0 && errno != EINTR) return false;
    if (ready <= 0) continue;
    char buf[4096];
    const ssize_t n = read(h.out, buf, sizeof buf);
    if (n <= 0) return false;  // end of output: the helper exited
    h.buffer.append(buf, static_cast<size_t>(n));
  }
}

int Reap(Helper& h, bool kill_first) {
  if (kill_first) kill(h.pid, SIGKILL);
  int status = 0;
  while (waitpid(h.pid, &status, 0) < 0 && errno == EINTR) {
  }
  close(h.out);
  return status;
}

}  // namespace

std::vector<StepVerdict> RunStepGate(const StepGateOptions& options, int device, const std::vector<int>& steps) {
  std::vector<StepVerdict> verdicts;
  std::vector<int> left = steps;
  const auto step_time = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(options.step_timeout_seconds));
  while (!left.empty()) {
    const size_t decided = verdicts.size();
    Helper helper;
    if (auto err = Spawn(options, device, left, &helper); !err.empty()) {
      for (int s : left) verdicts.push_back({s, false, "could not be self-tested at start-up (" + err + ")"});
      break;
    }
    // The first step's clock includes the helper's start (CUDA context,
    // cuBLAS): the same limit, counted from the spawn.
    int current = -1;
    auto deadline = Clock::now() + step_time;
    std::string line;
    bool timed_out = false;
    while (ReadLine(helper, deadline, &line, &timed_out)) {
      std::istringstream in(line);
      std::string word;
      int step = -1;
      in >> word >> step;
      if (word == "start") {
        current = step;
        deadline = Clock::now() + step_time;
      } else if ((word == "pass" || word == "fail") && step == current) {
        std::string reason;
        std::getline(in >> std::ws, reason);
        verdicts.push_back({step, word == "pass", reason});
        std::erase(left, step);
        current = -1;
      }
    }
    const int status = Reap(helper, timed_out);
    if (current < 0 && !left.empty() && !timed_out) {
      // Between steps: the helper could not get going (or stopped after a
      // failure that ended its CUDA context). A helper that returned without
      // reaching a step is not retried forever: what is left is condemned.
      // Exit 3: a failure ended its CUDA context, and a fresh helper takes
      // the rest; only after progress, so that this cannot loop.
      if (WIFEXITED(status) && WEXITSTATUS(status) == 3 && verdicts.size() > decided) continue;
      for (int s : left) {
        verdicts.push_back({s, false, "could not be self-tested at start-up (helper: " + ExitText(status) + ")"});
      }
      break;
    }
    if (current >= 0) {
      const std::string why =
          timed_out ? "hung in its start-up self-test (no result within " +
                          std::to_string(static_cast<int>(options.step_timeout_seconds)) + " s; the test process was killed)"
                    : "crashed its start-up self-test (the test process ended: " + ExitText(status) + ")";
      verdicts.push_back({current, false, why});
      std::erase(left, current);
    } else if (timed_out) {
      for (int s : left) verdicts.push_back({s, false, "could not be self-tested at start-up (the helper did not start in time)"});
      break;
    }
  }
  return verdicts;
}

}  // namespace gemmd

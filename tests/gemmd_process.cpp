#include "gemmd_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <deque>
#include <filesystem>
#include <fstream>
#include <stdexcept>

extern char** environ;

namespace gemmd::testing {

GemmdProcess::GemmdProcess(std::vector<std::string> args, std::string log_path)
    : args_(std::move(args)), log_path_(std::move(log_path)) {}

GemmdProcess::~GemmdProcess() {
  if (running()) Stop(SIGKILL);
}

std::string GemmdProcess::Binary() {
  const auto beside = std::filesystem::read_symlink("/proc/self/exe").parent_path() / "gemmd";
  return std::filesystem::exists(beside) ? beside.string() : std::string(GEMMD_BUILD_PATH);
}

void GemmdProcess::Start() {
  const std::string binary = Binary();
  std::vector<char*> argv{const_cast<char*>(binary.c_str())};
  for (auto& a : args_) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  const int rc = posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    pid_ = -1;
    throw std::runtime_error("cannot start " + binary);
  }
}

int GemmdProcess::Stop(int signal) {
  if (!running()) return -1;
  kill(pid_, signal);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

double GemmdProcess::RssMiB() const {
  if (!running()) return 0;
  std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // kB
  }
  return 0;
}

std::string GemmdProcess::LogTail(int lines) const {
  std::ifstream log(log_path_);
  std::deque<std::string> tail;
  for (std::string line; std::getline(log, line);) {
    tail.push_back(line);
    if (static_cast<int>(tail.size()) > lines) tail.pop_front();
  }
  std::string out;
  for (const auto& l : tail) out += l + "\n";
  return out;
}

}  // namespace gemmd::testing

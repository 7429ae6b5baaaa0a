// Any command line: gemmd's flag parser must answer every one with a
// config or an exit code, never a crash. The input is split into arguments
// at NUL bytes. Flags that read files are left out (an operator's, not a
// client's, and reading /dev/zero would only time the fuzzer out).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args{"gemmd"};
  std::string current;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      args.push_back(current);
      current.clear();
    } else {
      current.push_back(static_cast<char>(data[i]));
    }
  }
  args.push_back(current);
  for (const auto& a : args) {
    if (a.find("file") != std::string::npos || a.find("tls") != std::string::npos) return 0;
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  (void)gemmd::ParseServerConfig(static_cast<int>(argv.size()), argv.data());
  return 0;
}

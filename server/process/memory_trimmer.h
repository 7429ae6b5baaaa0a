// Gives freed heap memory back to the system once the server goes idle.
// gemmd turns glibc's own trimming off (main.cpp), because big request
// buffers that go back to the kernel are faulted in again by the next
// request. After a burst the free memory would then stay mapped for good: a
// container limit sized from steady use is hit on the next burst. So
// malloc_trim runs once the server has been idle for a while after some
// activity: under steady load it never runs, and the buffers the server
// keeps on purpose (the host-buffer and reply pools) are in use, not free,
// so they stay.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>

#include "process/periodic_thread.h"

namespace gemmd {

class MemoryTrimmer {
 public:
  // `activity` is any count that grows with requests; `busy` says whether
  // some request is in flight. `trimmed` hears how many bytes each trim
  // gave back (for the log and tests).
  MemoryTrimmer(std::function<uint64_t()> activity, std::function<bool()> busy, std::chrono::milliseconds idle,
                std::function<void(int64_t returned_bytes)> trimmed = nullptr);

  uint64_t trims() const { return trims_.load(); }

  // The process's resident memory (/proc/self/statm), for tests and logs.
  static uint64_t ResidentBytes();

 private:
  bool Tick();
  const std::function<uint64_t()> activity_;
  const std::function<bool()> busy_;
  const std::chrono::milliseconds idle_;
  const std::function<void(int64_t)> trimmed_;
  std::atomic<uint64_t> trims_{0};
  uint64_t trimmed_at_;  // the activity at the last trim (at construction: nothing to give back yet)
  uint64_t seen_;        // the activity at the last tick
  std::chrono::steady_clock::time_point quiet_since_ = std::chrono::steady_clock::now();
  PeriodicThread thread_;  // last: its ticks use everything above
};

}  // namespace gemmd

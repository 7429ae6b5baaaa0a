#include "process/memory_trimmer.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace gemmd {

uint64_t MemoryTrimmer::ResidentBytes() {
  unsigned long long size = 0, resident = 0;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%llu %llu", &size, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

// Checked at a quarter of the idle time: a trim comes 1-1.25 idle times
// after the last request.
MemoryTrimmer::MemoryTrimmer(std::function<uint64_t()> activity, std::function<bool()> busy,
                             std::chrono::milliseconds idle, std::function<void(int64_t)> trimmed)
    : activity_(std::move(activity)),
      busy_(std::move(busy)),
      idle_(idle),
      trimmed_(std::move(trimmed)),
      trimmed_at_(activity_()),
      seen_(trimmed_at_),
      thread_("memory-trimmer", std::max(idle / 4, std::chrono::milliseconds(1)), [this] { return Tick(); }) {}

bool MemoryTrimmer::Tick() {
  const uint64_t now_seen = activity_();
  const auto now = std::chrono::steady_clock::now();
  if (now_seen != seen_ || busy_()) {
    seen_ = now_seen;
    quiet_since_ = now;
    return true;
  }
  if (seen_ == trimmed_at_ || now - quiet_since_ < idle_) return true;
  trimmed_at_ = seen_;
  const uint64_t before = ResidentBytes();
  malloc_trim(0);
  trims_.fetch_add(1);
  if (trimmed_) trimmed_(static_cast<int64_t>(before) - static_cast<int64_t>(ResidentBytes()));
  return true;
}

}  // namespace gemmd

#include "process/memory_trimmer.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "thread_name.h"

namespace gemmd {

uint64_t MemoryTrimmer::ResidentBytes() {
  unsigned long long size = 0, resident = 0;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%llu %llu", &size, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

MemoryTrimmer::MemoryTrimmer(std::function<uint64_t()> activity, std::function<bool()> busy,
                             std::chrono::milliseconds idle, std::function<void(int64_t)> trimmed)
    : activity_(std::move(activity)),
      busy_(std::move(busy)),
      idle_(idle),
      trimmed_(std::move(trimmed)),
      trimmed_at_(activity_()),
      thread_([this] {
        NameThisThread("memory-trimmer");
        Run();
      }) {}

MemoryTrimmer::~MemoryTrimmer() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void MemoryTrimmer::Run() {
  // Checked at a quarter of the idle time: a trim comes 1-1.25 idle times
  // after the last request.
  const auto tick = std::max(idle_ / 4, std::chrono::milliseconds(1));
  uint64_t trimmed_at = trimmed_at_, seen = trimmed_at;
  auto quiet_since = std::chrono::steady_clock::now();
  std::unique_lock lock(mu_);
  while (!wake_.wait_for(lock, tick, [this] { return stopping_; })) {
    const uint64_t now_seen = activity_();
    const auto now = std::chrono::steady_clock::now();
    if (now_seen != seen || busy_()) {
      seen = now_seen;
      quiet_since = now;
      continue;
    }
    if (seen == trimmed_at || now - quiet_since < idle_) continue;
    trimmed_at = seen;
    const uint64_t before = ResidentBytes();
    malloc_trim(0);
    trims_.fetch_add(1);
    if (trimmed_) trimmed_(static_cast<int64_t>(before) - static_cast<int64_t>(ResidentBytes()));
  }
}

}  // namespace gemmd

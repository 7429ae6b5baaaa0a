#include "engine/host_copier.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "thread_name.h"

namespace gemmd {
namespace {

// How long a helper watches for the next copy before it sleeps: longer than
// the gap between one staging chunk's copy and the next.
constexpr auto kSpinBeforeSleep = std::chrono::microseconds(1000);

// Part `i` of `parts` of a `bytes`-long range, on 4 KB boundaries.
void PartRange(size_t bytes, size_t parts, size_t i, size_t* begin, size_t* end) {
  const size_t per = ((bytes / parts) + 4095) / 4096 * 4096;
  *begin = std::min(bytes, i * per);
  *end = std::min(bytes, *begin + per);
}

}  // namespace

HostCopier::HostCopier(unsigned threads) {
  for (unsigned i = 0; i < threads; ++i) {
    threads_.emplace_back([this, i] {
      NameThisThread("host-copier");
      Worker(i);
    });
  }
}

HostCopier::~HostCopier() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void HostCopier::Copy(void* dst, const HostBytes& src, size_t offset, size_t bytes) {
  if (bytes < kMinSplitBytes || threads_.empty()) {
    src.CopyTo(static_cast<char*>(dst), offset, bytes);
    return;
  }
  std::lock_guard one_at_a_time(copy_mu_);
  const size_t parts = threads_.size() + 1;
  {
    std::lock_guard lock(mu_);
    dst_ = static_cast<char*>(dst);
    src_ = &src;
    offset_ = offset;
    bytes_ = bytes;
    parts_ = parts;
    pending_.store(static_cast<unsigned>(threads_.size()), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  work_cv_.notify_all();  // no system call when every helper is watching
  size_t begin, end;
  PartRange(bytes, parts, 0, &begin, &end);
  src.CopyTo(static_cast<char*>(dst) + begin, offset + begin, end - begin, Stores::kStreaming);
  // The helpers' parts are as long as this one: they end about now.
  while (pending_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
}

void HostCopier::Worker(unsigned index) {
  unsigned long seen = 0;
  for (;;) {
    const auto until = std::chrono::steady_clock::now() + kSpinBeforeSleep;
    while (generation_.load(std::memory_order_acquire) == seen && !stop_.load(std::memory_order_relaxed) &&
           std::chrono::steady_clock::now() < until) {
      std::this_thread::yield();
    }
    std::unique_lock lock(mu_);
    work_cv_.wait(lock, [&] { return stop_ || generation_.load(std::memory_order_relaxed) != seen; });
    if (stop_) return;
    seen = generation_.load(std::memory_order_relaxed);
    char* dst = dst_;
    const HostBytes* src = src_;
    const size_t offset = offset_;
    size_t begin, end;
    PartRange(bytes_, parts_, index + 1, &begin, &end);
    lock.unlock();
    if (end > begin) src->CopyTo(dst + begin, offset + begin, end - begin, Stores::kStreaming);
    pending_.fetch_sub(1, std::memory_order_release);
  }
}

}  // namespace gemmd

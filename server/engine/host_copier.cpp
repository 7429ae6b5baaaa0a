#include "engine/host_copier.h"

#include "hostmem/page_ranges.h"
#include "thread_name.h"

namespace gemmd {

using gemm::hostmem::PartRange;

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
    pending_ = static_cast<unsigned>(threads_.size());
    ++generation_;
  }
  work_cv_.notify_all();
  const auto [begin, end] = PartRange(bytes, parts, 0);
  src.CopyTo(static_cast<char*>(dst) + begin, offset + begin, end - begin, Stores::kStreaming);
  std::unique_lock lock(mu_);
  done_cv_.wait(lock, [&] { return pending_ == 0; });
}

void HostCopier::Worker(unsigned index) {
  unsigned long seen = 0;
  std::unique_lock lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    char* dst = dst_;
    const HostBytes* src = src_;
    const size_t offset = offset_;
    const auto [begin, end] = PartRange(bytes_, parts_, index + 1);
    lock.unlock();
    if (end > begin) src->CopyTo(dst + begin, offset + begin, end - begin, Stores::kStreaming);
    lock.lock();
    if (--pending_ == 0) done_cv_.notify_one();
  }
}

}  // namespace gemmd

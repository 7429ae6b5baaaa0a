#include "api/reply_buffers.h"

namespace gemmd {

ReplyBuffer::~ReplyBuffer() {
  if (home_ != nullptr) home_->Return(std::move(bytes_), capacity_, fresh_);
}

void ReplyBuffer::PopulateAhead() {
  if (!fresh_ || home_->populator_ == nullptr) return;
  fresh_ = false;
  home_->populator_->Submit(bytes_, bytes_.get(), size_);
}

std::shared_ptr<ReplyBuffers> ReplyBuffers::Create(uint64_t max_kept_bytes,
                                                   std::shared_ptr<gemm::hostmem::PagePopulator> populator) {
  return std::shared_ptr<ReplyBuffers>(new ReplyBuffers(max_kept_bytes, std::move(populator)));
}

std::unique_ptr<ReplyBuffer> ReplyBuffers::Take(size_t size) {
  if (size >= kMinKeptBytes) {
    std::lock_guard lock(mu_);
    auto it = kept_.lower_bound(size);
    if (it != kept_.end() && it->first / 2 <= size) {
      const size_t capacity = it->first;
      Kept kept = std::move(it->second);
      kept_.erase(it);
      kept_bytes_ -= capacity;
      return std::unique_ptr<ReplyBuffer>(
          new ReplyBuffer(shared_from_this(), std::move(kept.bytes), capacity, size, kept.fresh));
    }
  }
  // new char[] leaves the bytes uninitialized: no page is touched until D
  // is written, or the populator faults them in first.
  std::shared_ptr<char[]> bytes(new char[size == 0 ? 1 : size]);
  const bool kept = size >= kMinKeptBytes;
  return std::unique_ptr<ReplyBuffer>(
      new ReplyBuffer(kept ? shared_from_this() : nullptr, std::move(bytes), size, size, kept));
}

void ReplyBuffers::Return(std::shared_ptr<char[]> bytes, size_t capacity, bool fresh) {
  std::lock_guard lock(mu_);
  if (kept_bytes_ + capacity > max_kept_bytes_) return;  // freed here
  kept_bytes_ += capacity;
  kept_.emplace(capacity, Kept{std::move(bytes), fresh});
}

uint64_t ReplyBuffers::kept_bytes() const {
  std::lock_guard lock(mu_);
  return kept_bytes_;
}

}  // namespace gemmd

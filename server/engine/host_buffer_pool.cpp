#include "engine/host_buffer_pool.h"

#include <new>
#include <utility>
#include <vector>

namespace gemmd {

HostBuffer::~HostBuffer() { Release(); }

void HostBuffer::Release() {
  if (data_ == nullptr) return;
  if (pool_) pool_->Give(std::move(data_), bytes_, fresh_);
  data_.reset();
}

HostBuffer& HostBuffer::operator=(HostBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::move(other.data_);
    bytes_ = std::exchange(other.bytes_, 0);
    pool_ = std::move(other.pool_);
    fresh_ = std::exchange(other.fresh_, false);
  }
  return *this;
}

void HostBuffer::PopulateAhead() {
  if (!fresh_ || pool_ == nullptr || pool_->populator_ == nullptr) return;
  fresh_ = false;
  pool_->populator_->Submit(data_, reinterpret_cast<char*>(data_.get()), bytes_);
}

std::shared_ptr<HostBufferPool> HostBufferPool::Create(uint64_t capacity_bytes, std::function<void(uint64_t)> on_kept,
                                                       std::shared_ptr<gemm::hostmem::PagePopulator> populator) {
  return std::shared_ptr<HostBufferPool>(new HostBufferPool(capacity_bytes, std::move(on_kept), std::move(populator)));
}

HostBuffer HostBufferPool::Take(uint64_t bytes) {
  {
    std::lock_guard lock(mu_);
    for (auto it = kept_.rbegin(); it != kept_.rend(); ++it) {  // the most recently freed first
      if (it->bytes != bytes) continue;
      Kept kept = std::move(*it);
      kept_.erase(std::next(it).base());
      kept_bytes_ -= bytes;
      ++reused_;
      on_kept_(kept_bytes_);
      return HostBuffer(std::move(kept.data), bytes, shared_from_this(), kept.fresh);
    }
  }
  // Uninitialized: no page is touched until the matrix is written, or the
  // populator faults them in first. Rounded up: an fp8 matrix may hold an
  // odd number of bytes.
  uint16_t* data = new (std::nothrow) uint16_t[(bytes + 1) / 2];
  if (data == nullptr) return HostBuffer();
  const bool kept = bytes >= kMinKeptBytes;
  return HostBuffer(std::shared_ptr<uint16_t[]>(data), bytes, kept ? shared_from_this() : nullptr, kept);
}

void HostBufferPool::Give(std::shared_ptr<uint16_t[]> data, uint64_t bytes, bool fresh) {
  std::vector<std::shared_ptr<uint16_t[]>> doomed;  // freed outside the lock
  {
    std::lock_guard lock(mu_);
    if (bytes > capacity_) {
      doomed.push_back(std::move(data));
    } else {
      kept_.push_back({bytes, std::move(data), fresh});
      kept_bytes_ += bytes;
      while (kept_bytes_ > capacity_ || kept_.size() > kMaxKept) {
        doomed.push_back(std::move(kept_.front().data));
        kept_bytes_ -= kept_.front().bytes;
        kept_.pop_front();
      }
    }
    on_kept_(kept_bytes_);
  }
}

uint64_t HostBufferPool::kept_bytes() const {
  std::lock_guard lock(mu_);
  return kept_bytes_;
}

uint64_t HostBufferPool::reused() const {
  std::lock_guard lock(mu_);
  return reused_;
}

}  // namespace gemmd

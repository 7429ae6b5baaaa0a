#include "engine/host_buffer_pool.h"

#include <new>
#include <utility>
#include <vector>

namespace gemmd {

HostBuffer::~HostBuffer() { Release(); }

void HostBuffer::Release() {
  if (data_ == nullptr) return;
  if (pool_) {
    pool_->Give(data_, bytes_);
  } else {
    delete[] data_;
  }
  data_ = nullptr;
}

HostBuffer& HostBuffer::operator=(HostBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    pool_ = std::move(other.pool_);
  }
  return *this;
}

std::shared_ptr<HostBufferPool> HostBufferPool::Create(uint64_t capacity_bytes,
                                                       std::function<void(uint64_t)> on_kept) {
  return std::shared_ptr<HostBufferPool>(new HostBufferPool(capacity_bytes, std::move(on_kept)));
}

HostBufferPool::~HostBufferPool() {
  for (const Kept& k : kept_) delete[] k.data;
}

HostBuffer HostBufferPool::Take(uint64_t bytes) {
  {
    std::lock_guard lock(mu_);
    for (auto it = kept_.rbegin(); it != kept_.rend(); ++it) {  // the most recently freed first
      if (it->bytes != bytes) continue;
      uint16_t* data = it->data;
      kept_.erase(std::next(it).base());
      kept_bytes_ -= bytes;
      ++reused_;
      on_kept_(kept_bytes_);
      return HostBuffer(data, bytes, shared_from_this());
    }
  }
  uint16_t* data = new (std::nothrow) uint16_t[bytes / 2];
  if (data == nullptr) return HostBuffer();
  return HostBuffer(data, bytes, bytes >= kMinKeptBytes ? shared_from_this() : nullptr);
}

void HostBufferPool::Give(uint16_t* data, uint64_t bytes) {
  std::vector<uint16_t*> doomed;  // freed outside the lock
  {
    std::lock_guard lock(mu_);
    if (bytes > capacity_) {
      doomed.push_back(data);
    } else {
      kept_.push_back({bytes, data});
      kept_bytes_ += bytes;
      while (kept_bytes_ > capacity_ || kept_.size() > kMaxKept) {
        doomed.push_back(kept_.front().data);
        kept_bytes_ -= kept_.front().bytes;
        kept_.pop_front();
      }
    }
    on_kept_(kept_bytes_);
  }
  for (uint16_t* d : doomed) delete[] d;
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

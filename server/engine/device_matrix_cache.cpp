#include "engine/device_matrix_cache.h"

#include <absl/strings/str_join.h>
#include <absl/strings/str_split.h>

#include <iterator>
#include <utility>
#include <vector>

namespace gemmd {

struct DeviceMatrixCache::Entry {
  std::string key;
  uint64_t bytes = 0;
  void* data = nullptr;
  int pins = 0;
  bool ready = false;
  bool forgotten = false;  // deleted or dropped: goes when its last pin does
  std::list<std::unique_ptr<Entry>>::iterator at;
};

DeviceMatrixCache::DeviceMatrixCache(uint64_t budget_bytes, Memory memory)
    : budget_(budget_bytes), memory_(std::move(memory)) {}

DeviceMatrixCache::~DeviceMatrixCache() {
  for (auto& entry : lru_) memory_.release(entry->data);
}

DeviceMatrixCache::Lease& DeviceMatrixCache::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    Release();
    cache_ = std::exchange(other.cache_, nullptr);
    entry_ = std::exchange(other.entry_, nullptr);
    hit_ = other.hit_;
  }
  return *this;
}

void* DeviceMatrixCache::Lease::data() const { return entry_ != nullptr ? entry_->data : nullptr; }

void DeviceMatrixCache::Lease::MarkReady() {
  if (entry_ == nullptr) return;
  std::lock_guard lock(cache_->mu_);
  entry_->ready = true;
}

void DeviceMatrixCache::Lease::Release() {
  if (entry_ == nullptr) return;
  cache_->Unpin(entry_);
  entry_ = nullptr;
  cache_ = nullptr;
}

DeviceMatrixCache::Lease DeviceMatrixCache::Acquire(const std::string& key, uint64_t bytes) {
  Lease lease;
  std::lock_guard lock(mu_);
  if (auto found = by_key_.find(key); found != by_key_.end()) {
    Entry* entry = found->second;
    if (!entry->ready) return lease;  // another request is filling it
    ++stats_.hits;
    ++entry->pins;
    lru_.splice(lru_.begin(), lru_, entry->at);
    lease.cache_ = this;
    lease.entry_ = entry;
    lease.hit_ = true;
    return lease;
  }
  ++stats_.misses;
  if (bytes == 0 || bytes > budget_ || !MakeRoom(bytes)) return lease;
  void* data = memory_.allocate(bytes);
  if (data == nullptr) return lease;
  auto entry = std::make_unique<Entry>();
  entry->key = key;
  entry->bytes = bytes;
  entry->data = data;
  entry->pins = 1;
  lru_.push_front(std::move(entry));
  Entry* raw = lru_.front().get();
  raw->at = lru_.begin();
  by_key_[key] = raw;
  stats_.resident_bytes += bytes;
  ++stats_.copies;
  lease.cache_ = this;
  lease.entry_ = raw;
  return lease;
}

bool DeviceMatrixCache::MakeRoom(uint64_t bytes) {
  // Unused copies from the least recently used end, until `bytes` fit.
  for (auto it = lru_.end(); stats_.resident_bytes + bytes > budget_ && it != lru_.begin();) {
    --it;
    Entry* entry = it->get();
    if (entry->pins > 0) continue;
    ++stats_.evictions;
    auto next = std::next(it);
    Drop(entry);
    it = next;
  }
  return stats_.resident_bytes + bytes <= budget_;
}

void DeviceMatrixCache::Drop(Entry* entry) {
  if (auto found = by_key_.find(entry->key); found != by_key_.end() && found->second == entry) by_key_.erase(found);
  memory_.release(entry->data);
  stats_.resident_bytes -= entry->bytes;
  --stats_.copies;
  lru_.erase(entry->at);
}

void DeviceMatrixCache::Unpin(Entry* entry) {
  std::lock_guard lock(mu_);
  --entry->pins;
  if (!entry->ready && !entry->forgotten) {  // its filler gave up: the bytes are not the matrix
    entry->forgotten = true;
    if (auto found = by_key_.find(entry->key); found != by_key_.end() && found->second == entry) by_key_.erase(found);
  }
  if (entry->forgotten && entry->pins == 0) Drop(entry);
}

void DeviceMatrixCache::Forget(const std::string& handle) {
  std::lock_guard lock(mu_);
  std::vector<Entry*> named;
  for (auto& entry : lru_) {
    for (absl::string_view part : absl::StrSplit(entry->key, ',')) {
      if (part == handle) {
        named.push_back(entry.get());
        break;
      }
    }
  }
  for (Entry* entry : named) {
    entry->forgotten = true;
    if (auto found = by_key_.find(entry->key); found != by_key_.end() && found->second == entry) by_key_.erase(found);
    if (entry->pins == 0) Drop(entry);
  }
}

uint64_t DeviceMatrixCache::ReadyBytes(const std::vector<std::string>& keys) const {
  std::lock_guard lock(mu_);
  uint64_t bytes = 0;
  for (const std::string& key : keys) {
    if (auto found = by_key_.find(key); found != by_key_.end() && found->second->ready) bytes += found->second->bytes;
  }
  return bytes;
}

DeviceCacheStats DeviceMatrixCache::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

std::string CacheKey(const std::vector<std::string>& handles) { return absl::StrJoin(handles, ","); }

}  // namespace gemmd

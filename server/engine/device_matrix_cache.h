// Stored matrices' copies in one device's memory, kept after the request
// that brought them so that the next Multiply by the same handle skips the
// host-to-device copy: a model server's weights stay on the GPU.
//
// The cache holds at most its budget of bytes. When a new copy needs room,
// the least recently used copies that no request is reading go first; a
// copy in use is never evicted. A copy is usable by others only once its
// filler says it is complete (Lease::MarkReady): a request that meets one
// still being filled copies its operand as if there were no cache. A
// matrix deleted from the store loses its copies at once, or when the last
// request reading them is done.
//
// Device memory comes and goes through `Memory`, so that the policy is
// tested on the CPU (tests/device_matrix_cache_test.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace gemmd {

struct DeviceCacheStats {
  uint64_t hits = 0, misses = 0, evictions = 0;
  uint64_t resident_bytes = 0;  // copies held, in use or not
  uint64_t copies = 0;
};

class DeviceMatrixCache {
 public:
  struct Memory {
    std::function<void*(uint64_t bytes)> allocate;  // nullptr when there is none
    std::function<void(void*)> release;
  };
  DeviceMatrixCache(uint64_t budget_bytes, Memory memory);
  ~DeviceMatrixCache();  // releases every copy; no lease may outlive the cache
  DeviceMatrixCache(const DeviceMatrixCache&) = delete;
  DeviceMatrixCache& operator=(const DeviceMatrixCache&) = delete;

  struct Entry;
  // A request's hold on one copy: it is not evicted while the lease lives.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept { *this = std::move(other); }
    Lease& operator=(Lease&& other) noexcept;
    ~Lease() { Release(); }
    explicit operator bool() const { return entry_ != nullptr; }
    void* data() const;
    // The copy was complete before this request: no upload is needed.
    bool hit() const { return hit_; }
    // A miss's filler: the copy is complete and others may read it. A lease
    // released before this drops its copy.
    void MarkReady();

   private:
    friend class DeviceMatrixCache;
    void Release();
    DeviceMatrixCache* cache_ = nullptr;
    Entry* entry_ = nullptr;
    bool hit_ = false;
  };

  // The copy of `key` (the matrix's identity; `bytes` long). A ready copy
  // is a hit. Otherwise a miss makes room, allocates and returns a lease
  // for the caller to fill and then MarkReady. An empty lease when the key
  // is being filled by another request, or when `bytes` cannot fit even
  // with every unused copy evicted: the caller copies as if uncached.
  Lease Acquire(const std::string& key, uint64_t bytes);

  // The matrix `handle` was deleted: every copy whose key names it goes.
  // A key names the handles it was made of, joined by ','.
  void Forget(const std::string& handle);

  // The bytes of the ready copies among `keys`.
  uint64_t ReadyBytes(const std::vector<std::string>& keys) const;

  DeviceCacheStats stats() const;
  uint64_t budget_bytes() const { return budget_; }

 private:
  void Unpin(Entry* entry);
  void Drop(Entry* entry);  // under mu_, unpinned
  bool MakeRoom(uint64_t bytes);  // under mu_

  const uint64_t budget_;
  const Memory memory_;
  mutable std::mutex mu_;
  std::list<std::unique_ptr<Entry>> lru_;  // most recently used first
  std::unordered_map<std::string, Entry*> by_key_;
  DeviceCacheStats stats_;
};

// The key of an operand made of `handles`, in order.
std::string CacheKey(const std::vector<std::string>& handles);

}  // namespace gemmd

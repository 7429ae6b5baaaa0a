// Tensor maps kept per thread, so that a launch does not encode the same
// three maps again. cuTensorMapEncodeTiled is host work on every launch of a
// TMA step, microseconds of it, as much as a small GEMM's whole kernel; and
// gemm-bench's loop or a server lane launches on the same buffers over and
// over. A map is a function of its key alone (address, sizes, pitches, box, type),
// so a cached map is never stale: memory freed and reused at the same
// address with the same layout needs exactly that map. Host-only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace gemm::common {

template <typename Map, size_t kEntries = 16>
class TensorMapCache {
 public:
  struct Key {
    const void* base = nullptr;
    int64_t rows = 0, cols = 0, ld = 0;
    uint32_t box_cols = 0, box_rows = 0;
    int element_type = 0;
    int64_t entries = 1, stride = 0;  // a batch's entries, and the elements between them
    bool operator==(const Key&) const = default;
  };

  // The map for `key` into *out: the cached one, or encode(&map) for a key
  // not seen lately. An encoding error is returned and not kept.
  template <typename Encode>
  std::string Get(const Key& key, Map* out, const Encode& encode) {
    ++clock_;
    Entry* victim = &entries_[0];
    for (Entry& e : entries_) {
      if (e.used != 0 && e.key == key) {
        e.used = clock_;
        *out = e.map;
        ++hits_;
        return "";
      }
      if (e.used < victim->used) victim = &e;  // the least recently used (or empty) entry
    }
    ++misses_;
    if (std::string err = encode(&victim->map); !err.empty()) {
      victim->used = 0;
      return err;
    }
    victim->key = key;
    victim->used = clock_;
    *out = victim->map;
    return "";
  }

  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }

 private:
  struct Entry {
    Key key;
    Map map{};
    uint64_t used = 0;  // the clock of its last use; 0: empty
  };
  std::array<Entry, kEntries> entries_{};
  uint64_t clock_ = 0, hits_ = 0, misses_ = 0;
};

}  // namespace gemm::common

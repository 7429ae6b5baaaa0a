// The protobuf wire format read straight from gRPC's slices, for the
// messages whose bytes fields are matrices: the server and the client walk
// a message's fields themselves and hand a matrix's bytes on where they lie,
// instead of letting protobuf copy them into a std::string first.
#pragma once

#include <grpcpp/support/slice.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gemm::wire {

constexpr int kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kStartGroup = 3, kEndGroup = 4, kFixed32 = 5;

constexpr uint64_t Tag(uint64_t field, int wire_type) { return field << 3 | static_cast<uint64_t>(wire_type); }

void AppendVarint(std::string* out, uint64_t v);

class SliceReader {
 public:
  explicit SliceReader(const std::vector<grpc::Slice>& slices);
  uint64_t remaining() const { return remaining_; }

  // false past the end or after 10 bytes.
  bool ReadVarint(uint64_t* v);
  // Calls sink(pointer, length) over the next n bytes, piece by piece as
  // they lie in the slices; false (and nothing read) when fewer remain.
  template <typename Sink>
  bool Walk(uint64_t n, const Sink& sink) {
    if (n > remaining_) return false;
    while (n > 0) {
      const size_t len = static_cast<size_t>(std::min<uint64_t>(n, slices_[i_].size() - at_));
      sink(reinterpret_cast<const char*>(slices_[i_].begin()) + at_, len);
      Advance(len);
      n -= len;
    }
    return true;
  }
  bool Take(uint64_t n, std::string* copy) {
    return Walk(n, [copy](const char* p, size_t len) { copy->append(p, len); });
  }

 private:
  void Advance(size_t n);
  void SkipEmpty();

  const std::vector<grpc::Slice>& slices_;
  size_t i_ = 0, at_ = 0;
  uint64_t remaining_ = 0;
};

// Copies one field (its tag already read) to *out, tag first, for protobuf
// to parse later. Groups (deprecated, but protobuf still takes them as
// unknown fields) are copied whole, up to their end tag. false when the
// field is malformed or runs past the end.
bool CopyField(SliceReader& r, uint64_t tag, std::string* out, int depth = 0);

// A singular bytes field as it lies in the slices, never copied.
struct BytesField {
  bool present = false;
  uint64_t size = 0;
  std::vector<std::pair<const char*, size_t>> pieces;
};

// Splits a message whose bytes field `field` holds a matrix: that field's
// last occurrence (protobuf keeps the last) into *bytes, every other field
// copied to *rest for protobuf to parse, so that together they mean what
// protobuf makes of the whole. false when the message is malformed.
bool SplitBytesField(const std::vector<grpc::Slice>& slices, uint64_t field, BytesField* bytes, std::string* rest);

}  // namespace gemm::wire

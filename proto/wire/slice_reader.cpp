#include "wire/slice_reader.h"

namespace gemm::wire {
namespace {
constexpr int kMaxGroupDepth = 100;  // protobuf's own recursion limit
}  // namespace

void AppendVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

SliceReader::SliceReader(const std::vector<grpc::Slice>& slices) : slices_(slices) {
  for (const auto& s : slices_) remaining_ += s.size();
  SkipEmpty();
}

bool SliceReader::ReadVarint(uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (remaining_ == 0) return false;
    const uint8_t byte = slices_[i_].begin()[at_];
    Advance(1);
    *v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;  // more than 10 bytes
}

void SliceReader::Advance(size_t n) {
  at_ += n;
  remaining_ -= n;
  SkipEmpty();
}

void SliceReader::SkipEmpty() {
  while (i_ < slices_.size() && at_ == slices_[i_].size()) {
    ++i_;
    at_ = 0;
  }
}

bool CopyField(SliceReader& r, uint64_t tag, std::string* out, int depth) {
  AppendVarint(out, tag);
  switch (tag & 7) {
    case kVarint: {
      uint64_t v;
      if (!r.ReadVarint(&v)) return false;
      AppendVarint(out, v);
      return true;
    }
    case kFixed64:
      return r.Take(8, out);
    case kLengthDelimited: {
      uint64_t len;
      if (!r.ReadVarint(&len) || len > r.remaining()) return false;
      AppendVarint(out, len);
      return r.Take(len, out);
    }
    case kFixed32:
      return r.Take(4, out);
    case kStartGroup: {
      if (depth >= kMaxGroupDepth) return false;
      const uint64_t end = (tag & ~uint64_t{7}) | kEndGroup;
      for (;;) {
        uint64_t inner;
        if (!r.ReadVarint(&inner) || (inner >> 3) == 0) return false;
        if (inner == end) {
          AppendVarint(out, inner);
          return true;
        }
        if (!CopyField(r, inner, out, depth + 1)) return false;
      }
    }
    default:
      return false;  // an end group without its start, and wire types 6 and 7
  }
}

bool SplitBytesField(const std::vector<grpc::Slice>& slices, uint64_t field, BytesField* bytes, std::string* rest) {
  *bytes = BytesField();
  SliceReader r(slices);
  while (r.remaining() > 0) {
    uint64_t tag;
    if (!r.ReadVarint(&tag) || (tag >> 3) == 0) return false;
    if (tag == Tag(field, kLengthDelimited)) {
      *bytes = BytesField();
      if (!r.ReadVarint(&bytes->size) ||
          !r.Walk(bytes->size, [bytes](const char* p, size_t n) { bytes->pieces.emplace_back(p, n); })) {
        return false;
      }
      bytes->present = true;
    } else if (!CopyField(r, tag, rest)) {
      return false;
    }
  }
  return true;
}

}  // namespace gemm::wire

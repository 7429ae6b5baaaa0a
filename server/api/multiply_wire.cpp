#include "api/multiply_wire.h"

#include <string>

namespace gemmd {
namespace {

constexpr int kWireVarint = 0, kWireFixed64 = 1, kWireLengthDelimited = 2, kWireStartGroup = 3, kWireEndGroup = 4,
              kWireFixed32 = 5;
constexpr int kMaxGroupDepth = 100;  // protobuf's own recursion limit
constexpr uint64_t kFieldA = 2, kFieldB = 3;       // MultiplyRequest.a, .b
constexpr uint64_t kFieldData = 1;                 // Operand.data
constexpr uint64_t kFieldHandle = 2, kFieldRandom = 3, kFieldRowBlocks = 4;  // Operand's other oneof members

void AppendVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Reads the protobuf wire format across a list of slices.
class SliceReader {
 public:
  explicit SliceReader(const std::vector<grpc::Slice>& slices) : slices_(slices) {
    for (const auto& s : slices_) remaining_ += s.size();
    SkipEmpty();
  }
  uint64_t remaining() const { return remaining_; }

  bool ReadVarint(uint64_t* v) {
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
  // The next n bytes, appended to *copy or to *pieces (not copied).
  bool Take(uint64_t n, std::string* copy) {
    return Walk(n, [copy](const char* p, size_t len) { copy->append(p, len); });
  }
  bool Take(uint64_t n, HostBytes* pieces) {
    return Walk(n, [pieces](const char* p, size_t len) { pieces->Append(p, len); });
  }

 private:
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
  void Advance(size_t n) {
    at_ += n;
    remaining_ -= n;
    SkipEmpty();
  }
  void SkipEmpty() {
    while (i_ < slices_.size() && at_ == slices_[i_].size()) {
      ++i_;
      at_ = 0;
    }
  }

  const std::vector<grpc::Slice>& slices_;
  size_t i_ = 0, at_ = 0;
  uint64_t remaining_ = 0;
};

// Copies one field's payload (its tag already read) into *out, tag first.
// Groups (deprecated, but protobuf still takes them as unknown fields) are
// copied whole, up to their end tag.
bool CopyField(SliceReader& r, uint64_t tag, std::string* out, int depth = 0) {
  AppendVarint(out, tag);
  switch (tag & 7) {
    case kWireVarint: {
      uint64_t v;
      if (!r.ReadVarint(&v)) return false;
      AppendVarint(out, v);
      return true;
    }
    case kWireFixed64:
      return r.Take(8, out);
    case kWireLengthDelimited: {
      uint64_t len;
      if (!r.ReadVarint(&len) || len > r.remaining()) return false;
      AppendVarint(out, len);
      return r.Take(len, out);
    }
    case kWireFixed32:
      return r.Take(4, out);
    case kWireStartGroup: {
      if (depth >= kMaxGroupDepth) return false;
      const uint64_t end = (tag & ~uint64_t{7}) | kWireEndGroup;
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

// One operand across all its occurrences, merged as protobuf merges them:
// the oneof member set last wins, and a data field drops what an earlier
// handle or random set.
struct OperandParts {
  bool seen = false;
  bool data_last = false;  // the oneof's last member was data
  HostBytes data;
  std::string oneof_fields;  // handle, random and row_blocks occurrences since the last data
  std::string other_fields;  // fields this server does not know
};

bool ReadOperand(SliceReader& r, OperandParts* op) {
  uint64_t len;
  if (!r.ReadVarint(&len) || len > r.remaining()) return false;
  op->seen = true;
  const uint64_t end = r.remaining() - len;  // remaining() once the operand is read
  while (r.remaining() > end) {
    uint64_t tag;
    if (!r.ReadVarint(&tag) || (tag >> 3) == 0) return false;
    const uint64_t field = tag >> 3;
    if (field == kFieldData && (tag & 7) == kWireLengthDelimited) {
      uint64_t n;
      if (!r.ReadVarint(&n) || n > r.remaining() - end) return false;
      op->data = HostBytes();
      if (!r.Take(n, &op->data)) return false;
      op->data_last = true;
      op->oneof_fields.clear();
    } else if ((field == kFieldHandle || field == kFieldRandom || field == kFieldRowBlocks) &&
               (tag & 7) == kWireLengthDelimited) {
      if (!CopyField(r, tag, &op->oneof_fields)) return false;
      op->data_last = false;
    } else {
      if (!CopyField(r, tag, &op->other_fields)) return false;
    }
    if (r.remaining() < end) return false;  // a field ran past the operand's end
  }
  return true;
}

absl::Status Malformed() {
  return absl::InvalidArgumentError("the request is not a MultiplyRequest in the protobuf wire format");
}

}  // namespace

absl::Status ParseMultiplyRequest(const grpc::ByteBuffer& buffer, MultiplyWireRequest* out) {
  if (!buffer.Dump(&out->slices).ok()) return Malformed();
  SliceReader r(out->slices);
  std::string rest;
  OperandParts a, b;
  while (r.remaining() > 0) {
    uint64_t tag;
    if (!r.ReadVarint(&tag) || (tag >> 3) == 0) return Malformed();
    const uint64_t field = tag >> 3;
    if ((field == kFieldA || field == kFieldB) && (tag & 7) == kWireLengthDelimited) {
      if (!ReadOperand(r, field == kFieldA ? &a : &b)) return Malformed();
    } else if (!CopyField(r, tag, &rest)) {
      return Malformed();
    }
  }
  if (!out->fields.ParseFromString(rest)) return Malformed();
  for (auto [parts, operand, data] : {std::tuple{&a, out->fields.mutable_a(), &out->a_data},
                                      std::tuple{&b, out->fields.mutable_b(), &out->b_data}}) {
    if (!parts->seen) continue;
    if (!operand->ParseFromString(parts->other_fields + parts->oneof_fields)) return Malformed();
    if (parts->data_last) {
      operand->set_data("");
      *data = std::move(parts->data);
    }
  }
  if (!a.seen) out->fields.clear_a();
  if (!b.seen) out->fields.clear_b();
  return absl::OkStatus();
}

void SerializeMultiplyResponse(const gemm::v1::MultiplyResponse& resp, std::unique_ptr<ReplyBuffer> d,
                               grpc::ByteBuffer* out) {
  std::string head = resp.SerializeAsString();
  if (d == nullptr || d->size() == 0) {
    grpc::Slice slice(head);
    *out = grpc::ByteBuffer(&slice, 1);
    return;
  }
  // Then field 3 (MultiplyResponse.d): its bytes are the buffer's own, never
  // copied into the message.
  const size_t size = d->size();
  AppendVarint(&head, (3 << 3) | kWireLengthDelimited);
  AppendVarint(&head, size);
  ReplyBuffer* owned = d.release();
  grpc::Slice slices[2] = {
      grpc::Slice(head),
      grpc::Slice(owned->data(), size, [](void* b) { delete static_cast<ReplyBuffer*>(b); }, owned)};
  *out = grpc::ByteBuffer(slices, 2);
}

}  // namespace gemmd

// Server-side matrices behind handles, for operands and results larger than
// one gRPC message. Host memory, within one quota for all of them; a matrix's
// bytes return to the quota when its last user lets go (an upload that breaks
// off, a Delete while a GEMM still reads it), so nothing leaks.
#pragma once

#include <absl/status/statusor.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "engine/host_buffer_pool.h"
#include "engine/host_bytes.h"
#include "gemm/element_type.h"

namespace gemmd {

struct MatrixDescription {
  // What ListMatrices tells of a matrix besides the stored ones.
  enum class State { kStored, kUploading, kLost };
  std::string handle;  // "" while uploading
  int64_t rows = 0, cols = 0;
  gemm::ElementType type = gemm::ElementType::kF16;
  uint64_t bytes = 0;  // rows·cols·ElementBytes(type)
  std::string label;
  std::string owner;  // the identity that stored it ("" on a server without authentication)
  // Kept in memory only, never on disk: gone after a restart. For scratch
  // matrices deleted after one Multiply, which a durable write (fsynced
  // before it is acknowledged) would slow for nothing.
  bool transient = false;
  State state = State::kStored;
  uint64_t received_bytes = 0;  // of an upload in progress
  std::string problem;          // why a lost matrix was lost
};

// Who asks the store. A matrix is visible to its owner only, or to every
// caller that sees all (an operator); to anyone else it does not exist.
struct Caller {
  std::string identity;
  bool sees_all = false;
  bool SeesOwner(std::string_view owner) const { return sees_all || owner == identity; }
  bool Sees(const MatrixDescription& m) const { return SeesOwner(m.owner); }
};

class MatrixStore;
class MatrixFiles;

// A stored matrix whose file failed its check at start-up.
struct LostMatrix {
  std::string why;
  std::string owner;  // "" when the file's header could not tell
};

// What the store's matrices hold, pending ones included, in all and per
// identity. Every charge is checked and made under one lock, so that the
// limits hold together; releases only lower the usage.
struct StoreLimits {
  uint64_t quota_bytes = 0;
  size_t max_matrices = 0;
  // One identity's stored matrices, plus the full size of its uploads in
  // progress, may hold this much (0: the whole quota).
  uint64_t identity_quota_bytes = 0;
  // Uploads in progress per identity, each holding one of max_matrices.
  size_t max_uploads_per_identity = 16;
};

class StoreUsage {
 public:
  explicit StoreUsage(StoreLimits limits) : limits_(limits) {}
  struct Charge {
    uint64_t bytes = 0;           // against the quota, now
    uint64_t identity_bytes = 0;  // against the identity's quota
    bool matrix = false;          // one of max_matrices
    bool upload = false;          // one of the identity's uploads in progress
  };
  // Adds `c` for `identity`, or says which limit it would pass.
  absl::Status Add(const std::string& identity, const Charge& c);
  // The same whatever the limits (matrices loaded from disk at start).
  void AddUnchecked(const std::string& identity, const Charge& c);
  void Remove(const std::string& identity, const Charge& c);
  uint64_t bytes() const { return bytes_.load(); }
  size_t matrices() const { return matrices_.load(); }
  const StoreLimits& limits() const { return limits_; }
  void set_limits(const StoreLimits& limits);

 private:
  struct PerIdentity {
    uint64_t bytes = 0;
    size_t uploads = 0;
  };
  mutable std::mutex mu_;
  StoreLimits limits_;
  std::atomic<uint64_t> bytes_{0};
  std::atomic<size_t> matrices_{0};
  std::map<std::string, PerIdentity, std::less<>> identities_;
};

// Quota held by one matrix; released on destruction. An upload's grows as
// its bytes arrive, so that a header alone holds next to nothing.
class QuotaReservation {
 public:
  QuotaReservation(std::shared_ptr<StoreUsage> usage, std::string identity, StoreUsage::Charge charge,
                   std::function<void()> on_change);
  ~QuotaReservation();
  QuotaReservation(const QuotaReservation&) = delete;
  QuotaReservation& operator=(const QuotaReservation&) = delete;
  absl::Status Grow(uint64_t bytes);
  // The upload is complete: it no longer counts as one in progress.
  void EndUpload();

 private:
  std::shared_ptr<StoreUsage> usage_;
  std::string identity_;
  StoreUsage::Charge held_;
  std::function<void()> on_change_;
};

class StoredMatrix {
 public:
  const MatrixDescription& description() const { return desc_; }
  // rows·cols elements of description().type, description().bytes in all.
  const char* data() const { return reinterpret_cast<const char*>(data_.get()); }
  char* mutable_data() { return reinterpret_cast<char*>(data_.get()); }
  uint64_t elements() const { return static_cast<uint64_t>(desc_.rows) * desc_.cols; }

 private:
  friend class MatrixStore;
  friend class PendingMatrix;
  MatrixDescription desc_;
  HostBuffer data_;
  std::unique_ptr<QuotaReservation> reservation_;
};

// A matrix being written (an upload in progress, or D of a running GEMM):
// holds quota, invisible to Get until committed.
class PendingMatrix {
 public:
  ~PendingMatrix();
  // Appends the next bytes; INVALID_ARGUMENT past the matrix's size,
  // RESOURCE_EXHAUSTED when an upload's bytes no longer fit the quota.
  absl::Status Append(const HostBytes& bytes);
  absl::Status Append(std::string_view bytes) { return Append(HostBytes(bytes.data(), bytes.size())); }
  uint64_t received() const { return received_.load(); }
  uint64_t bytes() const { return matrix_->description().bytes; }
  char* data() { return matrix_->mutable_data(); }
  // Marks every byte as written (for results the engine filled in place).
  void MarkFilled();
  // New memory faulted in from now until the engine writes it (host_buffer_pool.h).
  void PopulateAhead();
  // The handle Commit will publish it under, chosen now, so that an engine
  // can keep a copy of a result under it before it is stored. Nobody can
  // Get it before the commit.
  const std::string& ReserveHandle();
  const std::string& reserved_handle() const { return reserved_handle_; }  // "" until reserved

 private:
  friend class MatrixStore;
  std::shared_ptr<StoredMatrix> matrix_;
  std::atomic<uint64_t> received_{0};  // read by ListMatrices
  bool charged_as_received_ = false;   // an upload: quota grows with received_
  MatrixStore* listed_in_ = nullptr;   // an upload in progress, until committed
  uint64_t upload_id_ = 0;
  MatrixStore* store_ = nullptr;       // for ReserveHandle
  std::string reserved_handle_;
};

class MatrixStore {
 public:
  // A label longer than this is refused: labels are listed to clients and
  // kept in memory, so they must not be a way around the quota.
  static constexpr size_t kMaxLabelBytes = 256;
  // What a matrix costs beyond its data (handle, description, bookkeeping):
  // counted in the quota so that many tiny matrices cannot exhaust memory.
  static constexpr uint64_t kOverheadBytes = 256;
  static constexpr size_t kDefaultMaxMatrices = 10000;
  // The quota a matrix of `data_bytes` with a `label_bytes` label holds.
  static constexpr uint64_t Charge(uint64_t data_bytes, size_t label_bytes) {
    return data_bytes + kOverheadBytes + label_bytes;
  }

  // `on_usage` sees (bytes used, matrices stored) after every change, under
  // the store's lock: it must not call back into the store. At most
  // `max_matrices` matrices (stored or being written) at a time.
  // Deleted matrices' memory goes to `buffers` for reuse (none: freed).
  explicit MatrixStore(uint64_t quota_bytes,
                       std::function<void(uint64_t, size_t)> on_usage = [](uint64_t, size_t) {},
                       size_t max_matrices = kDefaultMaxMatrices, std::shared_ptr<HostBufferPool> buffers = nullptr);
  ~MatrixStore();
  MatrixStore(const MatrixStore&) = delete;
  MatrixStore& operator=(const MatrixStore&) = delete;

  // Reserves Charge(rows·cols·ElementBytes(type), label). INVALID_ARGUMENT for a bad shape
  // or a label over kMaxLabelBytes, RESOURCE_EXHAUSTED when the quota or
  // the matrix count cannot hold it. A `transient` matrix is never written
  // to the attached files (MatrixDescription::transient).
  absl::StatusOr<std::unique_ptr<PendingMatrix>> Reserve(int64_t rows, int64_t cols, std::string label,
                                                         std::string owner, bool transient = false,
                                                         gemm::ElementType type = gemm::ElementType::kF16);
  // The same for an upload, which may wait on its client: checks that the
  // whole matrix fits now, but charges the quota only as bytes arrive
  // (PendingMatrix::Append). Against the owner's own limits it counts in
  // full from the start, and as one of its uploads in progress, so that
  // headers sent without data cost their sender, not everyone else.
  // ListMatrices shows it to its owner until it is committed.
  absl::StatusOr<std::unique_ptr<PendingMatrix>> ReserveUpload(int64_t rows, int64_t cols, std::string label,
                                                               std::string owner, bool transient = false,
                                                               gemm::ElementType type = gemm::ElementType::kF16);

  // Publishes a fully written matrix under a new handle. INVALID_ARGUMENT
  // when bytes are missing.
  absl::StatusOr<MatrixDescription> Commit(std::unique_ptr<PendingMatrix> pending);

  // INVALID_ARGUMENT for a string that is not a handle's syntax (the
  // message quotes a bounded, escaped prefix of it).
  static absl::Status CheckHandle(std::string_view handle);

  // NOT_FOUND for unknown or deleted handles, and for another owner's;
  // DATA_LOSS for a lost one (its file failed its check) of the caller's.
  absl::StatusOr<std::shared_ptr<const StoredMatrix>> Get(std::string_view handle, const Caller& caller) const;
  // Deleting a lost matrix is final: its set-aside file goes too.
  absl::StatusOr<uint64_t> Delete(std::string_view handle, const Caller& caller);

  // The matrices `caller` sees, in handle order: those after `after` (""
  // for the first), at most `limit`. Lost ones are among them; the first
  // page (`after` empty) also begins with the caller's uploads in progress.
  std::vector<MatrixDescription> List(const Caller& caller, std::string_view after = {},
                                      size_t limit = SIZE_MAX) const;
  // Keeps every matrix on disk too (matrix_files.h), and serves the ones
  // already there: call once, before the store is used. Returns how many
  // were loaded; damaged files answer DATA_LOSS from then on.
  size_t AttachFiles(std::unique_ptr<MatrixFiles> files);

  // Per-identity limits (StoreLimits); before the store is used.
  void SetIdentityLimits(uint64_t identity_quota_bytes, size_t max_uploads_per_identity);

  uint64_t used_bytes() const { return usage_->bytes(); }
  uint64_t quota_bytes() const { return quota_; }
  size_t max_matrices() const { return max_matrices_; }

 private:
  friend class PendingMatrix;
  absl::StatusOr<std::unique_ptr<PendingMatrix>> ReserveCharged(int64_t rows, int64_t cols, std::string label,
                                                                std::string owner, bool transient, bool upload,
                                                                gemm::ElementType type);
  void Publish() const;
  std::string NewHandle();
  void Unlist(uint64_t upload_id);

  const uint64_t quota_;
  const size_t max_matrices_;
  std::function<void(uint64_t, size_t)> on_usage_;
  std::shared_ptr<StoreUsage> usage_;
  std::shared_ptr<HostBufferPool> buffers_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<StoredMatrix>, std::less<>> matrices_;
  uint64_t rng_state_;
  std::unique_ptr<MatrixFiles> files_;  // null: memory only
  std::map<std::string, LostMatrix, std::less<>> damaged_;
  std::map<uint64_t, const PendingMatrix*> uploads_;  // in progress, for List
  uint64_t next_upload_id_ = 1;
};

}  // namespace gemmd

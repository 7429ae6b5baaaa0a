// Server-side matrices behind handles, for operands and results larger than
// one gRPC message. Host memory, within one quota for all of them; a matrix's
// bytes return to the quota when its last user lets go (an upload that breaks
// off, a Delete while a GEMM still reads it), so nothing leaks.
#pragma once

#include <absl/status/statusor.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace gemmd {

struct MatrixDescription {
  std::string handle;
  int64_t rows = 0, cols = 0;
  uint64_t bytes = 0;
  std::string label;
};

class MatrixStore;

// Quota held by one matrix; released on destruction.
class QuotaReservation {
 public:
  QuotaReservation(std::shared_ptr<std::atomic<uint64_t>> used, uint64_t bytes,
                   std::function<void()> on_change);
  ~QuotaReservation();
  QuotaReservation(const QuotaReservation&) = delete;
  QuotaReservation& operator=(const QuotaReservation&) = delete;

 private:
  std::shared_ptr<std::atomic<uint64_t>> used_;
  uint64_t bytes_;
  std::function<void()> on_change_;
};

class StoredMatrix {
 public:
  const MatrixDescription& description() const { return desc_; }
  const uint16_t* data() const { return data_.get(); }
  uint16_t* mutable_data() { return data_.get(); }
  uint64_t elements() const { return static_cast<uint64_t>(desc_.rows) * desc_.cols; }

 private:
  friend class MatrixStore;
  MatrixDescription desc_;
  std::unique_ptr<uint16_t[]> data_;
  std::unique_ptr<QuotaReservation> reservation_;
};

// A matrix being written (an upload in progress, or D of a running GEMM):
// holds quota, invisible to Get until committed.
class PendingMatrix {
 public:
  // Appends the next bytes; INVALID_ARGUMENT past the matrix's size.
  absl::Status Append(std::string_view bytes);
  uint64_t received() const { return received_; }
  uint64_t bytes() const { return matrix_->description().bytes; }
  uint16_t* data() { return matrix_->mutable_data(); }
  // Marks every byte as written (for results the engine filled in place).
  void MarkFilled() { received_ = bytes(); }

 private:
  friend class MatrixStore;
  std::shared_ptr<StoredMatrix> matrix_;
  uint64_t received_ = 0;
};

class MatrixStore {
 public:
  // `on_usage` sees (bytes used, matrices stored) after every change, under
  // the store's lock: it must not call back into the store.
  explicit MatrixStore(uint64_t quota_bytes,
                       std::function<void(uint64_t, size_t)> on_usage = [](uint64_t, size_t) {});
  ~MatrixStore();
  MatrixStore(const MatrixStore&) = delete;
  MatrixStore& operator=(const MatrixStore&) = delete;

  // Reserves rows·cols·2 bytes. INVALID_ARGUMENT for a bad shape,
  // RESOURCE_EXHAUSTED when the quota cannot hold it.
  absl::StatusOr<std::unique_ptr<PendingMatrix>> Reserve(int64_t rows, int64_t cols, std::string label);

  // Publishes a fully written matrix under a new handle. INVALID_ARGUMENT
  // when bytes are missing.
  absl::StatusOr<MatrixDescription> Commit(std::unique_ptr<PendingMatrix> pending);

  // NOT_FOUND for unknown or deleted handles.
  absl::StatusOr<std::shared_ptr<const StoredMatrix>> Get(std::string_view handle) const;
  absl::StatusOr<uint64_t> Delete(std::string_view handle);

  std::vector<MatrixDescription> List() const;
  uint64_t used_bytes() const { return used_->load(); }
  uint64_t quota_bytes() const { return quota_; }

 private:
  void Publish() const;
  std::string NewHandle();

  const uint64_t quota_;
  std::function<void(uint64_t, size_t)> on_usage_;
  std::shared_ptr<std::atomic<uint64_t>> used_ = std::make_shared<std::atomic<uint64_t>>(0);
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<StoredMatrix>, std::less<>> matrices_;
  uint64_t rng_state_;
};

}  // namespace gemmd

#include "engine/matrix_store.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <new>
#include <random>

#include <spdlog/spdlog.h>

#include "engine/matrix_files.h"
#include "engine/permanent_refusal.h"
#include "gemm/random_fill.h"

namespace gemmd {

QuotaReservation::QuotaReservation(std::shared_ptr<StoreUsage> usage, uint64_t bytes,
                                   std::function<void()> on_change)
    : usage_(std::move(usage)), bytes_(bytes), on_change_(std::move(on_change)) {}

QuotaReservation::~QuotaReservation() {
  usage_->bytes.fetch_sub(bytes_);
  usage_->matrices.fetch_sub(1);
  on_change_();
}

void PendingMatrix::PopulateAhead() { matrix_->data_.PopulateAhead(); }

void PendingMatrix::MarkFilled() {
  received_ = bytes();
  matrix_->data_.MarkWritten();
}

absl::Status PendingMatrix::Append(const HostBytes& bytes) {
  if (bytes.size() > this->bytes() - received_) {
    return absl::InvalidArgumentError("upload sends more than rows*cols*2 = " +
                                      std::to_string(this->bytes()) + " bytes");
  }
  bytes.CopyTo(reinterpret_cast<char*>(data()) + received_, 0, bytes.size());
  received_ += bytes.size();
  if (received_ == this->bytes()) matrix_->data_.MarkWritten();
  return absl::OkStatus();
}

MatrixStore::MatrixStore(uint64_t quota_bytes, std::function<void(uint64_t, size_t)> on_usage,
                         size_t max_matrices, std::shared_ptr<HostBufferPool> buffers)
    : quota_(quota_bytes),
      max_matrices_(max_matrices),
      on_usage_(std::move(on_usage)),
      buffers_(buffers ? std::move(buffers) : HostBufferPool::Create(0)),
      rng_state_(std::random_device{}()) {
  rng_state_ ^= static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

MatrixStore::~MatrixStore() {
  // Matrices release their quota through Publish(), which needs mu_: free
  // them while the store is still whole.
  std::map<std::string, std::shared_ptr<StoredMatrix>, std::less<>> doomed;
  {
    std::lock_guard lock(mu_);
    doomed.swap(matrices_);
  }
  doomed.clear();
}

absl::StatusOr<std::unique_ptr<PendingMatrix>> MatrixStore::Reserve(int64_t rows, int64_t cols, std::string label,
                                                                     std::string owner, bool transient) {
  if (rows < 1 || cols < 1) {
    return absl::InvalidArgumentError("a matrix needs rows >= 1 and cols >= 1, got " +
                                      std::to_string(rows) + "x" + std::to_string(cols));
  }
  uint64_t bytes = 0;
  // Past the quota is refused here, before Charge() adds the bookkeeping:
  // a size near 2^64 would wrap that sum to a small charge that passes.
  if (__builtin_mul_overflow(static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), &bytes) ||
      __builtin_mul_overflow(bytes, uint64_t{2}, &bytes) || bytes > quota_) {
    return Permanent(absl::ResourceExhaustedError("matrix quota exhausted: a " + std::to_string(rows) + "x" +
                                                  std::to_string(cols) +
                                                  " fp16 matrix is larger than the whole quota of " +
                                                  std::to_string(quota_) + " bytes"));
  }
  if (label.size() > kMaxLabelBytes) {
    return absl::InvalidArgumentError("the label is " + std::to_string(label.size()) + " bytes; at most " +
                                      std::to_string(kMaxLabelBytes) + " are kept");
  }
  const uint64_t charge = Charge(bytes, label.size());
  {
    // Releases only lower the usage, so checking both under one lock is
    // enough for the two limits to hold together.
    std::lock_guard lock(mu_);
    const uint64_t used = usage_->bytes.load();
    if (charge > quota_ - std::min(used, quota_)) {
      return absl::ResourceExhaustedError(
          "matrix quota exhausted: " + std::to_string(charge) + " bytes asked (data, label and " +
          std::to_string(kOverheadBytes) + " bytes of bookkeeping), " + std::to_string(quota_ - std::min(used, quota_)) +
          " of " + std::to_string(quota_) + " free; delete matrices you no longer need");
    }
    if (usage_->matrices.load() >= max_matrices_) {
      return absl::ResourceExhaustedError("the server holds " + std::to_string(max_matrices_) +
                                          " matrices, its limit; delete matrices you no longer need");
    }
    usage_->bytes.fetch_add(charge);
    usage_->matrices.fetch_add(1);
  }

  auto pending = std::make_unique<PendingMatrix>();
  pending->matrix_ = std::make_shared<StoredMatrix>();
  StoredMatrix& m = *pending->matrix_;
  m.reservation_ = std::make_unique<QuotaReservation>(usage_, charge, [this] { Publish(); });
  m.desc_.rows = rows;
  m.desc_.cols = cols;
  m.desc_.bytes = bytes;
  m.desc_.label = std::move(label);
  m.desc_.owner = std::move(owner);
  m.desc_.transient = transient;
  m.data_ = buffers_->Take(bytes);
  if (!m.data_) {
    return absl::ResourceExhaustedError("the server could not allocate " + std::to_string(bytes) +
                                        " bytes of host memory");
  }
  Publish();
  return pending;
}

absl::StatusOr<MatrixDescription> MatrixStore::Commit(std::unique_ptr<PendingMatrix> pending) {
  if (pending->received() != pending->bytes()) {
    return absl::InvalidArgumentError("upload ended after " + std::to_string(pending->received()) +
                                      " of " + std::to_string(pending->bytes()) +
                                      " bytes (rows*cols*2); the matrix was discarded");
  }
  std::shared_ptr<StoredMatrix> m = std::move(pending->matrix_);
  {
    std::lock_guard lock(mu_);
    m->desc_.handle = NewHandle();
  }
  // On disk before anyone learns the handle (outside the lock: a big write
  // must not hold up every other call). On failure the matrix is dropped
  // and its quota returns.
  if (files_ && !m->desc_.transient) {
    if (auto st = files_->Write(m->desc_, m->data()); !st.ok()) return st;
  }
  MatrixDescription desc;
  {
    std::lock_guard lock(mu_);
    matrices_.emplace(m->desc_.handle, m);
    desc = m->desc_;
  }
  Publish();
  return desc;
}

size_t MatrixStore::AttachFiles(std::unique_ptr<MatrixFiles> files) {
  size_t loaded = 0;
  auto damaged = files->LoadAll([&](const MatrixDescription& desc, std::string_view data) {
    auto m = std::make_shared<StoredMatrix>();
    const uint64_t charge = Charge(desc.bytes, desc.label.size());
    usage_->bytes.fetch_add(charge);
    usage_->matrices.fetch_add(1);
    m->reservation_ = std::make_unique<QuotaReservation>(usage_, charge, [this] { Publish(); });
    m->desc_ = desc;
    m->data_ = buffers_->Take(desc.bytes);
    if (!m->data_) throw std::bad_alloc();
    std::memcpy(m->data_.get(), data.data(), desc.bytes);
    m->data_.MarkWritten();
    std::lock_guard lock(mu_);
    matrices_.emplace(desc.handle, std::move(m));
    ++loaded;
  });
  {
    std::lock_guard lock(mu_);
    files_ = std::move(files);
    damaged_ = std::move(damaged);
  }
  if (usage_->bytes.load() > quota_) {
    spdlog::warn("the stored matrices take {} bytes, over the quota of {}: new uploads are refused until some are "
                 "deleted",
                 usage_->bytes.load(), quota_);
  }
  Publish();
  return loaded;
}

absl::StatusOr<std::shared_ptr<const StoredMatrix>> MatrixStore::Get(std::string_view handle,
                                                                      const Caller& caller) const {
  std::lock_guard lock(mu_);
  if (auto bad = damaged_.find(handle); bad != damaged_.end()) {
    return absl::DataLossError("matrix '" + std::string(handle) + "' was lost: its file failed its check at start-up (" +
                               bad->second + ") and was set aside; upload it again");
  }
  auto it = matrices_.find(handle);
  if (it == matrices_.end() || !caller.Sees(it->second->description())) {  // another's: as if absent
    return absl::NotFoundError("no matrix with handle '" + std::string(handle) +
                               "' (never uploaded, or deleted)");
  }
  return std::shared_ptr<const StoredMatrix>(it->second);
}

absl::StatusOr<uint64_t> MatrixStore::Delete(std::string_view handle, const Caller& caller) {
  std::shared_ptr<StoredMatrix> victim;  // freed outside the lock
  {
    std::lock_guard lock(mu_);
    if (auto bad = damaged_.find(handle); bad != damaged_.end()) {  // forgotten; its .corrupt file stays
      damaged_.erase(bad);
      return 0;
    }
    auto it = matrices_.find(handle);
    if (it == matrices_.end() || !caller.Sees(it->second->description())) {
      return absl::NotFoundError("no matrix with handle '" + std::string(handle) +
                                 "' (never uploaded, or deleted already)");
    }
    victim = std::move(it->second);
    matrices_.erase(it);
  }
  if (files_ && !victim->description().transient) files_->Remove(victim->description().handle);
  const uint64_t bytes = victim->description().bytes;
  victim.reset();  // frees now unless a running GEMM still reads it
  Publish();
  return bytes;
}

std::vector<MatrixDescription> MatrixStore::List(const Caller& caller, std::string_view after, size_t limit) const {
  std::lock_guard lock(mu_);
  std::vector<MatrixDescription> out;
  for (auto it = matrices_.upper_bound(after); it != matrices_.end() && out.size() < limit; ++it) {
    if (caller.Sees(it->second->description())) out.push_back(it->second->description());
  }
  return out;
}

void MatrixStore::Publish() const {
  // Read and published under the lock: two threads cannot publish out of
  // order and leave a stale value on the gauge.
  std::lock_guard lock(mu_);
  on_usage_(usage_->bytes.load(), matrices_.size());
}

std::string MatrixStore::NewHandle() {
  // Unguessable enough that one client does not stumble on another's matrix.
  rng_state_ = gemm::Mix64(rng_state_ + 0x9e3779b97f4a7c15ULL);
  const uint64_t hi = rng_state_;
  rng_state_ = gemm::Mix64(rng_state_ + 0x9e3779b97f4a7c15ULL);
  char buf[40];
  std::snprintf(buf, sizeof buf, "m-%016llx%016llx", static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(rng_state_));
  return buf;
}

}  // namespace gemmd

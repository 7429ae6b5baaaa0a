#include "engine/matrix_store.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <new>
#include <random>

#include <spdlog/spdlog.h>

#include "client_text.h"
#include "engine/matrix_files.h"
#include "engine/permanent_refusal.h"
#include "gemm/random_fill.h"

namespace gemmd {
namespace {

// One text for the whole-store quota, whether a stored matrix or an
// upload's full size is what does not fit.
absl::Status QuotaExhausted(uint64_t asked, uint64_t used, uint64_t quota) {
  return absl::ResourceExhaustedError("matrix quota exhausted: " + std::to_string(asked) +
                                      " bytes asked (data, label and " +
                                      std::to_string(MatrixStore::kOverheadBytes) + " bytes of bookkeeping), " +
                                      std::to_string(quota - std::min(used, quota)) + " of " +
                                      std::to_string(quota) + " free; delete matrices you no longer need");
}

}  // namespace

absl::Status StoreUsage::Add(const std::string& identity, const Charge& c) {
  std::lock_guard lock(mu_);
  const uint64_t quota = limits_.quota_bytes, used = bytes_.load();
  if (c.bytes > quota - std::min(used, quota)) {
    return QuotaExhausted(c.bytes, used, quota);
  }
  if (c.matrix && matrices_.load() >= limits_.max_matrices) {
    return absl::ResourceExhaustedError("the server holds " + std::to_string(limits_.max_matrices) +
                                        " matrices, its limit; delete matrices you no longer need");
  }
  PerIdentity& mine = identities_[identity];
  const uint64_t own_quota = limits_.identity_quota_bytes == 0 ? quota : limits_.identity_quota_bytes;
  if (c.identity_bytes > own_quota - std::min(mine.bytes, own_quota)) {
    const std::string who = identity.empty() ? "this server's one identity" : "identity '" + identity + "'";
    if (mine.bytes == 0 && mine.uploads == 0) identities_.erase(identity);
    return absl::ResourceExhaustedError(
        who + " would hold " + std::to_string(mine.bytes + c.identity_bytes) + " bytes with this matrix (" +
        std::to_string(c.identity_bytes) + " asked; its stored matrices and the whole size of its uploads in " +
        "progress count), over its quota of " + std::to_string(own_quota) +
        " (--identity-quota-bytes); delete matrices or finish uploads first");
  }
  if (c.upload && mine.uploads >= limits_.max_uploads_per_identity) {
    return absl::ResourceExhaustedError("identity '" + identity + "' has " + std::to_string(mine.uploads) +
                                        " uploads in progress, its limit (--max-uploads-per-identity); finish or "
                                        "cancel one first");
  }
  bytes_.fetch_add(c.bytes);
  if (c.matrix) matrices_.fetch_add(1);
  mine.bytes += c.identity_bytes;
  if (c.upload) ++mine.uploads;
  return absl::OkStatus();
}

void StoreUsage::AddUnchecked(const std::string& identity, const Charge& c) {
  std::lock_guard lock(mu_);
  bytes_.fetch_add(c.bytes);
  if (c.matrix) matrices_.fetch_add(1);
  identities_[identity].bytes += c.identity_bytes;
}

void StoreUsage::Remove(const std::string& identity, const Charge& c) {
  std::lock_guard lock(mu_);
  bytes_.fetch_sub(c.bytes);
  if (c.matrix) matrices_.fetch_sub(1);
  auto it = identities_.find(identity);
  if (it == identities_.end()) return;
  it->second.bytes -= std::min(it->second.bytes, c.identity_bytes);
  if (c.upload && it->second.uploads > 0) --it->second.uploads;
  if (it->second.bytes == 0 && it->second.uploads == 0) identities_.erase(it);
}

void StoreUsage::set_limits(const StoreLimits& limits) {
  std::lock_guard lock(mu_);
  limits_ = limits;
}

QuotaReservation::QuotaReservation(std::shared_ptr<StoreUsage> usage, std::string identity,
                                   StoreUsage::Charge charge, std::function<void()> on_change)
    : usage_(std::move(usage)), identity_(std::move(identity)), held_(charge), on_change_(std::move(on_change)) {}

QuotaReservation::~QuotaReservation() {
  usage_->Remove(identity_, held_);
  on_change_();
}

absl::Status QuotaReservation::Grow(uint64_t bytes) {
  StoreUsage::Charge more;
  more.bytes = bytes;
  if (auto st = usage_->Add(identity_, more); !st.ok()) return st;
  held_.bytes += bytes;
  return absl::OkStatus();
}

void QuotaReservation::EndUpload() {
  if (!held_.upload) return;
  StoreUsage::Charge upload;
  upload.upload = true;
  usage_->Remove(identity_, upload);
  held_.upload = false;
}

PendingMatrix::~PendingMatrix() {
  if (listed_in_ != nullptr) listed_in_->Unlist(upload_id_);
}

void PendingMatrix::PopulateAhead() { matrix_->data_.PopulateAhead(); }

const std::string& PendingMatrix::ReserveHandle() {
  if (reserved_handle_.empty()) {
    std::lock_guard lock(store_->mu_);
    reserved_handle_ = store_->NewHandle();
  }
  return reserved_handle_;
}

void PendingMatrix::MarkFilled() {
  received_ = bytes();
  matrix_->data_.MarkWritten();
}

absl::Status PendingMatrix::Append(const HostBytes& bytes) {
  const uint64_t received = received_.load();
  if (bytes.size() > this->bytes() - received) {
    const MatrixDescription& d = matrix_->description();
    return absl::InvalidArgumentError("upload sends more than the matrix's " + std::to_string(this->bytes()) +
                                      " bytes (" + std::to_string(d.rows) + "x" + std::to_string(d.cols) + " " +
                                      gemm::ElementName(d.type) + " elements)");
  }
  if (charged_as_received_) {
    if (auto st = matrix_->reservation_->Grow(bytes.size()); !st.ok()) {
      return absl::ResourceExhaustedError("after " + std::to_string(received) + " of " +
                                          std::to_string(this->bytes()) + " bytes, " + std::string(st.message()));
    }
  }
  bytes.CopyTo(data() + received, 0, bytes.size());
  received_ = received + bytes.size();
  if (received_ == this->bytes()) matrix_->data_.MarkWritten();
  return absl::OkStatus();
}

MatrixStore::MatrixStore(uint64_t quota_bytes, std::function<void(uint64_t, size_t)> on_usage,
                         size_t max_matrices, std::shared_ptr<HostBufferPool> buffers)
    : quota_(quota_bytes),
      max_matrices_(max_matrices),
      on_usage_(std::move(on_usage)),
      usage_(std::make_shared<StoreUsage>(StoreLimits{quota_bytes, max_matrices, 0, 16})),
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

void MatrixStore::SetIdentityLimits(uint64_t identity_quota_bytes, size_t max_uploads_per_identity) {
  StoreLimits limits = usage_->limits();
  limits.identity_quota_bytes = identity_quota_bytes;
  limits.max_uploads_per_identity = max_uploads_per_identity;
  usage_->set_limits(limits);
}

absl::StatusOr<std::unique_ptr<PendingMatrix>> MatrixStore::Reserve(int64_t rows, int64_t cols, std::string label,
                                                                     std::string owner, bool transient,
                                                                     gemm::ElementType type) {
  return ReserveCharged(rows, cols, std::move(label), std::move(owner), transient, /*upload=*/false, type);
}

absl::StatusOr<std::unique_ptr<PendingMatrix>> MatrixStore::ReserveUpload(int64_t rows, int64_t cols,
                                                                           std::string label, std::string owner,
                                                                           bool transient, gemm::ElementType type) {
  return ReserveCharged(rows, cols, std::move(label), std::move(owner), transient, /*upload=*/true, type);
}

absl::StatusOr<std::unique_ptr<PendingMatrix>> MatrixStore::ReserveCharged(int64_t rows, int64_t cols,
                                                                            std::string label, std::string owner,
                                                                            bool transient, bool upload,
                                                                            gemm::ElementType type) {
  if (rows < 1 || cols < 1) {
    return absl::InvalidArgumentError("a matrix needs rows >= 1 and cols >= 1, got " +
                                      std::to_string(rows) + "x" + std::to_string(cols));
  }
  uint64_t bytes = 0;
  // Past the quota is refused here, before Charge() adds the bookkeeping:
  // a size near 2^64 would wrap that sum to a small charge that passes.
  if (__builtin_mul_overflow(static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), &bytes) ||
      __builtin_mul_overflow(bytes, uint64_t{gemm::ElementBytes(type)}, &bytes) || bytes > quota_) {
    return Permanent(absl::ResourceExhaustedError("matrix quota exhausted: a " + std::to_string(rows) + "x" +
                                                  std::to_string(cols) + " " + gemm::ElementName(type) +
                                                  " matrix is larger than the whole quota of " +
                                                  std::to_string(quota_) + " bytes"));
  }
  if (label.size() > kMaxLabelBytes) {
    return absl::InvalidArgumentError("the label is " + std::to_string(label.size()) + " bytes; at most " +
                                      std::to_string(kMaxLabelBytes) + " are kept");
  }
  const uint64_t full = Charge(bytes, label.size());
  StoreUsage::Charge charge;
  charge.matrix = true;
  charge.identity_bytes = full;
  charge.upload = upload;
  // An upload is charged its bookkeeping now and its data as it arrives;
  // whether the whole of it fits is asked now all the same, so that a
  // client learns at once what cannot succeed.
  charge.bytes = upload ? full - bytes : full;
  if (upload && full > quota_ - std::min(used_bytes(), quota_)) {
    return QuotaExhausted(full, used_bytes(), quota_);
  }
  if (auto st = usage_->Add(owner, charge); !st.ok()) return st;

  auto pending = std::make_unique<PendingMatrix>();
  pending->store_ = this;
  pending->matrix_ = std::make_shared<StoredMatrix>();
  StoredMatrix& m = *pending->matrix_;
  m.reservation_ = std::make_unique<QuotaReservation>(usage_, owner, charge, [this] { Publish(); });
  m.desc_.rows = rows;
  m.desc_.cols = cols;
  m.desc_.type = type;
  m.desc_.bytes = bytes;
  m.desc_.label = std::move(label);
  m.desc_.owner = std::move(owner);
  m.desc_.transient = transient;
  m.data_ = buffers_->Take(bytes);
  if (!m.data_) {
    return absl::ResourceExhaustedError("the server could not allocate " + std::to_string(bytes) +
                                        " bytes of host memory");
  }
  if (upload) {
    pending->charged_as_received_ = true;
    std::lock_guard lock(mu_);
    pending->upload_id_ = next_upload_id_++;
    pending->listed_in_ = this;
    uploads_.emplace(pending->upload_id_, pending.get());
  }
  Publish();
  return pending;
}

void MatrixStore::Unlist(uint64_t upload_id) {
  std::lock_guard lock(mu_);
  uploads_.erase(upload_id);
}

absl::StatusOr<MatrixDescription> MatrixStore::Commit(std::unique_ptr<PendingMatrix> pending) {
  if (pending->received() != pending->bytes()) {
    const MatrixDescription& d = pending->matrix_->description();
    return absl::InvalidArgumentError("upload ended after " + std::to_string(pending->received()) + " of " +
                                      std::to_string(pending->bytes()) + " bytes (" + std::to_string(d.rows) + "x" +
                                      std::to_string(d.cols) + " " + gemm::ElementName(d.type) +
                                      " elements); the matrix was discarded");
  }
  if (pending->listed_in_ != nullptr) {
    Unlist(pending->upload_id_);
    pending->listed_in_ = nullptr;
  }
  std::shared_ptr<StoredMatrix> m = std::move(pending->matrix_);
  m->reservation_->EndUpload();
  {
    std::lock_guard lock(mu_);
    m->desc_.handle = pending->reserved_handle_.empty() ? NewHandle() : pending->reserved_handle_;
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
    // Charged whatever the limits: a matrix already stored is never refused.
    StoreUsage::Charge charge;
    charge.bytes = charge.identity_bytes = Charge(desc.bytes, desc.label.size());
    charge.matrix = true;
    usage_->AddUnchecked(desc.owner, charge);
    m->reservation_ = std::make_unique<QuotaReservation>(usage_, desc.owner, charge, [this] { Publish(); });
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
  if (usage_->bytes() > quota_) {
    spdlog::warn("the stored matrices take {} bytes, over the quota of {}: new uploads are refused until some are "
                 "deleted",
                 usage_->bytes(), quota_);
  }
  Publish();
  return loaded;
}

absl::Status MatrixStore::CheckHandle(std::string_view handle) {
  // NewHandle's form: "m-" and 32 lowercase hexadecimal digits.
  constexpr size_t kLength = 34;
  bool ok = handle.size() == kLength && handle.substr(0, 2) == "m-";
  for (size_t i = 2; ok && i < handle.size(); ++i) {
    const char c = handle[i];
    ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(QuoteClientText(handle) +
                                    " is not a matrix handle: handles are \"m-\" followed by 32 lowercase "
                                    "hexadecimal digits, as UploadMatrix returned them");
}

namespace {

absl::Status LostError(std::string_view handle, const LostMatrix& lost) {
  return absl::DataLossError("matrix " + std::string(handle) + " was lost: its file failed its check at start-up (" +
                             lost.why + ") and was set aside; upload it again, and delete this handle to free "
                             "its file");
}

absl::Status Absent(std::string_view handle, const char* after) {
  return absl::NotFoundError("no matrix with handle " + std::string(handle) + " (never uploaded, or deleted" + after +
                             ")");
}

}  // namespace

absl::StatusOr<std::shared_ptr<const StoredMatrix>> MatrixStore::Get(std::string_view handle,
                                                                      const Caller& caller) const {
  if (auto st = CheckHandle(handle); !st.ok()) return st;
  std::lock_guard lock(mu_);
  // Ownership before anything else: another's matrix, lost or not, is absent.
  if (auto bad = damaged_.find(handle); bad != damaged_.end()) {
    if (!caller.SeesOwner(bad->second.owner)) return Absent(handle, "");
    return LostError(handle, bad->second);
  }
  auto it = matrices_.find(handle);
  if (it == matrices_.end() || !caller.Sees(it->second->description())) return Absent(handle, "");
  return std::shared_ptr<const StoredMatrix>(it->second);
}

absl::StatusOr<uint64_t> MatrixStore::Delete(std::string_view handle, const Caller& caller) {
  if (auto st = CheckHandle(handle); !st.ok()) return st;
  std::shared_ptr<StoredMatrix> victim;  // freed outside the lock
  {
    std::lock_guard lock(mu_);
    if (auto bad = damaged_.find(handle); bad != damaged_.end()) {
      if (!caller.SeesOwner(bad->second.owner)) return Absent(handle, " already");
      damaged_.erase(bad);
      // Final: the set-aside file goes, so the handle stays gone after a
      // restart and the file's bytes are not kept outside the quota.
      if (files_) files_->RemoveLost(std::string(handle));
      return 0;
    }
    auto it = matrices_.find(handle);
    if (it == matrices_.end() || !caller.Sees(it->second->description())) return Absent(handle, " already");
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
  if (after.empty()) {
    for (const auto& [id, pending] : uploads_) {
      if (out.size() >= limit) return out;
      MatrixDescription d = pending->matrix_->description();
      if (!caller.Sees(d)) continue;
      d.state = MatrixDescription::State::kUploading;
      d.received_bytes = pending->received();
      out.push_back(std::move(d));
    }
  }
  auto stored = matrices_.upper_bound(after);
  auto lost = damaged_.upper_bound(after);
  while (out.size() < limit && (stored != matrices_.end() || lost != damaged_.end())) {
    if (lost == damaged_.end() || (stored != matrices_.end() && stored->first < lost->first)) {
      if (caller.Sees(stored->second->description())) out.push_back(stored->second->description());
      ++stored;
    } else {
      MatrixDescription d;
      d.handle = lost->first;
      d.owner = lost->second.owner;
      d.state = MatrixDescription::State::kLost;
      d.problem = lost->second.why;
      if (caller.Sees(d)) out.push_back(std::move(d));
      ++lost;
    }
  }
  return out;
}

void MatrixStore::Publish() const {
  // Read and published under the lock: two threads cannot publish out of
  // order and leave a stale value on the gauge.
  std::lock_guard lock(mu_);
  on_usage_(usage_->bytes(), matrices_.size());
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

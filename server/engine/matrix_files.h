// Stored matrices on disk (--matrix-dir), so that handles outlive the
// process: a crash, a kill -9, an exit 3 after a sticky GPU fault, a
// container restart. One file per matrix, `<handle>.gemm`: a header (magic,
// version, element type, shape, owner, label), the data, and a CRC-32 of everything
// before it. A file is written under a temporary name, fsynced, renamed
// and its directory fsynced before the upload is acknowledged, so a file
// with the final name is always whole; a torn write leaves a `.tmp`, which
// the next start removes. A file whose checksum fails is never served: it
// is renamed `<handle>.gemm.corrupt` and the handle answers DATA_LOSS.
// One gemmd per directory: Open takes an exclusive lock on `.gemmd.lock`,
// held while the object lives and released by the kernel if the process
// dies. Two servers on one directory would each remove the other's
// half-written uploads at start and delete files the other still serves.
#pragma once

#include <absl/status/status.h>
#include <absl/status/statusor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "engine/matrix_store.h"

namespace gemmd {

class MatrixFiles {
 public:
  // Creates `dir` if needed; FAILED_PRECONDITION if it cannot be written or
  // another process holds its lock (the message names that process).
  static absl::StatusOr<std::unique_ptr<MatrixFiles>> Open(const std::string& dir);
  ~MatrixFiles();
  MatrixFiles(const MatrixFiles&) = delete;
  MatrixFiles& operator=(const MatrixFiles&) = delete;

  // Writes `desc`'s matrix durably (returns once it is on disk).
  absl::Status Write(const MatrixDescription& desc, const void* data) const;
  // Removes the matrix's file; OK if there is none.
  void Remove(const std::string& handle) const;
  // Removes a lost matrix's set-aside `.gemm.corrupt` file.
  void RemoveLost(const std::string& handle) const;

  // Every stored matrix, checked: `load(desc, data)` for each good one; the
  // bad ones are set aside and returned, handle -> what was wrong (and the
  // owner, where the header is whole enough to tell). Files whose names are
  // not handles are left alone.
  using Loader = std::function<void(const MatrixDescription&, std::string_view data)>;
  std::map<std::string, LostMatrix, std::less<>> LoadAll(const Loader& load) const;

  const std::string& dir() const { return dir_; }

 private:
  MatrixFiles(std::string dir, int lock_fd) : dir_(std::move(dir)), lock_fd_(lock_fd) {}
  std::string PathOf(const std::string& handle) const { return dir_ + "/" + handle + ".gemm"; }

  std::string dir_;
  int lock_fd_;  // -1 where the filesystem cannot lock
};

}  // namespace gemmd

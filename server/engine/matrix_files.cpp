#include "engine/matrix_files.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace gemmd {
namespace {

constexpr char kMagic[8] = {'G', 'E', 'M', 'M', 'D', 'M', 'A', 'T'};
// Version 1 holds fp16 and nothing else (its `type` field was written 0);
// version 2 names the element type. An fp16 matrix is still written as
// version 1, so that a server older than the types reads it.
constexpr uint32_t kFp16Version = 1;
constexpr uint32_t kTypedVersion = 2;

// The fixed part of the header, little-endian as written by this x86/ARM host.
struct Header {
  char magic[8];
  uint32_t version;
  uint32_t owner_bytes;
  uint32_t label_bytes;
  uint32_t type;  // gemm::ElementType's value (version 2)
  int64_t rows;
  int64_t cols;
};

bool KnownVersion(const Header& h) {
  return h.version == kFp16Version || (h.version == kTypedVersion && h.type < gemm::kElementTypes);
}
static_assert(sizeof(Header) == 40);

gemm::ElementType TypeOf(const Header& h) {
  return h.version == kFp16Version ? gemm::ElementType::kF16 : static_cast<gemm::ElementType>(h.type);
}

uint32_t Crc(uint32_t crc, const void* data, size_t bytes) {
  return static_cast<uint32_t>(crc32_z(crc, static_cast<const Bytef*>(data), bytes));
}

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

bool WriteAll(int fd, const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

bool SyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return false;
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}

// The directory's lock, with this process's pid written in it for the
// message a second server gets. flock, not fcntl: its lock belongs to this
// open file, so closing any other descriptor of the file keeps it.
absl::StatusOr<int> LockDir(const std::string& dir) {
  const std::string path = dir + "/.gemmd.lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return absl::FailedPreconditionError(Errno("--matrix-dir " + dir + ": cannot open " + path));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    if (error != EWOULDBLOCK) {  // ENOLCK, EOPNOTSUPP: a filesystem without locks
      spdlog::warn("--matrix-dir {}: cannot lock {} ({}); nothing stops a second gemmd from using it", dir, path,
                   std::strerror(error));
      ::close(fd);
      return -1;
    }
    char holder[32] = {};
    const ssize_t n = ::pread(fd, holder, sizeof holder - 1, 0);
    ::close(fd);
    std::string pid(holder, n > 0 ? static_cast<size_t>(n) : 0);
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    return absl::FailedPreconditionError(
        "--matrix-dir " + dir + " is in use by another gemmd (pid " + (pid.empty() ? "unknown" : pid) +
        "): two servers on one directory would delete each other's files; give each its own directory");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    spdlog::warn("--matrix-dir {}: cannot write this process's pid into {}", dir, path);
  }
  return fd;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MatrixFiles>> MatrixFiles::Open(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::FailedPreconditionError("--matrix-dir " + dir + ": " + ec.message());
  const std::string probe = dir + "/.gemmd-probe";
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return absl::FailedPreconditionError(Errno("--matrix-dir " + dir + " is not writable"));
  ::close(fd);
  ::unlink(probe.c_str());
  auto lock_fd = LockDir(dir);
  if (!lock_fd.ok()) return lock_fd.status();
  return std::unique_ptr<MatrixFiles>(new MatrixFiles(dir, *lock_fd));
}

MatrixFiles::~MatrixFiles() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the lock
}

absl::Status MatrixFiles::Write(const MatrixDescription& desc, const void* data) const {
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = desc.type == gemm::ElementType::kF16 ? kFp16Version : kTypedVersion;
  h.type = static_cast<uint32_t>(desc.type);
  h.owner_bytes = static_cast<uint32_t>(desc.owner.size());
  h.label_bytes = static_cast<uint32_t>(desc.label.size());
  h.rows = desc.rows;
  h.cols = desc.cols;
  uint32_t crc = Crc(0, &h, sizeof h);
  crc = Crc(crc, desc.owner.data(), desc.owner.size());
  crc = Crc(crc, desc.label.data(), desc.label.size());
  crc = Crc(crc, data, desc.bytes);

  const std::string path = PathOf(desc.handle), tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return absl::UnavailableError(Errno("cannot store the matrix in " + dir_));
  bool ok = WriteAll(fd, &h, sizeof h) && WriteAll(fd, desc.owner.data(), desc.owner.size()) &&
            WriteAll(fd, desc.label.data(), desc.label.size()) && WriteAll(fd, data, desc.bytes) &&
            WriteAll(fd, &crc, sizeof crc) && ::fsync(fd) == 0;
  int error = ok ? 0 : errno;
  ::close(fd);
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) ok = false, error = errno;
  if (ok && !SyncDir(dir_)) ok = false, error = errno;
  if (!ok) {
    ::unlink(tmp.c_str());
    errno = error;
    const std::string why = Errno("cannot store the matrix in " + dir_);
    return error == ENOSPC ? absl::ResourceExhaustedError(why + " (disk full)") : absl::UnavailableError(why);
  }
  return absl::OkStatus();
}

void MatrixFiles::Remove(const std::string& handle) const {
  if (::unlink(PathOf(handle).c_str()) == 0) SyncDir(dir_);
}

void MatrixFiles::RemoveLost(const std::string& handle) const {
  if (::unlink((PathOf(handle) + ".corrupt").c_str()) == 0) SyncDir(dir_);
}

namespace {

// The owner a damaged file names, if its header is whole enough to say.
std::string OwnerOf(const std::string& bytes) {
  Header h{};
  if (bytes.size() < sizeof h) return "";
  std::memcpy(&h, bytes.data(), sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || !KnownVersion(h)) return "";
  if (h.owner_bytes > bytes.size() - sizeof h) return "";
  return bytes.substr(sizeof h, h.owner_bytes);
}

std::string Slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

std::map<std::string, LostMatrix, std::less<>> MatrixFiles::LoadAll(const Loader& load) const {
  std::map<std::string, LostMatrix, std::less<>> bad;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 4 && name.substr(name.size() - 4) == ".tmp") {  // an upload that never finished
      std::filesystem::remove(entry.path(), ec);
      continue;
    }
    if (name.size() > 13 && name.substr(name.size() - 13) == ".gemm.corrupt") {  // set aside at an earlier start
      const std::string handle = name.substr(0, name.size() - 13);
      if (!MatrixStore::CheckHandle(handle).ok()) continue;
      bad.emplace(handle, LostMatrix{"its file failed its check at an earlier start", OwnerOf(Slurp(entry.path()))});
      continue;
    }
    if (name.size() <= 5 || name.substr(name.size() - 5) != ".gemm") continue;
    const std::string handle = name.substr(0, name.size() - 5);
    if (!MatrixStore::CheckHandle(handle).ok()) {
      spdlog::warn("--matrix-dir {}: {} is not named as gemmd names its files; left alone", dir_, name);
      continue;
    }
    const std::string bytes = Slurp(entry.path());
    std::string why;
    Header h{};
    if (bytes.size() < sizeof h + sizeof(uint32_t)) {
      why = "shorter than a header";
    } else {
      std::memcpy(&h, bytes.data(), sizeof h);
      const uint64_t body = bytes.size() - sizeof h - sizeof(uint32_t);
      uint32_t stored = 0;
      std::memcpy(&stored, bytes.data() + bytes.size() - sizeof stored, sizeof stored);
      if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || !KnownVersion(h)) {
        why = "not a gemmd matrix file of version " + std::to_string(kFp16Version) + " or " +
              std::to_string(kTypedVersion);
      } else if (h.rows < 1 || h.cols < 1 || uint64_t{h.owner_bytes} + h.label_bytes > body ||
                 body - h.owner_bytes - h.label_bytes !=
                     static_cast<uint64_t>(h.rows) * h.cols * gemm::ElementBytes(TypeOf(h))) {
        why = "its size does not match its header";
      } else if (Crc(0, bytes.data(), bytes.size() - sizeof stored) != stored) {
        why = "its checksum does not match its contents";
      }
    }
    if (!why.empty()) {
      std::filesystem::rename(entry.path(), entry.path().string() + ".corrupt", ec);
      spdlog::error("stored matrix {} is damaged ({}); set aside as {}.corrupt, its handle answers DATA_LOSS", handle,
                    why, name);
      bad.emplace(handle, LostMatrix{why, OwnerOf(bytes)});
      continue;
    }
    MatrixDescription desc;
    desc.handle = handle;
    desc.rows = h.rows;
    desc.cols = h.cols;
    desc.type = TypeOf(h);
    desc.bytes = static_cast<uint64_t>(h.rows) * h.cols * gemm::ElementBytes(desc.type);
    desc.owner = bytes.substr(sizeof h, h.owner_bytes);
    desc.label = bytes.substr(sizeof h + h.owner_bytes, h.label_bytes);
    load(desc, std::string_view(bytes).substr(sizeof h + h.owner_bytes + h.label_bytes, desc.bytes));
  }
  return bad;
}

}  // namespace gemmd

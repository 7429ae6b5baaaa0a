// Stored matrices on disk: what one store kept, a new store over the same
// directory serves byte for byte (owner, label and quota too); a damaged
// file is never served but answers DATA_LOSS; Delete removes the file; a
// torn write leaves nothing behind.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "engine/matrix_files.h"
#include "engine/matrix_store.h"

namespace gemmd {
namespace {

namespace fs = std::filesystem;

class MatrixFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gemmd-files-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A store over dir_, as gemmd builds it at start.
  std::unique_ptr<MatrixStore> OpenStore(size_t* loaded = nullptr) {
    auto store = std::make_unique<MatrixStore>(64 << 20);
    auto files = MatrixFiles::Open(dir_.string());
    EXPECT_TRUE(files.ok()) << files.status();
    if (!files.ok()) return nullptr;
    const size_t n = store->AttachFiles(std::move(*files));
    if (loaded) *loaded = n;
    return store;
  }
  std::string Put(MatrixStore& store, int64_t rows, int64_t cols, const std::string& label, const std::string& owner,
                  bool transient = false) {
    auto pending = store.Reserve(rows, cols, label, owner, transient);
    EXPECT_TRUE(pending.ok()) << pending.status();
    std::string bytes(rows * cols * 2, '\0');
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 + rows);
    EXPECT_TRUE((*pending)->Append(bytes).ok());
    auto desc = store.Commit(std::move(*pending));
    EXPECT_TRUE(desc.ok()) << desc.status();
    return desc->handle;
  }

  fs::path dir_;
};

// Every element type comes back as itself; fp16 is still written as the
// version-1 file a server older than the types reads.
TEST_F(MatrixFilesTest, EveryElementTypeComesBackWithItsType) {
  std::map<std::string, std::pair<gemm::ElementType, std::string>> kept;
  {
    auto store = OpenStore();
    for (auto type : {gemm::ElementType::kF16, gemm::ElementType::kBF16, gemm::ElementType::kF32,
                      gemm::ElementType::kF8E4M3, gemm::ElementType::kF8E5M2}) {
      auto pending = store->Reserve(3, 7, "", "alice", false, type);
      ASSERT_TRUE(pending.ok()) << pending.status();
      std::string bytes(3 * 7 * gemm::ElementBytes(type), '\0');
      for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 13 + static_cast<int>(type));
      ASSERT_TRUE((*pending)->Append(bytes).ok());
      EXPECT_FALSE((*pending)->Append(std::string(1, 'x')).ok()) << "one byte past its type's size";
      auto desc = store->Commit(std::move(*pending));
      ASSERT_TRUE(desc.ok());
      kept[desc->handle] = {type, bytes};
    }
  }
  for (const auto& [handle, what] : kept) {
    std::ifstream in(dir_ / (handle + ".gemm"), std::ios::binary);
    uint32_t version = 0;
    in.seekg(8);
    in.read(reinterpret_cast<char*>(&version), 4);
    EXPECT_EQ(version, what.first == gemm::ElementType::kF16 ? 1u : 2u) << gemm::ElementName(what.first);
  }
  size_t loaded = 0;
  auto store = OpenStore(&loaded);
  EXPECT_EQ(loaded, kept.size());
  for (const auto& [handle, what] : kept) {
    auto m = store->Get(handle, {"alice", false});
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ((*m)->description().type, what.first);
    EXPECT_EQ(std::string((*m)->data(), (*m)->description().bytes), what.second);
  }
}

TEST_F(MatrixFilesTest, ANewStoreServesWhatTheLastOneKeptByteForByte) {
  std::string a, b;
  uint64_t used = 0;
  {
    auto store = OpenStore();
    a = Put(*store, 3, 5, "A of a test", "alice");
    b = Put(*store, 40, 33, "", "bob");
    used = store->used_bytes();
  }  // the process ends (as a kill -9 would: the files were already whole)
  size_t loaded = 0;
  auto store = OpenStore(&loaded);
  EXPECT_EQ(loaded, 2u);
  EXPECT_EQ(store->used_bytes(), used) << "the quota counts what was loaded";
  auto m = store->Get(a, {"alice", false});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->description().label, "A of a test");
  EXPECT_EQ((*m)->description().rows, 3);
  EXPECT_EQ((*m)->description().cols, 5);
  const auto* bytes = reinterpret_cast<const char*>((*m)->data());
  for (size_t i = 0; i < 3 * 5 * 2; ++i) ASSERT_EQ(bytes[i], static_cast<char>(i * 7 + 3)) << i;
  EXPECT_EQ(store->Get(a, {"bob", false}).status().code(), absl::StatusCode::kNotFound) << "still alice's";
  EXPECT_TRUE(store->Get(b, {"bob", false}).ok());
}

TEST_F(MatrixFilesTest, ADamagedFileIsNeverServedAndAnswersDataLoss) {
  std::string handle;
  {
    auto store = OpenStore();
    handle = Put(*store, 16, 16, "", "alice");
  }
  {  // one flipped byte in the middle of the data
    std::fstream f(dir_ / (handle + ".gemm"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(200);
    f.put('\x5a');
  }
  size_t loaded = 9;
  auto store = OpenStore(&loaded);
  EXPECT_EQ(loaded, 0u);
  EXPECT_EQ(store->used_bytes(), 0u);
  const auto got = store->Get(handle, {"alice", false});
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(got.status().message().find("checksum"), std::string::npos) << got.status();
  EXPECT_TRUE(fs::exists(dir_ / (handle + ".gemm.corrupt"))) << "set aside for the operator";
  EXPECT_FALSE(fs::exists(dir_ / (handle + ".gemm")));
  // Truncated files too; and a restart does not forget the earlier loss.
  const std::string truncated = "m-0123456789abcdef0123456789abcdef";
  std::ofstream(dir_ / (truncated + ".gemm"), std::ios::binary) << "GEMMDMAT";
  store.reset();  // the process ends: the next start takes the directory
  auto again = OpenStore();
  // The truncated file names no owner: only an operator sees it.
  EXPECT_EQ(again->Get(truncated, {"alice", true}).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(again->Get(truncated, {"alice", false}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(again->Get(handle, {"alice", false}).status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(MatrixFilesTest, DeleteRemovesTheFileAndATornWriteLeavesNothing) {
  std::string handle;
  {
    auto store = OpenStore();
    handle = Put(*store, 8, 8, "", "");
    EXPECT_TRUE(fs::exists(dir_ / (handle + ".gemm")));
    ASSERT_TRUE(store->Delete(handle, {"", false}).ok());
    EXPECT_FALSE(fs::exists(dir_ / (handle + ".gemm")));
  }
  std::ofstream(dir_ / "m-half-written.gemm.tmp", std::ios::binary) << "GEMMDMAT partial";
  size_t loaded = 9;
  auto store = OpenStore(&loaded);
  EXPECT_EQ(loaded, 0u);
  EXPECT_FALSE(fs::exists(dir_ / "m-half-written.gemm.tmp"));
  EXPECT_EQ(store->Get(handle, {"", false}).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(MatrixFilesTest, ATransientMatrixIsServedButNeverWrittenAndIsGoneAfterARestart) {
  std::string durable, left;
  {
    auto store = OpenStore();
    durable = Put(*store, 4, 4, "", "alice");
    const std::string scratch = Put(*store, 6, 6, "scratch", "alice", /*transient=*/true);
    EXPECT_TRUE(fs::exists(dir_ / (durable + ".gemm")));
    size_t files = 0;
    for (const auto& entry : fs::directory_iterator(dir_)) files += entry.path().filename() != ".gemmd.lock";
    EXPECT_EQ(files, 1u) << "only the durable matrix is on disk, and no temporary is left";
    auto m = store->Get(scratch, {"alice", false});
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_TRUE((*m)->description().transient);
    const auto* bytes = reinterpret_cast<const char*>((*m)->data());
    for (size_t i = 0; i < 6 * 6 * 2; ++i) ASSERT_EQ(bytes[i], static_cast<char>(i * 7 + 6)) << i;
    EXPECT_EQ(store->Delete(scratch, {"alice", false}).value_or(0), 6u * 6 * 2);
    left = Put(*store, 5, 5, "", "alice", /*transient=*/true);  // still stored when the process ends
  }
  size_t loaded = 0;
  auto store = OpenStore(&loaded);
  EXPECT_EQ(loaded, 1u);
  EXPECT_TRUE(store->Get(durable, {"alice", false}).ok());
  EXPECT_EQ(store->Get(left, {"alice", false}).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(MatrixFilesTest, ASecondOpenOfTheDirectoryIsRefusedUntilTheFirstCloses) {
  auto first = MatrixFiles::Open(dir_.string());
  ASSERT_TRUE(first.ok()) << first.status();
  const auto second = MatrixFiles::Open(dir_.string());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  // The holder is named, so that an operator can find it.
  EXPECT_NE(second.status().message().find("in use by another gemmd (pid " + std::to_string(::getpid()) + ")"),
            std::string::npos)
      << second.status();
  first->reset();
  EXPECT_TRUE(MatrixFiles::Open(dir_.string()).ok());
}

TEST_F(MatrixFilesTest, TheLockFileIsNotTakenForAMatrix) {
  std::string handle;
  {
    auto store = OpenStore();
    handle = Put(*store, 2, 2, "", "alice");
  }
  ASSERT_TRUE(fs::exists(dir_ / ".gemmd.lock"));
  size_t loaded = 0;
  auto store = OpenStore(&loaded);
  EXPECT_EQ(loaded, 1u);
  EXPECT_TRUE(store->Get(handle, {"alice", false}).ok());
}

TEST_F(MatrixFilesTest, AnUnwritableDirectoryIsRefusedAtOpen) {
  std::ofstream(dir_.string() + "-file") << "x";  // a file where the directory should be
  const auto files = MatrixFiles::Open(dir_.string() + "-file");
  EXPECT_EQ(files.status().code(), absl::StatusCode::kFailedPrecondition);
  fs::remove(dir_.string() + "-file");
}

}  // namespace
}  // namespace gemmd

#include "rectrain/io/fs/file_system.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "rectrain/io/fs/memory_file_system.h"

namespace rectrain::io {
namespace {

class MemoryFsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterFileSystem("mem", &mem_);
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("io_fs_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "tables");
  }
  void TearDown() override {
    std::filesystem::remove_all(dir_);
    mem_.set_fault(nullptr);
  }
  void WriteLocal(const std::string& name, const std::string& content) {
    std::ofstream(dir_ / name, std::ios::binary) << content;
  }
  MemoryFileSystem mem_;
  std::filesystem::path dir_;
};

TEST_F(MemoryFsTest, PathsDispatchByScheme) {
  EXPECT_TRUE(IsRemotePath("mem://b/x"));
  EXPECT_FALSE(IsRemotePath("data/x.tsv"));
  EXPECT_FALSE(IsRemotePath("/abs/x.tsv"));
  EXPECT_EQ(JoinPath("mem://b/dir", "x"), "mem://b/dir/x");
  EXPECT_EQ(JoinPath("mem://b/dir/", "/x"), "mem://b/dir/x");
  ASSERT_TRUE(WriteFileAtomically("mem://b/dir/x.tsv", "1\t2\n").ok());
  EXPECT_EQ(*ReadFileToString("mem://b/dir/x.tsv"), "1\t2\n");
  EXPECT_EQ(mem_.Paths(), std::vector<std::string>{"mem://b/dir/x.tsv"});
}

TEST_F(MemoryFsTest, ExpandPathsTakesPrefixesAndGlobs) {
  for (const char* p : {"mem://b/d/part-1.tsv", "mem://b/d/part-0.tsv", "mem://b/d/sub/x.tsv", "mem://b/e.tsv"}) {
    mem_.Put(p, "x");
  }
  auto prefix = ExpandPaths({"mem://b/d/"});
  ASSERT_TRUE(prefix.ok()) << prefix.status();
  EXPECT_EQ(*prefix, (std::vector<std::string>{"mem://b/d/part-0.tsv", "mem://b/d/part-1.tsv", "mem://b/d/sub/x.tsv"}));
  auto glob = ExpandPaths({"mem://b/d/part-*.tsv", "mem://b/e.tsv"});
  ASSERT_TRUE(glob.ok()) << glob.status();
  EXPECT_EQ(*glob, (std::vector<std::string>{"mem://b/d/part-0.tsv", "mem://b/d/part-1.tsv", "mem://b/e.tsv"}));
  EXPECT_EQ(ExpandPaths({"mem://b/none/"}).status().message(), "no object under the prefix \"mem://b/none/\"");
  EXPECT_EQ(ExpandPaths({"mem://b/*.parquet"}).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ExpandPaths({"mem://b/d"}).status().code(), StatusCode::kInvalidArgument);  // a "directory"
  EXPECT_EQ(ExpandPaths({"mem://b/nope.tsv"}).status().code(), StatusCode::kNotFound);
}

TEST_F(MemoryFsTest, AWriterPublishesOnlyOnCommit) {
  {
    auto w = AtomicFileWriter::Create("mem://b/out");
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Append("abc").ok());
    EXPECT_TRUE(mem_.Paths().empty());
  }
  EXPECT_TRUE(mem_.Paths().empty());  // abandoned
  mem_.set_fault([](std::string_view op, const std::string&) {
    return op == "write" ? UnavailableError("injected") : OkStatus();
  });
  EXPECT_EQ(WriteFileAtomically("mem://b/out", "x").code(), StatusCode::kUnavailable);
  EXPECT_TRUE(mem_.Paths().empty());
}

TEST_F(MemoryFsTest, CopyTreeWritesTheNamedFileLastBothWays) {
  WriteLocal("meta.json", "{}");
  WriteLocal("dense.bin", std::string(100, 'd'));
  WriteLocal("tables/a.bin", std::string(3 << 20, 'a'));
  ASSERT_TRUE(CopyTree(dir_.string(), "mem://b/ck/step-5", "meta.json").ok());
  const std::vector<std::string> order = mem_.commit_order();
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order.back(), "mem://b/ck/step-5/meta.json");
  auto listed = FileSystemFor("mem://b/ck").List("mem://b/ck", /*recursive=*/false);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].name, "step-5");
  EXPECT_TRUE((*listed)[0].is_dir);

  const std::string back = (dir_ / "back").string();
  ASSERT_TRUE(CopyTree("mem://b/ck/step-5", back).ok());
  std::ifstream in(back + "/tables/a.bin", std::ios::binary);
  const std::string a((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(a, std::string(3 << 20, 'a'));

  // A failure before the last file leaves the destination without it.
  mem_.set_fault([](std::string_view op, const std::string& path) {
    return op == "write" && path.find("dense.bin") != std::string::npos ? UnavailableError("injected") : OkStatus();
  });
  EXPECT_FALSE(CopyTree(dir_.string(), "mem://b/ck/step-6", "meta.json").ok());
  EXPECT_EQ(FileSystemFor("mem://").Stat("mem://b/ck/step-6/meta.json").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(CopyTree(dir_.string(), "mem://b/ck/step-7", "missing.json").code(), StatusCode::kNotFound);
}

TEST_F(MemoryFsTest, LocalListAndRemove) {
  WriteLocal("b.txt", "bb");
  WriteLocal("tables/a.bin", "a");
  FileSystem& local = FileSystemFor(dir_.string());
  auto flat = local.List(dir_.string(), false);
  ASSERT_TRUE(flat.ok());
  ASSERT_EQ(flat->size(), 2u);
  EXPECT_EQ((*flat)[0].name, "b.txt");
  EXPECT_EQ((*flat)[0].size, 2);
  EXPECT_TRUE((*flat)[1].is_dir);
  auto deep = local.List(dir_.string(), true);
  ASSERT_TRUE(deep.ok());
  ASSERT_EQ(deep->size(), 2u);
  EXPECT_EQ((*deep)[1].name, "tables/a.bin");
  EXPECT_EQ(local.List((dir_ / "nope").string(), false).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(local.RemoveAll((dir_ / "tables").string()).ok());
  EXPECT_FALSE(std::filesystem::exists(dir_ / "tables"));
  ASSERT_TRUE(local.RemoveAll((dir_ / "tables").string()).ok());  // nothing there is fine
}

}  // namespace
}  // namespace rectrain::io

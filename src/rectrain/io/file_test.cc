#include "rectrain/io/file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace rectrain::io {
namespace {

class FileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("io_file_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& content) {
    std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }
  std::filesystem::path dir_;
};

TEST_F(FileTest, ExpandPathsSortsAndDedupes) {
  std::string b = Write("b.tsv", "x");
  std::string a = Write("a.tsv", "y");
  Write("c.txt", "z");
  auto r = ExpandPaths({(dir_ / "*.tsv").string(), a});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, (std::vector<std::string>{a, b}));
}

TEST_F(FileTest, ExpandPathsErrors) {
  auto none = ExpandPaths({(dir_ / "*.parquet").string()});
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(none.status().message(),
            "no file matches the pattern \"" + (dir_ / "*.parquet").string() + "\"");
  auto missing = ExpandPaths({(dir_ / "nope.tsv").string()});
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "no such file: " + (dir_ / "nope.tsv").string());
  auto dir = ExpandPaths({dir_.string()});
  EXPECT_EQ(dir.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(dir.status().message(), dir_.string() + " is a directory; list files, or use a glob such as " +
                                        dir_.string() + "/*.tsv");
  auto empty = ExpandPaths({});
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(FileTest, ReadAtReadsAndStopsAtEof) {
  std::string p = Write("f", "hello world");
  auto f = RandomAccessFile::Open(p);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ((*f)->size(), 11);
  char buf[32];
  auto n = (*f)->ReadAt(6, 20, buf);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 5);
  EXPECT_EQ(std::string(buf, 5), "world");
}

TEST_F(FileTest, AtomicWriterCommitsOrLeavesNothing) {
  std::string p = (dir_ / "out.txt").string();
  {
    auto w = AtomicFileWriter::Create(p);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Append("abc").ok());
    ASSERT_TRUE((*w)->Append(std::string(3 << 20, 'x')).ok());
    EXPECT_FALSE(std::filesystem::exists(p));
    ASSERT_TRUE((*w)->Commit().ok());
  }
  auto s = ReadFileToString(p);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->size(), 3u + (3u << 20));
  EXPECT_EQ(s->substr(0, 4), "abcx");
  {
    auto w = AtomicFileWriter::Create((dir_ / "abandoned.txt").string());
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Append("abc").ok());
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ / "abandoned.txt"));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), {}), 1);
  auto bad = AtomicFileWriter::Create((dir_ / "no/such/dir.txt").string());
  EXPECT_FALSE(bad.ok());
}

TEST_F(FileTest, WriteFileAtomicallyReplacesTheWholeFile) {
  const std::string p = Write("f.txt", "old and longer");
  ASSERT_TRUE(WriteFileAtomically(p, "new").ok());
  EXPECT_EQ(*ReadFileToString(p), "new");
  EXPECT_FALSE(WriteFileAtomically((dir_ / "no/such/f.txt").string(), "x").ok());
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), {}), 1);  // no temp file left
}

}  // namespace
}  // namespace rectrain::io

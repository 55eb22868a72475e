// The cache byte format: the committed golden file (tests/golden/cache/) still reads and gives
// the expected rows (format stability), the writer reproduces it byte for byte, and every
// bit flip (every structural byte, every third payload byte) or truncation is a DataLoss error naming the file (mutation
// test: never a crash, never wrong rows). Regenerate the golden file (only with a format
// version bump) with RECTRAIN_UPDATE_GOLDEN=1 ./data_cache_format_test.
#include "rectrain/data/internal/cache_format.h"

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "rectrain/data/cache.h"
#include "rectrain/data/internal/test_util.h"

#ifndef RECTRAIN_GOLDEN_DIR
#error "RECTRAIN_GOLDEN_DIR must point at tests/golden"
#endif

namespace rectrain::data::internal {
namespace {

using test_util::TempDir;

constexpr int64_t kRows = 300;

CacheSchema GoldenSchema() {
  CacheSchema s;
  s.dense_names = {"d0", "d1"};
  s.sparse_names = {"c0", "tags", "c2"};
  s.multi = {false, true, false};
  s.has_group = true;
  return s;
}

// Row r of the golden data: labels, dense, ids and group keys from fixed formulas. c0 has few
// distinct ids (dictionary, 1-byte indices), c2 all distinct (plain), tags 0..3 ids per row.
Batch GoldenRows(int64_t begin, int64_t end) {
  Batch b;
  b.size = end - begin;
  b.num_dense = 2;
  b.sparse.resize(3);
  b.sparse[1].offsets.push_back(0);
  for (int64_t r = begin; r < end; ++r) {
    b.labels.push_back(r % 4 == 0 ? 1.0f : 0.0f);
    b.dense.push_back(static_cast<float>(r % 7) * 0.5f);
    b.dense.push_back(r % 13 == 0 ? 0.0f : 1.0f / static_cast<float>(1 + r % 5));
    b.sparse[0].ids.push_back(0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(r % 10 + 1));
    for (int64_t k = 0; k < r % 4; ++k) b.sparse[1].ids.push_back(1000 + static_cast<uint64_t>((r + k) % 6));
    b.sparse[1].offsets.push_back(static_cast<int32_t>(b.sparse[1].ids.size()));
    b.sparse[2].ids.push_back(0xc2b2ae3d27d4eb4fULL * static_cast<uint64_t>(r + 1));
    b.group_keys.push_back(static_cast<uint64_t>(r / 25));
  }
  return b;
}

std::string GoldenPath() { return std::string(RECTRAIN_GOLDEN_DIR) + "/cache/small_v1.rtc"; }

Status WriteGolden(const std::string& path) {
  RECTRAIN_ASSIGN_OR_RETURN(auto w, CacheFileWriter::Create(path, GoldenSchema(), CacheCodec::kLz4, 128));
  // Batches of uneven sizes, cut into blocks of 128 rows by the writer.
  for (auto [a, b] : {std::pair<int64_t, int64_t>{0, 100}, {100, 101}, {101, kRows}}) {
    Status s = w->Append(GoldenRows(a, b));
    if (!s.ok()) return s;
  }
  CacheBuildCounts counts;
  counts.rows_filtered = 5;
  counts.source_files = 1;
  counts.source_bytes = 12345;
  return w->Finish("golden-key", "golden-signature", "criteo", counts);
}

std::string ReadBytes(const std::string& path) { return io::ReadFileToString(path).value(); }

TEST(CacheFormat, GoldenFileReadsWithTheExpectedRows) {
  if (std::getenv("RECTRAIN_UPDATE_GOLDEN") != nullptr) {
    ASSERT_TRUE(WriteGolden(GoldenPath()).ok());
  }
  auto f = CacheFile::Open(GoldenPath());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const CacheFooter& footer = (*f)->footer();
  EXPECT_EQ(footer.rows, kRows);
  EXPECT_EQ(footer.blocks.size(), 3u);
  EXPECT_EQ(footer.key, "golden-key");
  EXPECT_EQ(footer.counts.rows_filtered, 5);
  EXPECT_EQ(footer.schema.sparse_names, GoldenSchema().sparse_names);
  ReadOptions o;
  o.batch_size = kRows;
  auto reader = OpenCacheReader({GoldenPath()}, o, "golden-key");
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  auto batch = (*reader)->Next();
  ASSERT_TRUE(batch.ok() && batch->has_value()) << batch.status().ToString();
  const Batch want = GoldenRows(0, kRows);
  const Batch& got = **batch;
  EXPECT_EQ(got.size, kRows);
  EXPECT_EQ(got.labels, want.labels);
  EXPECT_EQ(got.dense, want.dense);
  for (int f2 = 0; f2 < 3; ++f2) {
    EXPECT_EQ(got.sparse[f2].ids, want.sparse[f2].ids) << f2;
    EXPECT_EQ(got.sparse[f2].offsets, want.sparse[f2].offsets) << f2;
  }
  EXPECT_EQ(got.group_keys, want.group_keys);
  auto end = (*reader)->Next();
  ASSERT_TRUE(end.ok() && !end->has_value());
  EXPECT_EQ((*reader)->Stats().rows_filtered, 5);
}

TEST(CacheFormat, WriterReproducesTheGoldenBytes) {
  TempDir dir;
  const std::string path = dir.Path("again.rtc");
  ASSERT_TRUE(WriteGolden(path).ok());
  const std::string a = ReadBytes(path), b = ReadBytes(GoldenPath());
  EXPECT_EQ(a.size(), b.size());
  EXPECT_TRUE(a == b) << "the writer's bytes changed: a format change needs a version bump "
                         "(docs/formats/cache.md)";
  // The golden data exercises lz4, the dictionary encoding and plain streams.
  auto f = CacheFile::Open(path);
  ASSERT_TRUE(f.ok());
  EXPECT_LT((*f)->file_size(), kRows * (4 + 8 + 8 + 8 + 8 + 4 + 8));
}

// Reads every block; the first error, or OK.
Status ReadEverything(const std::string& path) {
  RECTRAIN_ASSIGN_OR_RETURN(auto f, CacheFile::Open(path));
  CacheReadScratch scratch;
  Batch b;
  for (int64_t i = 0; i < static_cast<int64_t>(f->footer().blocks.size()); ++i) {
    RECTRAIN_RETURN_IF_ERROR(f->ReadBlock(i, &scratch, &b));
  }
  return OkStatus();
}

TEST(CacheFormat, BitFlipsAreDetected) {
  TempDir dir;
  const std::string original = ReadBytes(GoldenPath());
  const std::string path = dir.Path("mutant.rtc");
  // Every byte of the structure (file header, block headers and descriptors, footer, trailer)
  // and every third payload byte; the flipped bit varies with the position.
  auto f = CacheFile::Open(GoldenPath());
  ASSERT_TRUE(f.ok());
  std::vector<bool> structural(original.size(), false);
  for (size_t i = 0; i < 16; ++i) structural[i] = true;
  const int num_streams = 2 + 3 + 1 + 1;
  for (const CacheBlockRef& b : (*f)->footer().blocks) {
    for (int64_t i = 0; i < 16 + num_streams * 24; ++i) structural[static_cast<size_t>(b.offset + i)] = true;
  }
  const CacheBlockRef& last = (*f)->footer().blocks.back();
  for (size_t i = static_cast<size_t>(last.offset + last.bytes); i < original.size(); ++i) structural[i] = true;
  int64_t checked = 0;
  for (size_t pos = 0; pos < original.size(); ++pos) {
    if (!structural[pos] && pos % 3 != 0) continue;
    for (int bit : {static_cast<int>(pos % 8)}) {
      std::string m = original;
      m[pos] = static_cast<char>(m[pos] ^ (1 << bit));
      std::ofstream(path, std::ios::binary | std::ios::trunc) << m;
      Status s = ReadEverything(path);
      ASSERT_FALSE(s.ok()) << "flip of bit " << bit << " at byte " << pos << " went unnoticed";
      ASSERT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
      ASSERT_NE(s.message().find(path), std::string::npos) << s.message();
      ++checked;
    }
  }
  EXPECT_GT(checked, 2000);
}

TEST(CacheFormat, EveryTruncationIsDetectedAndBlockErrorsNameTheBlock) {
  TempDir dir;
  const std::string original = ReadBytes(GoldenPath());
  const std::string path = dir.Path("short.rtc");
  for (size_t len = 0; len < original.size(); len += (len < 64 ? 1 : 37)) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << original.substr(0, len);
    Status s = ReadEverything(path);
    ASSERT_FALSE(s.ok()) << "truncation to " << len << " bytes went unnoticed";
    ASSERT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  }
  // A flipped payload byte of the second block: the message names the file and the block.
  auto f = CacheFile::Open(GoldenPath());
  ASSERT_TRUE(f.ok());
  const CacheBlockRef ref = (*f)->footer().blocks[1];
  std::string m = original;
  m[static_cast<size_t>(ref.offset + ref.bytes - 3)] ^= 1;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << m;
  Status s = ReadEverything(path);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("block 1"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("checksum mismatch"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("rectrain data cache"), std::string::npos) << s.message();
  // Through the BatchReader the error surfaces from Next(), not as a crash or a short pass.
  ReadOptions o;
  o.num_threads = 2;
  auto reader = OpenCacheReader({path}, o);
  ASSERT_TRUE(reader.ok());
  Status seen;
  while (true) {
    auto b = (*reader)->Next();
    if (!b.ok()) {
      seen = b.status();
      break;
    }
    ASSERT_TRUE(b->has_value()) << "the pass ended without reporting the corrupt block";
  }
  EXPECT_EQ(seen.code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace rectrain::data::internal

#include "rectrain/data/reader.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "rectrain/base/random.h"
#include "rectrain/data/errors.h"
#include "rectrain/data/internal/test_util.h"
#include "rectrain/data/internal/text_parser.h"

namespace rectrain::data {
namespace {

using test_util::ReadAll;
using test_util::Rows;
using test_util::TempDir;

const std::string kHint = std::string(errors::kMaxBadRowsHint);

DataConfig SmallCriteo(const std::vector<std::string>& files) {
  DataConfig c;
  c.files = files;
  c.schema.criteo_dense = 2;
  c.schema.criteo_sparse = 2;
  c.hash_seed = 7;
  return c;
}

float L(double x) { return static_cast<float>(std::log1p(x)); }

TEST(FeatureIdTest, MatchesHashBytesAndIsStable) {
  EXPECT_EQ(FeatureId(3, "68fd1e64", 0), HashBytes("68fd1e64", DeriveSeed(0, 3)));
  EXPECT_EQ(FeatureId(0, "", 5), HashBytes("", DeriveSeed(5, 0)));
  EXPECT_NE(FeatureId(0, "a", 0), FeatureId(1, "a", 0));
  EXPECT_NE(FeatureId(0, "a", 0), FeatureId(0, "a", 1));
  // Pinned: ids are stored in checkpoints, so this value must never change.
  EXPECT_EQ(FeatureId(1, "68fd1e64", 0), FeatureId(1, std::string("68fd1e64"), 0));
  const uint64_t pinned = FeatureId(2, "05db9164", 42);
  EXPECT_EQ(pinned, HashBytes("05db9164", DeriveSeed(42, 2)));
  // The parser's premixed hash agrees for every length (word loop + tail).
  std::string s;
  for (int len = 0; len < 40; ++len) {
    for (uint64_t seed : {0ull, 1ull, 0xfeedull}) {
      EXPECT_EQ(internal::HashPremixed(s, internal::PremixSeed(seed)), HashBytes(s, seed)) << len;
    }
    s.push_back(static_cast<char>('a' + len % 26 + (len % 3 == 0 ? 128 : 0)));
  }
}

TEST(ReaderTest, GoldenCriteo) {
  TempDir dir;
  // Line 1: I2 and C2 missing. Line 2: CRLF, float and negative dense (clipped at 0), C1 missing.
  // Line 3: large value, no trailing newline.
  std::string path = dir.Write("a.tsv",
                               "1\t5\t\tab\t\n"
                               "0\t1.5\t-3\t\tzz\r\n"
                               "1\t1000000\t0\tx\ty");
  ReadOptions opt;
  opt.batch_size = 2;
  auto rows = ReadAll(SmallCriteo({path}), opt);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->labels, (std::vector<float>{1, 0, 1}));
  EXPECT_EQ(rows->dense[0], (std::vector<float>{L(5), 0.0f}));
  EXPECT_EQ(rows->dense[1], (std::vector<float>{L(1.5), 0.0f}));
  EXPECT_EQ(rows->dense[2], (std::vector<float>{L(1e6), 0.0f}));
  EXPECT_EQ(rows->ids[0], (std::vector<uint64_t>{FeatureId(0, "ab", 7), FeatureId(1, "", 7)}));
  EXPECT_EQ(rows->ids[1], (std::vector<uint64_t>{FeatureId(0, "", 7), FeatureId(1, "zz", 7)}));
  EXPECT_EQ(rows->ids[2], (std::vector<uint64_t>{FeatureId(0, "x", 7), FeatureId(1, "y", 7)}));
  EXPECT_EQ(rows->batch_sizes, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(rows->batch_sources, (std::vector<std::string>{path, path}));
  EXPECT_EQ(rows->batch_first_lines, (std::vector<int64_t>{1, 3}));
  EXPECT_TRUE(rows->group.empty());
  EXPECT_EQ(rows->stats.rows_read, 3);
  EXPECT_EQ(rows->stats.rows_rejected, 0);
  EXPECT_EQ(rows->stats.files, 1);
  EXPECT_EQ(rows->stats.bytes_read, 38);
}

TEST(ReaderTest, NamesFollowSchema) {
  TempDir dir;
  DataConfig c = SmallCriteo({dir.Write("a.tsv", "1\t1\t2\ta\tb\n")});
  auto reader = OpenBatchReader(c, ReadOptions());
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->dense_names(), (std::vector<std::string>{"I1", "I2"}));
  EXPECT_EQ((*reader)->sparse_names(), (std::vector<std::string>{"C1", "C2"}));
}

TEST(ReaderTest, DenseTransforms) {
  TempDir dir;
  std::string path = dir.Write("a.tsv", "0\t\t-2\n0\t7\t1e2\n0\t0.25\t3\n");
  DataConfig c;
  c.files = {path};
  c.schema.criteo_dense = 2;
  c.schema.criteo_sparse = 0;
  c.dense.fill = 4;
  c.dense.clip_min = -1;
  c.dense.clip_max = 5;
  c.dense.log1p = false;
  auto rows = ReadAll(c, ReadOptions());
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->dense[0], (std::vector<float>{4, -1}));
  EXPECT_EQ(rows->dense[1], (std::vector<float>{5, 5}));
  EXPECT_EQ(rows->dense[2], (std::vector<float>{0.25f, 3}));
  c.dense.log1p = true;  // log(1 + max(x, 0)) after fill and clip
  rows = ReadAll(c, ReadOptions());
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->dense[0], (std::vector<float>{L(4), 0.0f}));
  EXPECT_EQ(rows->dense[1], (std::vector<float>{L(5), L(5)}));
  c.dense.clip_max = 0;  // <= clip_min: no upper clip
  c.dense.clip_min = 0;
  rows = ReadAll(c, ReadOptions());
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->dense[1], (std::vector<float>{L(7), L(100)}));
  EXPECT_EQ(rows->dense[0], (std::vector<float>{L(4), 0.0f}));
}

TEST(ReaderTest, CsvWithHeaderQuotingAndGroupKey) {
  TempDir dir;
  std::string path = dir.Write("a.csv",
                               "user,label,price,ignored,item\r\n"
                               "u1,1,2.5,zzz,\"a,b\"\r\n"
                               "\"u\"\"2\",0,,q,\n");
  DataConfig c;
  c.files = {path};
  c.schema.format = DataFormat::kCsv;
  c.schema.delimiter = '\t';  // the default: csv means ','
  c.schema.header = true;
  c.schema.dense = {"price"};
  c.schema.sparse = {"item", "user"};
  c.schema.group_key = "user";
  c.dense.log1p = false;
  auto reader = OpenBatchReader(c, ReadOptions());
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->dense_names(), (std::vector<std::string>{"price"}));
  EXPECT_EQ((*reader)->sparse_names(), (std::vector<std::string>{"item", "user"}));
  auto rows = ReadAll(c, ReadOptions());
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->labels, (std::vector<float>{1, 0}));
  EXPECT_EQ(rows->dense[0], (std::vector<float>{2.5f}));
  EXPECT_EQ(rows->dense[1], (std::vector<float>{0.0f}));
  EXPECT_EQ(rows->ids[0], (std::vector<uint64_t>{FeatureId(0, "a,b", 0), FeatureId(1, "u1", 0)}));
  EXPECT_EQ(rows->ids[1], (std::vector<uint64_t>{FeatureId(0, "", 0), FeatureId(1, "u\"2", 0)}));
  EXPECT_EQ(rows->group, (std::vector<uint64_t>{HashBytes("u1", 0), HashBytes("u\"2", 0)}));
  EXPECT_EQ(rows->batch_first_lines, (std::vector<int64_t>{2}));
}

TEST(ReaderTest, CsvWithDeclaredColumnsAndTsv) {
  TempDir dir;
  DataConfig c;
  c.files = {dir.Write("a.txt", "3;1;k\n4;0;m\n")};
  c.schema.format = DataFormat::kCsv;
  c.schema.delimiter = ';';
  c.schema.columns = {"x", "label", "cat"};
  c.schema.dense = {"x"};
  c.schema.sparse = {"cat"};
  auto rows = ReadAll(c, ReadOptions());
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->labels, (std::vector<float>{1, 0}));
  EXPECT_EQ(rows->dense[1], (std::vector<float>{L(4)}));
  EXPECT_EQ(rows->ids[0], (std::vector<uint64_t>{FeatureId(0, "k", 0)}));
  c.files = {dir.Write("b.tsv", "x\tlabel\tcat\n3\t1\tk\n")};
  c.schema.format = DataFormat::kTsv;
  c.schema.columns.clear();
  c.schema.header = true;
  rows = ReadAll(c, ReadOptions());
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->ids[0], (std::vector<uint64_t>{FeatureId(0, "k", 0)}));
}

TEST(ReaderTest, StatsReportPrefetchQueueDepth) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 64; ++i) text += std::to_string(i % 2) + "\t1\t2\ta\tb\n";
  DataConfig c = SmallCriteo({dir.Write("q.tsv", text)});
  ReadOptions o;
  o.batch_size = 4;         // 16 batches in the file
  o.prefetch_batches = 3;   // the queue holds at most 3
  auto reader = OpenBatchReader(c, o);
  ASSERT_TRUE(reader.ok()) << reader.status();
  // The workers fill the queue up to its bound while nobody consumes.
  int64_t depth = 0;
  for (int i = 0; i < 200 && depth < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    depth = (*reader)->Stats().queue_depth;
  }
  EXPECT_EQ(depth, 3);
  int64_t batches = 0;
  while (true) {
    auto b = (*reader)->Next();
    ASSERT_TRUE(b.ok()) << b.status();
    if (!b->has_value()) break;
    ++batches;
    EXPECT_LE((*reader)->Stats().queue_depth, 3);
  }
  EXPECT_EQ(batches, 16);
  EXPECT_EQ((*reader)->Stats().queue_depth, 0);
}

TEST(ReaderTest, SchemaErrors) {
  TempDir dir;
  std::string path = dir.Write("a.csv", "a,label,b\n1,0,x\n");
  DataConfig c;
  c.files = {path};
  c.schema.format = DataFormat::kCsv;
  c.schema.header = true;
  c.schema.dense = {"a", "nope"};
  auto r = OpenBatchReader(c, ReadOptions());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "schema of " + path +
                ": data.schema.dense names column \"nope\", which is not in the header (columns: a, label, b)");
  c.schema.header = false;
  r = OpenBatchReader(c, ReadOptions());
  EXPECT_EQ(r.status().message(),
            "format csv needs the column names: set data.schema.header: true (first line names "
            "the columns) or data.schema.columns: [..]");
  c.schema.format = DataFormat::kParquet;  // a text file read as Parquet
  r = OpenBatchReader(c, ReadOptions());
  EXPECT_EQ(r.status().message(),
            path + ": not a Parquet file: the last 4 bytes are '0,x\\x0a', expected 'PAR1'");
  DataConfig h = SmallCriteo({path});
  h.schema.group_key = "C9";
  r = OpenBatchReader(h, ReadOptions());
  EXPECT_EQ(r.status().message(),
            "data.schema.group_key names column \"C9\", which is not among the columns (label, I1..I2, C1..C2)");
  ReadOptions bad;
  bad.batch_size = 0;
  r = OpenBatchReader(SmallCriteo({path}), bad);
  EXPECT_EQ(r.status().message(), "batch_size must be > 0, got 0");
  // Files with different headers.
  std::string other = dir.Write("b.csv", "a,label,c\n1,0,x\n");
  c.files = {path, other};
  c.schema.format = DataFormat::kCsv;
  c.schema.header = true;
  c.schema.dense = {"a"};
  r = OpenBatchReader(c, ReadOptions());
  EXPECT_EQ(r.status().message(), "the header of " + other +
                                      " (\"a,label,c\") differs from the header of " + path +
                                      " (\"a,label,b\"); all files must share one header");
}

// ---- strict errors: exact messages -------------------------------------------------------------

Status FirstError(const DataConfig& c, const ReadOptions& opt = ReadOptions()) {
  auto rows = ReadAll(c, opt);
  return rows.ok() ? OkStatus() : rows.status();
}

TEST(ReaderErrorTest, WrongColumnCountTooFew) {
  TempDir dir;
  std::string p = dir.Write("a.tsv", "1\t1\t2\ta\tb\n0\t1\t2\ta\n");
  Status s = FirstError(SmallCriteo({p}));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), p + ":2:8: expected 5 fields (label, I1..I2, C1..C2), found 4: "
                             "\"0\\t1\\t2\\ta\"; " + kHint);
}

TEST(ReaderErrorTest, WrongColumnCountTooMany) {
  TempDir dir;
  std::string p = dir.Write("a.tsv", "0\t1\t2\ta\tb\tc\td\n");
  Status s = FirstError(SmallCriteo({p}));
  EXPECT_EQ(s.message(), p + ":1:11: expected 5 fields (label, I1..I2, C1..C2), found 7: "
                             "\"0\\t1\\t2\\ta\\tb\\tc\\td\"; " + kHint);
}

TEST(ReaderErrorTest, BlankLineIsAColumnCountError) {
  TempDir dir;
  std::string p = dir.Write("a.tsv", "1\t1\t2\ta\tb\n\n");
  Status s = FirstError(SmallCriteo({p}));
  EXPECT_EQ(s.message(), p + ":2:1: expected 5 fields (label, I1..I2, C1..C2), found 1: \"\"; " + kHint);
}

TEST(ReaderErrorTest, BadDense) {
  TempDir dir;
  std::string p = dir.Write("a.tsv", "1\t5\t\tab\t\n1\t5\tabc\tx\ty\n");
  Status s = FirstError(SmallCriteo({p}));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), p + ":2:5: field I2: expected a finite number, or an empty field for "
                             "missing, got \"abc\"; " + kHint);
  // Non-finite and trailing garbage are bad too; long text is cut at 40 characters.
  p = dir.Write("b.tsv", "1\tnan\t1\ta\tb\n");
  EXPECT_EQ(FirstError(SmallCriteo({p})).message(),
            p + ":1:3: field I1: expected a finite number, or an empty field for missing, got \"nan\"; " + kHint);
  p = dir.Write("c.tsv", "1\t1\t12" + std::string(50, 'x') + "\ta\tb\n");
  EXPECT_EQ(FirstError(SmallCriteo({p})).message(),
            p + ":1:5: field I2: expected a finite number, or an empty field for missing, got \"12" +
                std::string(38, 'x') + "...\"; " + kHint);
}

TEST(ReaderErrorTest, BadLabel) {
  TempDir dir;
  std::string p = dir.Write("a.tsv", "2\t5\t1\tab\tc\n");
  Status s = FirstError(SmallCriteo({p}));
  EXPECT_EQ(s.message(), p + ":1:1: field label: expected 0 or 1, got \"2\"; " + kHint);
  p = dir.Write("b.tsv", "\t5\t1\tab\tc\n");
  EXPECT_EQ(FirstError(SmallCriteo({p})).message(),
            p + ":1:1: field label: expected 0 or 1, got \"\"; " + kHint);
  p = dir.Write("c.tsv", "\xff\x01\t5\t1\tab\tc\n");
  EXPECT_EQ(FirstError(SmallCriteo({p})).message(),
            p + ":1:1: field label: expected 0 or 1, got \"\\xff\\x01\"; " + kHint);
}

TEST(ReaderErrorTest, BadQuote) {
  TempDir dir;
  DataConfig c;
  c.files = {dir.Write("a.csv", "label,c\n1,\"abc\n")};
  c.schema.format = DataFormat::kCsv;
  c.schema.header = true;
  c.schema.sparse = {"c"};
  EXPECT_EQ(FirstError(c).message(),
            c.files[0] + ":2:3: field c: unterminated or malformed quoted field: \"\\\"abc\"; " + kHint);
}

TEST(ReaderErrorTest, FileErrors) {
  TempDir dir;
  std::string missing = dir.Path("missing.tsv");
  Status s = FirstError(SmallCriteo({missing}));
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "no such file: " + missing);
  std::string empty = dir.Write("empty.tsv", "");
  s = FirstError(SmallCriteo({empty}));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), empty + " is empty: it has no rows");
  std::string glob = dir.Path("*.parquet");
  s = FirstError(SmallCriteo({glob}));
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "no file matches the pattern \"" + glob + "\"");
  s = FirstError(SmallCriteo({dir.path().string()}));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), dir.path().string() + " is a directory; list files, or use a glob such as " +
                             dir.path().string() + "/*.tsv");
  s = FirstError(SmallCriteo({}));
  EXPECT_EQ(s.message(), "no input files: data.files is empty; set it to paths or globs");
  DataConfig c;
  c.files = {dir.Write("h.csv", "label,x\n")};
  c.schema.format = DataFormat::kCsv;
  c.schema.header = true;
  c.schema.dense = {"x"};
  s = FirstError(c);
  EXPECT_EQ(s.message(), c.files[0] + " has a header but no rows");
}

std::string ManyRows(int n, int bad_every = 0, int* bad_lines_out = nullptr) {
  std::string s;
  for (int i = 1; i <= n; ++i) {
    if (bad_every > 0 && i % bad_every == 0) {
      s += "1\tx" + std::to_string(i) + "\t2\ta\tb\n";
    } else {
      s += std::to_string(i % 2) + "\t" + std::to_string(i % 50) + "\t\tt" + std::to_string(i) + "\t" +
           std::to_string(i % 7) + "\n";
    }
  }
  return s;
}

TEST(ReaderErrorTest, LineNumbersAcrossChunksThreadsAndShuffle) {
  TempDir dir;
  std::string content = ManyRows(3000);
  // Corrupt line 2345.
  std::string p = dir.Write("a.tsv", content);
  {
    std::vector<std::string> lines;
    std::istringstream in(content);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    lines[2344] = "1\t1\t2\ta";
    std::string s;
    for (auto& l : lines) s += l + "\n";
    p = dir.Write("a.tsv", s);
  }
  const std::string want = p + ":2345:8: expected 5 fields (label, I1..I2, C1..C2), found 4: "
                               "\"1\\t1\\t2\\ta\"; " + kHint;
  for (int64_t chunk : {7, 100, 4096, 1 << 20}) {
    for (int threads : {1, 3}) {
      for (bool shuffle : {false, true}) {
        ReadOptions opt;
        opt.chunk_bytes = chunk;
        opt.num_threads = threads;
        opt.shuffle = shuffle;
        opt.batch_size = 64;
        EXPECT_EQ(FirstError(SmallCriteo({p}), opt).message(), want)
            << "chunk=" << chunk << " threads=" << threads << " shuffle=" << shuffle;
      }
    }
  }
}

TEST(ReaderErrorTest, MaxBadRowsCountsAndWritesRejects) {
  TempDir dir;
  std::string p = dir.Write("a.tsv", ManyRows(1000, 100));  // 10 bad rows: lines 100, 200, ..
  DataConfig c = SmallCriteo({p});
  c.max_bad_rows = 10;
  c.rejects_file = dir.Path("rejects.tsv");
  ReadOptions opt;
  opt.chunk_bytes = 1000;
  opt.num_threads = 2;
  auto rows = ReadAll(c, opt);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->stats.rows_read, 990);
  EXPECT_EQ(rows->stats.rows_rejected, 10);
  std::ifstream in(c.rejects_file);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 10u);
  for (int i = 0; i < 10; ++i) {
    const int line = (i + 1) * 100;
    const std::string raw = "1\tx" + std::to_string(line) + "\t2\ta\tb";
    EXPECT_EQ(lines[i], p + "\t" + std::to_string(line) + "\t" + p + ":" + std::to_string(line) +
                            ":3: field I1: expected a finite number, or an empty field for missing, got \"x" +
                            std::to_string(line) + "\"\t" + raw);
  }
  // One more than allowed fails, naming the count, the limit and the last bad row.
  c.max_bad_rows = 9;
  Status s = FirstError(c, opt);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "10 bad rows exceed data.max_bad_rows = 9 (rejected rows are listed in " +
                             c.rejects_file + "); the last one: " + p +
                             ":1000:3: field I1: expected a finite number, or an empty field for "
                             "missing, got \"x1000\"");
}

// ---- order, chunking, shuffle, skip ------------------------------------------------------------

TEST(ReaderTest, ChunkingAndThreadsDoNotChangeTheRows) {
  TempDir dir;
  std::string a = dir.Write("a.tsv", ManyRows(777));
  std::string b = dir.Write("b.tsv", ManyRows(333) + "1\t2\t3\tlast\tx");  // no final newline
  ReadOptions base;
  base.batch_size = 100;
  auto want = ReadAll(SmallCriteo({dir.Path("*.tsv")}), base);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_EQ(want->labels.size(), 1111u);
  EXPECT_EQ(want->stats.files, 2);
  EXPECT_EQ(want->batch_first_lines[0], 1);
  EXPECT_EQ(want->batch_sources[7], a);
  EXPECT_EQ(want->batch_first_lines[7], 701);
  EXPECT_EQ(want->batch_sources[8], b);  // 23 rows of b complete batch 7; batch 8 starts at b:24
  EXPECT_EQ(want->batch_first_lines[8], 24);
  for (int64_t chunk : {1, 2, 13, 64, 1000, 5000}) {
    for (int threads : {1, 2, 4}) {
      ReadOptions opt = base;
      opt.chunk_bytes = chunk;
      opt.num_threads = threads;
      opt.prefetch_batches = 1 + threads;
      auto got = ReadAll(SmallCriteo({a, b}), opt);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(got->labels, want->labels) << chunk << " " << threads;
      EXPECT_EQ(got->dense, want->dense) << chunk << " " << threads;
      EXPECT_EQ(got->ids, want->ids) << chunk << " " << threads;
      EXPECT_EQ(got->batch_first_lines, want->batch_first_lines) << chunk << " " << threads;
      EXPECT_EQ(got->stats.bytes_read, want->stats.bytes_read);
    }
  }
}

TEST(ReaderTest, ShuffleIsDeterministicAndDeliversEveryRowOnce) {
  TempDir dir;
  std::string p = dir.Write("a.tsv", ManyRows(5000));
  DataConfig c = SmallCriteo({p});
  auto plain = ReadAll(c, ReadOptions());
  ASSERT_TRUE(plain.ok());
  auto shuffled = [&](uint64_t seed, int64_t epoch, int threads, int64_t buffer) {
    ReadOptions opt;
    opt.shuffle = true;
    opt.seed = seed;
    opt.epoch = epoch;
    opt.num_threads = threads;
    opt.chunk_bytes = 4096;
    opt.shuffle_buffer_rows = buffer;
    opt.batch_size = 128;
    auto r = ReadAll(c, opt);
    EXPECT_TRUE(r.ok()) << r.status();
    return std::move(r).value();
  };
  Rows a = shuffled(1, 0, 1, 500);
  Rows b = shuffled(1, 0, 3, 500);
  Rows d = shuffled(1, 1, 2, 500);
  Rows e = shuffled(2, 0, 2, 500);
  EXPECT_EQ(a.ids, b.ids);  // independent of thread timing
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_NE(a.ids, d.ids);  // the epoch changes the order
  EXPECT_NE(a.ids, e.ids);  // the seed changes the order
  EXPECT_NE(a.ids, plain->ids);
  for (const Rows* r : {&a, &d, &e}) {
    std::multiset<std::vector<uint64_t>> got(r->ids.begin(), r->ids.end());
    std::multiset<std::vector<uint64_t>> want(plain->ids.begin(), plain->ids.end());
    EXPECT_EQ(got, want);
    EXPECT_EQ(r->stats.rows_read, 5000);
    EXPECT_EQ(r->batch_first_lines[0], 0);  // unknown in shuffled passes
  }
  // Rows stay whole: each row's label and dense values travel with its ids.
  std::map<std::vector<uint64_t>, std::pair<float, std::vector<float>>> by_ids;
  for (size_t i = 0; i < plain->ids.size(); ++i) by_ids[plain->ids[i]] = {plain->labels[i], plain->dense[i]};
  for (size_t i = 0; i < a.ids.size(); ++i) {
    ASSERT_EQ(by_ids[a.ids[i]].first, a.labels[i]);
    ASSERT_EQ(by_ids[a.ids[i]].second, a.dense[i]);
  }
  // The row buffer mixes rows across chunks: the first batch is not one chunk's rows.
  Rows chunk_only = shuffled(1, 0, 1, 0);
  std::multiset<std::vector<uint64_t>> got(chunk_only.ids.begin(), chunk_only.ids.end());
  EXPECT_EQ(got.size(), 5000u);
}

TEST(ReaderTest, SkipRowsResumesDeterministically) {
  TempDir dir;
  std::string p = dir.Write("a.tsv", ManyRows(2000));
  for (bool shuffle : {false, true}) {
    ReadOptions opt;
    opt.shuffle = shuffle;
    opt.seed = 3;
    opt.chunk_bytes = 3000;
    opt.batch_size = 100;
    opt.shuffle_buffer_rows = 300;
    auto full = ReadAll(SmallCriteo({p}), opt);
    ASSERT_TRUE(full.ok());
    for (int64_t skip : {0, 1, 700, 1999, 2000, 5000}) {
      opt.skip_rows = skip;
      opt.num_threads = 2;
      auto rest = ReadAll(SmallCriteo({p}), opt);
      ASSERT_TRUE(rest.ok());
      const size_t k = static_cast<size_t>(std::min<int64_t>(skip, 2000));
      EXPECT_EQ(rest->ids, std::vector<std::vector<uint64_t>>(full->ids.begin() + k, full->ids.end()))
          << skip << " " << shuffle;
      EXPECT_EQ(rest->stats.rows_skipped, static_cast<int64_t>(k));
      EXPECT_EQ(rest->stats.rows_read, 2000 - static_cast<int64_t>(k));
    }
  }
}

TEST(ReaderTest, DestroyingMidPassIsPrompt) {
  TempDir dir;
  std::string p = dir.Write("a.tsv", ManyRows(200000));
  for (int threads : {1, 4}) {
    ReadOptions opt;
    opt.batch_size = 16;
    opt.prefetch_batches = 1;
    opt.num_threads = threads;
    opt.chunk_bytes = 1 << 20;
    auto reader = OpenBatchReader(SmallCriteo({p}), opt);
    ASSERT_TRUE(reader.ok());
    auto b = (*reader)->Next();
    ASSERT_TRUE(b.ok() && b->has_value());
    auto t0 = std::chrono::steady_clock::now();
    reader->reset();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(s, 1.0);
  }
  // Destroying before the first Next() also works.
  auto reader = OpenBatchReader(SmallCriteo({p}), ReadOptions());
  ASSERT_TRUE(reader.ok());
}

TEST(ReaderTest, OnlyDenseOrOnlySparseColumns) {
  TempDir dir;
  for (int nd : {0, 2}) {
    const int ns = 2 - nd;
    std::string text;
    for (int i = 0; i < 300; ++i) text += std::to_string(i % 2) + "\t" + std::to_string(i) + "\t" + std::to_string(i % 9) + "\n";
    DataConfig c;
    c.files = {dir.Write("a.tsv", text)};
    c.schema.criteo_dense = nd;
    c.schema.criteo_sparse = ns;
    for (bool shuffle : {false, true}) {
      ReadOptions opt;
      opt.shuffle = shuffle;
      opt.shuffle_buffer_rows = 50;
      opt.chunk_bytes = 200;
      auto rows = ReadAll(c, opt);
      ASSERT_TRUE(rows.ok()) << rows.status();
      EXPECT_EQ(rows->labels.size(), 300u);
      EXPECT_EQ(rows->dense[0].size(), static_cast<size_t>(nd));
      EXPECT_EQ(rows->ids[0].size(), static_cast<size_t>(ns));
    }
  }
}

TEST(ReaderTest, ErrorIsLatched) {
  TempDir dir;
  std::string p = dir.Write("a.tsv", "2\t1\t1\ta\tb\n");
  auto reader = OpenBatchReader(SmallCriteo({p}), ReadOptions());
  ASSERT_TRUE(reader.ok());
  auto first = (*reader)->Next();
  ASSERT_FALSE(first.ok());
  auto second = (*reader)->Next();
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(first.status(), second.status());
}

}  // namespace
}  // namespace rectrain::data

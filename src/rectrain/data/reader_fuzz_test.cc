// Robustness: thousands of random and mutated inputs must never crash the reader; each pass ends
// OK or with a clear error (InvalidArgument / DataLoss naming the file).
#include <algorithm>

#include <gtest/gtest.h>

#include "rectrain/base/random.h"
#include "rectrain/data/internal/test_util.h"
#include "rectrain/data/reader.h"

namespace rectrain::data {
namespace {

using test_util::ReadAll;
using test_util::TempDir;

std::string ValidRows(Rng& rng, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    s += rng.Below(2) ? "1" : "0";
    for (int d = 0; d < 2; ++d) {
      s.push_back('\t');
      if (rng.Below(4)) s.append(std::to_string(rng.Below(2000)));
    }
    for (int c = 0; c < 2; ++c) {
      s.push_back('\t');
      if (rng.Below(4)) s.append(std::to_string(rng.Below(1000000)));
    }
    s += rng.Below(8) ? "\n" : "\r\n";
  }
  return s;
}

std::string Mutate(Rng& rng, std::string s) {
  static const char kInteresting[] = {'\t', '\n', '\r', '"', ',', '\0', '-', '.', 'e', '1', '\xff'};
  const int edits = 1 + static_cast<int>(rng.Below(6));
  for (int e = 0; e < edits && !s.empty(); ++e) {
    const size_t pos = rng.Below(s.size());
    switch (rng.Below(4)) {
      case 0: s[pos] = static_cast<char>(rng.Below(256)); break;
      case 1: s[pos] = kInteresting[rng.Below(sizeof(kInteresting))]; break;
      case 2: s.erase(pos, 1 + rng.Below(5)); break;
      default: s.insert(pos, 1 + rng.Below(3), kInteresting[rng.Below(sizeof(kInteresting))]); break;
    }
  }
  return s;
}

void Check(const DataConfig& c, const ReadOptions& opt, const std::string& input) {
  auto rows = ReadAll(c, opt);
  if (rows.ok()) return;
  const Status& s = rows.status();
  ASSERT_TRUE(s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kDataLoss)
      << s << "\ninput: " << ::testing::PrintToString(input);
  ASSERT_FALSE(s.message().empty());
  ASSERT_NE(s.message().find(c.files[0]), std::string::npos) << s;
}

TEST(ReaderFuzzTest, RandomAndMutatedInputsNeverCrash) {
  TempDir dir;
  Rng rng(12345);
  const std::string path = dir.Path("f.tsv");
  int ok_passes = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string input;
    switch (iter % 3) {
      case 0: {  // pure random bytes, biased towards separators
        const size_t n = 1 + rng.Below(300);
        for (size_t i = 0; i < n; ++i) {
          input.push_back(rng.Below(3) == 0 ? "\t\n\r,\"0"[rng.Below(6)] : static_cast<char>(rng.Below(256)));
        }
        break;
      }
      default:
        input = Mutate(rng, ValidRows(rng, 1 + static_cast<int>(rng.Below(30))));
    }
    dir.Write("f.tsv", input);
    DataConfig c;
    c.files = {path};
    ReadOptions opt;
    opt.batch_size = 1 + static_cast<int64_t>(rng.Below(16));
    opt.chunk_bytes = 1 + static_cast<int64_t>(rng.Below(128));
    opt.num_threads = 1 + static_cast<int>(rng.Below(3));
    opt.shuffle = rng.Below(2) == 0;
    opt.shuffle_buffer_rows = static_cast<int64_t>(rng.Below(8));
    if (iter % 4 == 0) {  // csv with quoting and a header
      c.schema.format = DataFormat::kCsv;
      c.schema.header = rng.Below(2) == 0;
      c.schema.columns = {"label", "a", "b"};
      if (c.schema.header) c.schema.columns.clear();
      c.schema.dense = {"a"};
      c.schema.sparse = {"b"};
    } else {
      c.schema.criteo_dense = 2;
      c.schema.criteo_sparse = 2;
    }
    c.max_bad_rows = static_cast<int64_t>(rng.Below(3)) * 5;
    auto rows = ReadAll(c, opt);
    if (rows.ok()) {
      ++ok_passes;
      continue;
    }
    Check(c, opt, input);
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_GT(ok_passes, 100);  // the mutations leave many files valid or within max_bad_rows
}

// libsvm / libffm rows, mutated with the characters their syntax turns on.
TEST(ReaderFuzzTest, MutatedLibsvmAndLibffmNeverCrash) {
  TempDir dir;
  Rng rng(777);
  const std::string path = dir.Path("f.svm");
  static const char kInteresting[] = {':', ' ', '\t', '\n', '#', '+', '-', '.', '0', '1', 'e', '\xff'};
  int ok_passes = 0;
  for (int iter = 0; iter < 1000; ++iter) {
    const bool ffm = iter % 2 == 1;
    std::string input;
    const int n = 1 + static_cast<int>(rng.Below(20));
    for (int r = 0; r < n; ++r) {
      input += std::string(rng.Below(2) ? "1" : (rng.Below(2) ? "-1" : "0"));
      const int pairs = static_cast<int>(rng.Below(6));
      for (int k = 0; k < pairs; ++k) {
        const uint64_t key = rng.Below(6);
        input += " " + std::to_string(key) + ":";
        if (ffm) input += std::to_string(rng.Below(50)) + ":";
        input += (key == 1 || key == 2) && rng.Below(2) ? std::to_string(rng.Below(100)) : "1";
      }
      input += "\n";
    }
    const int edits = static_cast<int>(rng.Below(4));
    for (int e = 0; e < edits && !input.empty(); ++e) {
      const size_t pos = rng.Below(input.size());
      if (rng.Below(2)) {
        input[pos] = kInteresting[rng.Below(sizeof(kInteresting))];
      } else {
        input.insert(pos, 1, kInteresting[rng.Below(sizeof(kInteresting))]);
      }
    }
    dir.Write("f.svm", input);
    DataConfig c;
    c.files = {path};
    c.schema.format = ffm ? DataFormat::kLibffm : DataFormat::kLibsvm;
    c.schema.dense = {"1..2"};
    if (ffm) c.schema.sparse = {"0", "3..5"};
    c.max_bad_rows = static_cast<int64_t>(rng.Below(3)) * 5;
    ReadOptions opt;
    opt.batch_size = 1 + static_cast<int64_t>(rng.Below(16));
    opt.chunk_bytes = 1 + static_cast<int64_t>(rng.Below(128));
    opt.num_threads = 1 + static_cast<int>(rng.Below(3));
    opt.shuffle = rng.Below(2) == 0;
    auto rows = ReadAll(c, opt);
    if (rows.ok()) {
      ++ok_passes;
      EXPECT_EQ(rows->stats.rows_read + rows->stats.rows_rejected,
                static_cast<int64_t>(std::count(input.begin(), input.end(), '\n')) +
                    (input.empty() || input.back() == '\n' ? 0 : 1))
          << ::testing::PrintToString(input);
      continue;
    }
    Check(c, opt, input);
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_GT(ok_passes, 150);
}

}  // namespace
}  // namespace rectrain::data

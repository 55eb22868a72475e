// rectrain/data/internal/test_util.h (internal, tests only): temp directories and helpers that
// read a whole pass into flat, row-major vectors for comparisons.
#pragma once

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "rectrain/data/reader.h"

namespace rectrain::data::test_util {

class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::path(::testing::TempDir()) /
            ("rectrain_data_" + std::to_string(::getpid()) + "_" +
             (info ? std::string(info->test_suite_name()) + "_" + info->name() : "x"));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string Path(const std::string& name) const { return (path_ / name).string(); }
  std::string Write(const std::string& name, const std::string& content) const {
    std::string p = Path(name);
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Every row of a pass, row-major, plus the batch metadata.
struct Rows {
  std::vector<float> labels;
  std::vector<std::vector<float>> dense;
  std::vector<std::vector<uint64_t>> ids;                 // per row, each field's first id
  std::vector<std::vector<std::vector<uint64_t>>> lists;  // per row, per field: every id
  std::vector<uint64_t> group;
  std::vector<std::string> batch_sources;
  std::vector<int64_t> batch_first_lines;
  std::vector<int64_t> batch_sizes;
  ReaderStats stats;
};

inline Result<Rows> ReadAll(const DataConfig& config, const ReadOptions& options) {
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<BatchReader> reader, OpenBatchReader(config, options));
  Rows rows;
  while (true) {
    RECTRAIN_ASSIGN_OR_RETURN(std::optional<Batch> batch, reader->Next());
    if (!batch) break;
    rows.batch_sources.push_back(batch->source);
    rows.batch_first_lines.push_back(batch->first_line);
    rows.batch_sizes.push_back(batch->size);
    for (int64_t r = 0; r < batch->size; ++r) {
      rows.labels.push_back(batch->labels[r]);
      rows.dense.emplace_back(batch->dense.begin() + r * batch->num_dense,
                              batch->dense.begin() + (r + 1) * batch->num_dense);
      std::vector<uint64_t> ids;
      std::vector<std::vector<uint64_t>> lists;
      for (const SparseColumn& c : batch->sparse) {
        if (!c.single_valued() && static_cast<int64_t>(c.offsets.size()) != batch->size + 1) {
          return InternalError("CSR offsets of the wrong size");
        }
        lists.emplace_back(c.ids.begin() + c.RowBegin(r), c.ids.begin() + c.RowEnd(r));
        ids.push_back(lists.back().empty() ? 0 : lists.back()[0]);
      }
      rows.ids.push_back(std::move(ids));
      rows.lists.push_back(std::move(lists));
      if (!batch->group_keys.empty()) rows.group.push_back(batch->group_keys[r]);
    }
  }
  // A finished reader keeps answering "end of pass".
  RECTRAIN_ASSIGN_OR_RETURN(std::optional<Batch> again, reader->Next());
  if (again) return InternalError("Next() returned a batch after the end of the pass");
  rows.stats = reader->Stats();
  return rows;
}

// The bits of every dense float, row by row (so that -0.0 vs 0.0 and NaN payloads count).
inline std::vector<uint32_t> FloatBits(const std::vector<std::vector<float>>& rows) {
  std::vector<uint32_t> out;
  for (const auto& r : rows) {
    for (float x : r) {
      uint32_t u;
      std::memcpy(&u, &x, 4);
      out.push_back(u);
    }
  }
  return out;
}

// The same batches bit for bit: labels, dense floats, every id of every field, group keys and
// batch sizes.
inline void ExpectSameBatches(const Rows& got, const Rows& want) {
  EXPECT_EQ(got.labels, want.labels);
  EXPECT_EQ(FloatBits(got.dense), FloatBits(want.dense));
  EXPECT_EQ(got.lists, want.lists);
  EXPECT_EQ(got.group, want.group);
  EXPECT_EQ(got.batch_sizes, want.batch_sizes);
}

}  // namespace rectrain::data::test_util

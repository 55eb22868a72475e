// rectrain/data/batch.h: the columnar unit of training data that flows from the data pipeline
// into the trainer. A Batch owns its buffers; it is produced by data/, consumed by train/, and
// never mutated after it is handed over.
//
// Layout (row-major, batch dimension first):
//   labels  [size]                       0 or 1 (float so losses can read it directly)
//   dense   [size × num_dense]           already transformed (fill, log1p, clip)
//   sparse  one SparseColumn per categorical field, in schema order
//   group_keys [size] or empty           e.g. user id, for GAUC
//
// A SparseColumn is CSR: row r has ids[offsets[r] .. offsets[r+1]). A single-valued column
// (every row exactly one id, the Criteo case) leaves `offsets` empty, so row r's id is ids[r];
// this keeps the hot path branch-free. Ids are field-aware 64-bit hashes (FeatureId()).
// Thread safety: a value type; a const Batch may be read from many threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rectrain::data {

struct SparseColumn {
  std::vector<int32_t> offsets;  // empty == single-valued; else size+1 entries, offsets[0] == 0
  std::vector<uint64_t> ids;

  bool single_valued() const { return offsets.empty(); }
  int64_t RowBegin(int64_t row) const { return offsets.empty() ? row : offsets[row]; }
  int64_t RowEnd(int64_t row) const { return offsets.empty() ? row + 1 : offsets[row + 1]; }
};

struct Batch {
  int64_t size = 0;
  int num_dense = 0;
  std::vector<float> labels;
  std::vector<float> dense;
  std::vector<SparseColumn> sparse;
  std::vector<uint64_t> group_keys;
  // Where the rows came from (first row's file and 1-based line), for error messages.
  std::string source;
  int64_t first_line = 0;

  int num_sparse() const { return static_cast<int>(sparse.size()); }
};

}  // namespace rectrain::data

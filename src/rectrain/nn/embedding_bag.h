// rectrain/nn/embedding_bag.h: embedding lookup + pooling of categorical fields, from the rows
// the trainer pulled for this step (see nn/model.h for the PulledTable / FieldIndices protocol).
//
// Per field f reading table t (row width dim_t, of which the first lead_t ∈ {0, 1} columns are
// a "first-order" weight), the pooled row of batch row i is
//     p(i, f) = pool_{k ∈ bag(i, f)} rows_t[k]          pool = sum, or mean (empty bag → 0)
// and the layer writes
//     out[i, out_col_f .. out_col_f + dim_t − lead_t)  =  p(i, f)[lead_t ..]     (embedding part)
//     lead[i]  =  Σ_f p(i, f)[0]   over fields whose table has lead_t = 1     (first-order sum)
// so DeepFM-style models keep the first-order weight and the embedding of an id in ONE table
// row (one pull per id), and the output matrix can be wider than the embeddings (the caller
// puts the dense features in the tail columns: concat without a copy).
//
// Backward writes, for every pulled row u of every table (zeroed first),
//     grad_t[u] = Σ_{(i,f): u ∈ bag(i,f)} w(i,f) · [dlead[i] | dout[i, out_col_f ..]]
// with w = 1 (sum) or 1/|bag| (mean). Parallel over disjoint ranges of u (each thread scans
// the batch's indices and accumulates only its own rows): no races, no atomics, and the sum
// order (field, row, bag position) is fixed, so results are bit-identical for any thread count.
//
// Forward copies the batch's indices (the caller's spans need not outlive Forward).
// Errors (InvalidArgument, naming the field or table): table/field counts, pulled sizes, CSR
// offsets (size, first 0, last == number of indices, non-decreasing), indices out of range.
// Thread safety: one thread at a time; parallelises through the ComputeContext.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rectrain/base/parallel.h"
#include "rectrain/base/status.h"
#include "rectrain/nn/model.h"
#include "rectrain/tensor/tensor.h"

namespace rectrain::nn {

struct EmbeddingBagTable {
  std::string name;
  int64_t dim = 0;  // stored row width
  int lead = 0;     // 0 or 1 leading first-order columns
};

struct EmbeddingBagField {
  std::string name;
  int table = 0;
  bool mean = false;     // pooling: mean (true) or sum
  int64_t out_col = 0;   // first output column of the embedding part
};

class EmbeddingBag {
 public:
  // Preconditions (CHECK): valid table indices, 0 <= lead <= 1, lead < dim or dim == lead.
  EmbeddingBag(std::vector<EmbeddingBagTable> tables, std::vector<EmbeddingBagField> fields);

  // Columns needed in `out`: max over fields of out_col + dim − lead.
  int64_t out_width() const { return out_width_; }
  bool has_lead() const { return has_lead_; }
  const std::vector<EmbeddingBagTable>& tables() const { return tables_; }
  const std::vector<EmbeddingBagField>& fields() const { return fields_; }

  // out: [batch × ≥ out_width()]; lead: [batch] if has_lead(), else ignored (may be empty).
  [[nodiscard]] Status Forward(int64_t batch, std::span<const PulledTable> tables,
                               std::span<const FieldIndices> fields, tensor::MatrixView out,
                               std::span<float> lead, const ComputeContext& compute);

  // dout: [batch × ≥ out_width()] gradient of `out`; dlead: [batch] (if has_lead()).
  // table_grads[t]: num_unique_t × dim_t of the last Forward; overwritten.
  [[nodiscard]] Status Backward(tensor::ConstMatrixView dout, std::span<const float> dlead,
                                std::span<const std::span<float>> table_grads,
                                const ComputeContext& compute);

 private:
  std::vector<EmbeddingBagTable> tables_;
  std::vector<EmbeddingBagField> fields_;
  int64_t out_width_ = 0;
  bool has_lead_ = false;
  // Copies of the last Forward's inputs needed by Backward.
  int64_t batch_ = -1;
  std::vector<int64_t> num_unique_;             // per table
  std::vector<std::vector<int32_t>> offsets_;   // per field; empty = single-valued
  std::vector<std::vector<int32_t>> indices_;   // per field
};

}  // namespace rectrain::nn

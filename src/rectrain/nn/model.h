// rectrain/nn/model.h: the interface between the trainer and a CTR model (LR, FM, Wide&Deep,
// DeepFM, DCN-v2, ...). Models are assembled from nn/ layers with explicit forward/backward.
//
// Division of labour: the trainer owns the embedding tables (parameter server) and the batch;
// a model declares which table each categorical field reads (ModelSpec). Per step the trainer
// pulls the unique rows of every table and hands the model, per table, those rows plus, per
// field, the index of each occurrence into them. The model pools (sum/mean over multi-valued
// fields), computes logits, and on Backward returns the gradient for every pulled row
// (summed over occurrences), which the trainer pushes to the tables.
//
// Thread safety: a Model is used by one thread at a time; it parallelises inside through the
// ComputeContext. Forward must precede Backward for the same batch (activations are cached).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rectrain/base/parallel.h"
#include "rectrain/base/result.h"
#include "rectrain/base/status.h"
#include "rectrain/embedding/embedding_table.h"
#include "rectrain/base/named_enum.h"
#include "rectrain/optim/optimizer.h"

namespace rectrain::nn {

// How a multi-valued categorical field's rows become one vector (single-valued fields: either
// is the identity).
enum class Pooling : uint8_t { kSum, kMean };
inline constexpr NamedEnum<Pooling>::Entry kPoolingEntries[] = {{Pooling::kSum, "sum"}, {Pooling::kMean, "mean"}};
inline constexpr NamedEnum<Pooling> kPoolings(kPoolingEntries);  // model.field_pooling values

// Which table a categorical field reads, and how multi-valued fields are pooled.
struct FieldSpec {
  std::string name;        // "C1"
  int table = 0;           // index into ModelSpec::tables
  Pooling pooling = Pooling::kSum;
};

struct ModelSpec {
  std::vector<embedding::EmbeddingTableConfig> tables;  // dims and optimizers per table
  std::vector<FieldSpec> fields;                        // one per categorical field, schema order
  int num_dense = 0;
};

// Rows pulled for one table this step: rows[u × dim] for unique id u.
struct PulledTable {
  std::span<const float> rows;
  int64_t num_unique = 0;
  int dim = 0;
};

// One categorical field of the batch, as indices into its table's pulled rows (CSR like
// data::SparseColumn: offsets empty means exactly one index per row).
struct FieldIndices {
  std::span<const int32_t> offsets;
  std::span<const int32_t> rows;  // index into PulledTable of the field's table
};

struct ForwardInput {
  int64_t batch_size = 0;
  std::span<const float> dense;              // [batch_size × num_dense]
  std::span<const PulledTable> tables;       // one per ModelSpec::tables
  std::span<const FieldIndices> fields;      // one per ModelSpec::fields
  uint64_t seed = 0;  // per-step randomness (dropout): DeriveSeed(run seed, step) — never
                      // hidden state, so a resumed run draws the same masks
  // The index of row 0 in the step's global batch (a rank's slice of it starts there). Dropout
  // masks are drawn per (seed, global row), so a batch split over ranks draws the masks the
  // whole batch would draw in one process.
  int64_t row_offset = 0;
};

class Model {
 public:
  virtual ~Model() = default;
  virtual std::string name() const = 0;
  virtual const ModelSpec& spec() const = 0;
  // Logits per row: 1 for a CTR model (a sigmoid output), the number of classes for a softmax
  // classifier (model.type mlp with model.num_classes >= 2), or one per task of a multi-task
  // model (num_tasks() > 1: each logit its own sigmoid output).
  virtual int num_outputs() const { return 1; }
  // Binary tasks predicted at once (mmoe); 1 otherwise. When > 1, num_outputs() == num_tasks().
  virtual int num_tasks() const { return 1; }

  // Writes logits[batch_size × num_outputs()] (row-major). `training` enables dropout. Errors:
  // InvalidArgument on shape mismatches (naming the field or table).
  [[nodiscard]] virtual Status Forward(const ForwardInput& input, bool training,
                                       std::span<float> logits, const ComputeContext& compute) = 0;

  // Given dL/dlogits[batch_size × num_outputs()] for the last Forward, accumulates dense parameter gradients
  // (overwriting, not adding to, previous steps') and writes table_grads[t] (num_unique × dim
  // of table t, zeroed by the model first).
  [[nodiscard]] virtual Status Backward(std::span<const float> dlogits,
                                        std::span<const std::span<float>> table_grads,
                                        const ComputeContext& compute) = 0;

  // Dense parameters with their gradients (stable order and names; used by optimizers,
  // checkpoints and gradient checks).
  virtual std::vector<optim::ParamRef> Params() = 0;
};

}  // namespace rectrain::nn

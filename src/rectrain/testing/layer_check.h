// rectrain/testing/layer_check.h: generic gradient checks of nn layers and whole models, built
// on grad_check.h (test-only).
//
// CheckLayerGradients(layer): random strided input x [B × in] (ld = in + pad), y = layer(x),
// L = Σ w·y; checks dL/dx and every parameter of layer.Params().
// CheckModelGradients(model, batch): L = Σ w·logits (every output of every row) over a SyntheticBatch; checks every dense
// parameter (Params()) and every pulled table row against the sparse gradients that
// Model::Backward returns (the "sparse rows vs their dense equivalent" check).
// Forward runs with training = true and a fixed seed, so dropout masks are fixed functions.
// Thread safety: test code, single-threaded callers.
#pragma once

#include <cstdint>
#include <vector>

#include "rectrain/nn/layer.h"
#include "rectrain/nn/model.h"
#include "rectrain/testing/grad_check.h"

namespace rectrain::testing {

struct LayerCheckOptions {
  int64_t batch = 5;
  int64_t pad = 3;            // extra row stride of x, to exercise strided views
  double input_scale = 1.0;   // x ~ N(0, input_scale²)
  int num_threads = 1;
  uint64_t seed = 7;
  GradCheckOptions grad;
};

// One result per checked tensor: "<layer>.input", then each parameter by name.
std::vector<GradCheckResult> CheckLayerGradients(nn::Layer& layer,
                                                 const LayerCheckOptions& options = {});

struct SyntheticOptions {
  int64_t num_unique = 6;      // pulled rows per table (fewer than the batch: ids repeat)
  bool multi_valued = false;   // odd fields get CSR bags of 0..3 ids
  float row_scale = 0.5f;      // rows ~ N(0, row_scale²)
};

// Random pulled rows, indices and dense features for a ModelSpec. Owns all storage; input()
// returns spans into it, so perturbing rows()/dense() changes what the model reads.
class SyntheticBatch {
 public:
  SyntheticBatch(const nn::ModelSpec& spec, int64_t batch, uint64_t seed,
                 const SyntheticOptions& options = {});
  nn::ForwardInput input() const;
  int64_t batch_size() const { return batch_; }
  std::vector<std::vector<float>>& rows() { return rows_; }
  std::vector<float>& dense() { return dense_; }
  const std::vector<int32_t>& offsets(int field) const { return offsets_[field]; }
  const std::vector<int32_t>& indices(int field) const { return indices_[field]; }
  int64_t num_unique(int table) const { return num_unique_[table]; }
  int dim(int table) const { return dims_[table]; }

 private:
  int64_t batch_;
  std::vector<int64_t> num_unique_;
  std::vector<int> dims_;
  std::vector<std::vector<float>> rows_;
  std::vector<float> dense_;
  std::vector<std::vector<int32_t>> offsets_, indices_;
  std::vector<nn::PulledTable> pulled_;
  std::vector<nn::FieldIndices> fields_;
};

// One result per checked tensor: each parameter by name, then "table:<name>" per table.
std::vector<GradCheckResult> CheckModelGradients(nn::Model& model, SyntheticBatch& batch,
                                                 const GradCheckOptions& options = {},
                                                 int num_threads = 1);

}  // namespace rectrain::testing

// rectrain/nn/model_config.h: building a Model from configuration (the model zoo registry).
// Thread safety: pure functions.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/embedding/embedding_table.h"
#include "rectrain/nn/layer.h"
#include "rectrain/nn/model.h"

namespace rectrain::nn {

struct ModelConfig {
  std::string type = "deepfm";          // lr | fm | wide_deep | deepfm | dcn_v2 | xdeepfm | autoint | dlrm | din | mmoe | mlp
  int embedding_dim = 16;               // default dim of every field
  std::map<std::string, int> field_dims;  // per-field override ("C3": 8); not for fm/deepfm
  std::map<std::string, Pooling> field_pooling;  // per-field; kSum when not listed
  std::vector<int> hidden = {400, 400, 400};  // MLP sizes (deep part)
  float dropout = 0.0f;                 // after each hidden activation, training only
  bool layer_norm = false;              // after each hidden Dense, before the activation
  int cross_layers = 3;                 // dcn_v2: number of full-rank cross layers
  std::vector<int> cin_layers = {32, 32};  // xdeepfm: feature maps per CIN layer
  int attention_layers = 3;             // autoint: interacting (self-attention) layers
  int attention_heads = 2;              // autoint: heads per layer
  int attention_head_dim = 8;           // autoint: size of each head (layer output: heads × this per field)
  std::string target_field;             // din: the item a row is about (a categorical field)
  std::string history_field;            // din: the behaviour sequence of such items (multi-valued, in order)
  std::vector<int> attention_hidden = {36};  // din: hidden sizes of the activation unit
  // dlrm: hidden sizes of the bottom MLP over the dense features; a last layer to embedding_dim
  // (ReLU) follows. `hidden` is the top MLP.
  std::vector<int> bottom = {64};
  // mmoe: binary tasks (the main label plus the config's model.task_labels; the trainer passes
  // the count), shared experts, a softmax gate and a tower per task.
  int num_tasks = 1;
  int num_experts = 4;
  std::vector<int> expert_hidden = {64};  // each expert's layers (ReLU); the last is its output
  std::vector<int> tower_hidden = {32};   // each tower's hidden layers before its logit
  // mlp: 1 = one logit (binary, sigmoid); >= 2 = a softmax over this many classes (the label is
  // the class index). Other types have one logit.
  int num_classes = 1;
  uint64_t seed = 42;                   // dense parameter initialisation
  // Dense-layer GEMMs in fp32 or mixed bf16 (nn/layer.h). kBf16 needs kernels::Bf16GemmAvailable().
  GemmPrecision precision = GemmPrecision::kFp32;
};

// Names of the registered model types, for error messages and docs.
std::vector<std::string> ModelTypes();

// Builds a model. `table_template` carries the sparse optimizer, initializer, admission and
// budget settings; the model derives its tables (names, dims) from it.
// Errors: InvalidArgument naming the bad key (model.type with the valid list, a field_dims key
// that is not a field, field_dims on a model that needs equal dims, hidden sizes < 1, ...).
Result<std::unique_ptr<Model>> MakeModel(const ModelConfig& config,
                                         const std::vector<std::string>& sparse_names,
                                         int num_dense,
                                         const embedding::EmbeddingTableConfig& table_template);

}  // namespace rectrain::nn

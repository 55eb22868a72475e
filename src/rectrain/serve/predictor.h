// rectrain/serve/predictor.h: a loaded serving model (model_package.h) that scores batches of
// rows: the model built from the package's config, its dense parameters, its tables mapped from
// the package (mapped_table.h) and served by the same local store `rectrain eval` uses, so a
// row's probability equals eval's for it. `rectrain serve` (service.h) and `rectrain predict`
// both score through Predict().
//
// Thread safety: Load and the accessors are thread-safe; Predict runs on one thread at a time
// (the model caches activations); NewParser gives each thread its own row parser.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rectrain/base/parallel.h"
#include "rectrain/base/result.h"
#include "rectrain/config/train_config.h"
#include "rectrain/data/batch.h"
#include "rectrain/data/row_parser.h"
#include "rectrain/serve/model_package.h"
#include "rectrain/serve/served_table.h"

namespace rectrain::serve {

struct PredictorOptions {
  // Compute threads of Predict (batches under 16 rows use one, the way `rectrain eval` computes
  // each row, so the probabilities equal eval's). For its GEMMs Predict sets the calling thread's
  // OpenMP team to that count and gives the caller's setting back when it returns.
  int threads = 2;
  bool verify_checksums = true;  // read every file once to check its XXH64 before mapping it
  // GEMM precision: unset = the config's model.precision (as `rectrain eval` resolves it on this
  // machine, so predictions equal eval's), or fp32 / bf16 to override it. bf16 converts the
  // weights per call, which costs more than it saves for a few rows (docs/serving.md).
  std::optional<nn::GemmPrecision> precision;
};

// Appends the shortest decimal text that reads back as `p` (std::to_chars): the one way
// `rectrain serve`, `rectrain predict` and `rectrain eval --predictions` write a probability, so
// their outputs compare as text.
void AppendProbability(float p, std::string* out);

class Predictor {
 public:
  // Loads the package in `dir`. Errors: NotFound (no manifest), DataLoss (a missing, truncated
  // or corrupt file, naming it), InvalidArgument (a package the model config contradicts).
  static Result<std::unique_ptr<Predictor>> Load(const std::string& dir, const PredictorOptions& options);
  ~Predictor();

  // A new predictor: this model with the serving delta in `dir` (delta.h) applied, sharing this
  // one's mapped tables; this one is unchanged and may go on scoring meanwhile. Errors:
  // FailedPrecondition when the delta's base is not this model (its manifest's XXH64 differs),
  // DataLoss (missing, truncated or corrupt files), InvalidArgument (other tables).
  Result<std::unique_ptr<Predictor>> ApplyDelta(const std::string& dir) const;

  // XXH64 of the manifest.json this model was loaded or last delta-applied from: what a delta
  // names as its base.
  uint64_t manifest_xxh64() const { return manifest_xxh64_; }
  size_t num_tables() const;
  const ServedTable& table(size_t t) const;  // model order

  const Manifest& manifest() const { return manifest_; }
  const std::string& dir() const { return dir_; }
  // Probabilities per row: one per task (CTR and multi-task models) or per class (model.num_classes).
  int outputs_per_row() const;
  // The training data config with the package's frozen layout (for readers of files to score).
  const data::DataConfig& data_config() const { return data_config_; }
  Result<std::unique_ptr<data::RowParser>> NewParser() const;

  // Scores `batch` (rows in this model's layout) into probs[batch.size × outputs_per_row()]:
  // sigmoid outputs calibrated for negative downsampling as in `rectrain eval`, or softmax
  // class probabilities. InvalidArgument when the batch's columns do not match the model.
  Status Predict(const data::Batch& batch, std::vector<float>* probs);

  // Embedding ids looked up and those that read the OOV row, over every Predict so far.
  int64_t ids_looked_up() const;
  int64_t unknown_ids() const;
  int64_t mapped_bytes() const;

 private:
  struct Impl;
  Predictor();
  // From the config text: the model, the data config; checks the tables against the manifest.
  Status BuildModel(const std::string& yaml, const PredictorOptions& options);
  // Reads the dense parameters, makes the store over impl_->tables, hashes dir_/manifest.json.
  Status Finish(const std::string& dense_path);
  Manifest manifest_;
  uint64_t manifest_xxh64_ = 0;
  std::string dir_;
  data::DataConfig data_config_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rectrain::serve

// rectrain/serve/predictor.cc: see predictor.h.
#include "rectrain/serve/predictor.h"

#include <omp.h>

#include <charconv>

#include "rectrain/checkpoint/dense_file.h"
#include "rectrain/data/transform.h"
#include "rectrain/io/file.h"
#include "rectrain/kernels/gemm.h"
#include "rectrain/nn/loss.h"
#include "rectrain/nn/model_config.h"
#include "rectrain/ps/embedding_store.h"
#include "rectrain/serve/delta.h"
#include "rectrain/serve/internal/manifest_json.h"
#include "rectrain/serve/mapped_table.h"
#include "rectrain/serve/served_table.h"

namespace rectrain::serve {

void AppendProbability(float p, std::string* out) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), p);
  out->append(buf, end);
}

namespace {

// oneDNN sizes a GEMM's team from the calling thread's OpenMP setting and from nothing else, and
// for a few rows the team size changes the bits of the result (a 1-row criteo-shape DeepFM scores
// differently on 2 threads than on 1, which `rectrain eval` uses per row). This sets it for one
// Predict and gives the caller's setting back, so the thread that calls keeps its own.
class GemmThreadsScope {
 public:
  explicit GemmThreadsScope(int threads) : saved_(omp_get_max_threads()) {
    if (threads != saved_) omp_set_num_threads(threads);
  }
  ~GemmThreadsScope() {
    if (omp_get_max_threads() != saved_) omp_set_num_threads(saved_);
  }
  GemmThreadsScope(const GemmThreadsScope&) = delete;
  GemmThreadsScope& operator=(const GemmThreadsScope&) = delete;

 private:
  int saved_;
};

}  // namespace

struct Predictor::Impl {
  PredictorOptions options;
  std::string config_yaml;
  config::TrainConfig config;
  ComputeContext compute;
  std::unique_ptr<nn::Model> model;
  std::vector<std::unique_ptr<ServedTable>> tables;
  std::unique_ptr<ps::EmbeddingStore> store;
  bool all_dense = true;  // the model reads every dense column, in order
  std::vector<float> dense, logits, labels;
};

Predictor::Predictor() : impl_(std::make_unique<Impl>()) {}
Predictor::~Predictor() = default;

Status Predictor::BuildModel(const std::string& yaml, const PredictorOptions& options) {
  const Manifest& m = manifest_;
  Impl& s = *impl_;
  s.options = options;
  s.config_yaml = yaml;
  RECTRAIN_ASSIGN_OR_RETURN(config::LoadedConfig lc, config::LoadTrainConfigFromString(yaml, dir_ + "/" + m.config.path, {}));
  s.config = std::move(lc.config);
  if (s.config.model.type != m.model_type) {
    return InvalidArgumentError(dir_ + "/manifest.json says model_type '" + m.model_type + "' but " + m.config.path +
                                " describes model.type '" + s.config.model.type +
                                "' (the files come from different exports; re-export the model)");
  }
  s.compute = ComputeContext{.num_threads = std::max(1, options.threads)};
  data_config_ = s.config.data;
  data_config_.files.clear();
  data_config_.feature_stats = m.layout.stats;
  nn::ModelConfig mc = s.config.model;
  mc.num_tasks = static_cast<int>(m.task_names.size());
  if (options.precision) {
    if (*options.precision == nn::GemmPrecision::kBf16 && !kernels::Bf16GemmAvailable()) {
      return InvalidArgumentError("precision bf16 needs a CPU with AVX512_BF16; use fp32");
    }
    mc.precision = *options.precision;
  }
  RECTRAIN_ASSIGN_OR_RETURN(s.model, nn::MakeModel(mc, m.sparse_names, static_cast<int>(m.feature_columns.size()),
                                                   s.config.embedding));
  const auto& specs = s.model->spec().tables;
  if (specs.size() != m.tables.size()) {
    return InvalidArgumentError(dir_ + ": the model has " + std::to_string(specs.size()) + " embedding tables but the package " +
                                std::to_string(m.tables.size()));
  }
  for (size_t t = 0; t < specs.size(); ++t) {
    if (specs[t].name != m.tables[t].name) {
      return InvalidArgumentError(dir_ + ": table " + std::to_string(t) + " is '" + m.tables[t].name + "' in the package but '" +
                                  specs[t].name + "' in the model");
    }
  }
  return OkStatus();
}

Status Predictor::Finish(const std::string& dense_path) {
  Impl& s = *impl_;
  RECTRAIN_RETURN_IF_ERROR(checkpoint::ReadDenseFile(dense_path, s.model->Params(), {})) << "while loading " << dir_;
  std::vector<embedding::TableReader*> raw;
  for (const auto& t : s.tables) raw.push_back(t.get());
  s.store = ps::MakeReadOnlyStore(s.model->spec(), std::move(raw));
  const Manifest& m = manifest_;
  for (size_t i = 0; i < m.feature_columns.size(); ++i) {
    s.all_dense = s.all_dense && m.feature_columns[i] == static_cast<int>(i);
  }
  s.all_dense = s.all_dense && m.feature_columns.size() == m.dense_names.size();
  RECTRAIN_ASSIGN_OR_RETURN(PackageFile mf, DescribeFile(dir_, "manifest.json"));
  manifest_xxh64_ = mf.xxh64;
  return OkStatus();
}

Result<std::unique_ptr<Predictor>> Predictor::Load(const std::string& dir, const PredictorOptions& options) {
  std::unique_ptr<Predictor> p(new Predictor());
  p->dir_ = dir;
  RECTRAIN_ASSIGN_OR_RETURN(p->manifest_, ReadManifest(dir));
  const Manifest& m = p->manifest_;
  // Sizes first: a version still being copied in is refused without hashing its files.
  RECTRAIN_RETURN_IF_ERROR(VerifyPackage(dir, m, /*checksums=*/false));
  if (options.verify_checksums) {
    RECTRAIN_RETURN_IF_ERROR(VerifyPackage(dir, m, /*checksums=*/true));
  }
  RECTRAIN_ASSIGN_OR_RETURN(std::string yaml, io::ReadFileToString(dir + "/" + m.config.path));
  RECTRAIN_RETURN_IF_ERROR(p->BuildModel(yaml, options));
  const auto& specs = p->impl_->model->spec().tables;
  for (size_t t = 0; t < specs.size(); ++t) {
    RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<MappedTable> table,
                              MappedTable::Open(dir + "/" + m.tables[t].file.path, m.tables[t], specs[t]));
    p->impl_->tables.push_back(std::make_unique<ServedTable>(std::shared_ptr<MappedTable>(std::move(table))));
  }
  RECTRAIN_RETURN_IF_ERROR(p->Finish(dir + "/" + m.dense.path));
  return p;
}

Result<std::unique_ptr<Predictor>> Predictor::ApplyDelta(const std::string& dir) const {
  RECTRAIN_ASSIGN_OR_RETURN(const std::string text, io::ReadFileToString(dir + "/manifest.json"));
  RECTRAIN_ASSIGN_OR_RETURN(const DeltaManifest dm, DeltaManifestFromJson(text, dir + "/manifest.json"));
  if (dm.base_manifest_xxh64 != manifest_xxh64_) {
    return FailedPreconditionError(dir + " is a delta of version " + std::to_string(dm.base_version) + " (manifest xxh64 " +
                                   internal::Hex(dm.base_manifest_xxh64) + ") but the model it would apply to is " + dir_ +
                                   ", version " + std::to_string(manifest_.version) + " (manifest xxh64 " +
                                   internal::Hex(manifest_xxh64_) + "): publish a full export");
  }
  const PredictorOptions& options = impl_->options;
  RECTRAIN_RETURN_IF_ERROR(VerifyDelta(dir, dm, /*checksums=*/false));
  if (options.verify_checksums) {
    RECTRAIN_RETURN_IF_ERROR(VerifyDelta(dir, dm, /*checksums=*/true));
  }
  if (dm.tables.size() != manifest_.tables.size()) {
    return InvalidArgumentError(dir + " has " + std::to_string(dm.tables.size()) + " tables; the model has " +
                                std::to_string(manifest_.tables.size()));
  }
  std::unique_ptr<Predictor> p(new Predictor());
  p->dir_ = dir;
  p->manifest_ = manifest_;
  Manifest& m = p->manifest_;
  m.version = dm.version;
  m.created = dm.created;
  m.trained_steps = dm.trained_steps;
  m.source_run = dm.source_run;
  m.events = dm.events;
  RECTRAIN_RETURN_IF_ERROR(p->BuildModel(impl_->config_yaml, options));
  for (size_t t = 0; t < dm.tables.size(); ++t) {
    const DeltaTableEntry& e = dm.tables[t];
    if (e.name != m.tables[t].name) {
      return InvalidArgumentError(dir + ": table " + std::to_string(t) + " is '" + e.name + "' in the delta but '" +
                                  m.tables[t].name + "' in the model");
    }
    RECTRAIN_ASSIGN_OR_RETURN(const TableDelta d, ReadTableDeltaFile(dir + "/" + e.file.path, e));
    RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<ServedTable> next, impl_->tables[t]->WithDelta(d));
    if (next->rows() != e.rows) {
      return DataLossError(dir + ": table '" + e.name + "' has " + std::to_string(next->rows()) +
                           " rows once applied but the manifest says " + std::to_string(e.rows) + " (publish a full export)");
    }
    m.tables[t].rows = e.rows;
    p->impl_->tables.push_back(std::move(next));
  }
  RECTRAIN_RETURN_IF_ERROR(p->Finish(dir + "/" + dm.dense.path));
  return p;
}

const ServedTable& Predictor::table(size_t t) const { return *impl_->tables.at(t); }
size_t Predictor::num_tables() const { return impl_->tables.size(); }

int Predictor::outputs_per_row() const { return impl_->model->num_outputs(); }

Result<std::unique_ptr<data::RowParser>> Predictor::NewParser() const {
  return data::RowParser::Create(data_config_, manifest_.layout);
}

Status Predictor::Predict(const data::Batch& batch, std::vector<float>* probs) {
  Impl& s = *impl_;
  const int outputs = s.model->num_outputs();
  const int tasks = s.model->num_tasks();
  const size_t n = static_cast<size_t>(batch.size);
  probs->resize(n * static_cast<size_t>(outputs));
  if (batch.size == 0) return OkStatus();
  if (batch.num_dense != static_cast<int>(manifest_.dense_names.size())) {
    return InvalidArgumentError("the batch has " + std::to_string(batch.num_dense) + " dense columns; the model reads " +
                                std::to_string(manifest_.dense_names.size()));
  }
  // A few rows are scored faster on one thread than split over several (the fork and join
  // cost more than the work: 58 vs 91 us for one criteo-shape DeepFM row, model_benchmark
  // BM_DeepFmForward). Results do not depend on the thread count.
  const ComputeContext compute{.num_threads = batch.size < 16 ? 1 : s.compute.num_threads};
  const GemmThreadsScope gemm_threads(compute.num_threads);
  RECTRAIN_RETURN_IF_ERROR(s.store->Lookup(batch, embedding::PullMode::kEval, compute));
  std::span<const float> dense = batch.dense;
  if (!s.all_dense) {
    const size_t nd = static_cast<size_t>(batch.num_dense), nf = manifest_.feature_columns.size();
    s.dense.resize(n * nf);
    for (size_t r = 0; r < n; ++r) {
      for (size_t j = 0; j < nf; ++j) s.dense[r * nf + j] = batch.dense[r * nd + static_cast<size_t>(manifest_.feature_columns[j])];
    }
    dense = s.dense;
  }
  const nn::ForwardInput in{.batch_size = batch.size, .dense = dense, .tables = s.store->pulled(), .fields = s.store->fields(), .seed = 0};
  s.logits.resize(n * static_cast<size_t>(outputs));
  RECTRAIN_RETURN_IF_ERROR(s.model->Forward(in, /*training=*/false, s.logits, compute));
  // The labels only feed the loss value, which is discarded: zeros.
  s.labels.assign(n * static_cast<size_t>(tasks), 0.0f);
  const double rate = manifest_.negative_downsampling;
  if (outputs > tasks) {  // a classifier: softmax over the classes
    nn::SoftmaxCrossEntropy(s.logits, outputs, std::span<const float>(s.labels.data(), n), {}, *probs, compute);
  } else if (tasks > 1) {  // as rectrain eval: only the label's task was downsampled
    if (rate < 1.0) {
      for (size_t r = 0; r < n; ++r) s.logits[r * tasks] = static_cast<float>(data::CalibrateLogit(s.logits[r * tasks], rate));
    }
    const std::vector<float> weights(static_cast<size_t>(tasks), 1.0f);
    nn::MultiTaskSigmoidCrossEntropy(s.logits, tasks, s.labels, weights, {}, *probs, {}, compute);
  } else {
    if (rate < 1.0) {
      for (float& l : s.logits) l = static_cast<float>(data::CalibrateLogit(l, rate));
    }
    nn::SigmoidCrossEntropy(s.logits, s.labels, {}, *probs, compute);
  }
  return OkStatus();
}

int64_t Predictor::ids_looked_up() const {
  int64_t n = 0;
  for (const auto& t : impl_->tables) n += t->Stats().lookups;
  return n;
}

int64_t Predictor::unknown_ids() const {
  int64_t n = 0;
  for (const auto& t : impl_->tables) n += t->Stats().oov_lookups;
  return n;
}

int64_t Predictor::mapped_bytes() const {
  int64_t n = 0;
  for (const auto& t : impl_->tables) n += t->mapped_bytes();
  return n;
}

}  // namespace rectrain::serve

#include "rectrain/config/train_config.h"

#include <algorithm>
#include <charconv>
#include <optional>

#include "rectrain/base/random.h"
#include "rectrain/data/transform.h"
#include "rectrain/kernels/gemm.h"

namespace rectrain::config {
namespace {

constexpr double kMaxInt = 9.0e18;
// Byte sizes (budgets): 1 PiB, beyond any machine this runs on.
constexpr double kMaxBytes = 1125899906842624.0;
// A layer's width: 65536 units; the first layer of a default DeepFM that wide holds 28M weights.
// (Several wide layers together can still pass memory: the model build checks the total.)
constexpr double kMaxWidth = 65536;
// A dense value (fill, clip): a float32 well inside its range, so transforms stay finite.
const Range kDenseValue = Range::Closed(-1e30, 1e30);

// A mode key: its name bound with the enum's names as the choices, then the value. (An invalid
// name is recorded as an error by the binder; the default stands in so binding goes on.)
template <typename E>
E BindEnum(ConfigBinder& b, const std::string& key, E fallback, const NamedEnum<E>& names) {
  return names.Find(b.String(key, names.Name(fallback), names.Names())).value_or(fallback);
}

// "\t", "tab", "\\t" -> '\t'; otherwise a single character.
std::optional<char> ParseDelimiter(const std::string& s) {
  if (s == "\t" || s == "\\t" || s == "tab") return '\t';
  if (s.size() == 1) return s[0];
  return std::nullopt;
}

}  // namespace

optim::LrScheduleConfig TrainConfig::SparseLrSchedule() const {
  optim::LrScheduleConfig s = lr_schedule;
  s.lr = embedding_lr;
  s.min_lr = lr_schedule.lr > 0 ? lr_schedule.min_lr * (embedding_lr / lr_schedule.lr) : 0.0f;
  if (s.min_lr > s.lr) s.min_lr = s.lr;
  return s;
}

namespace {

// data.*: the files, their layout and how they are read
void BindData(ConfigBinder& b, TrainConfig& c) {
  c.train_files = b.StringList("data.train", {});
  c.valid_files = b.StringList("data.valid", {});
  data::SchemaConfig& schema = c.data.schema;
  schema.format =
      BindEnum(b, "data.format", data::DataFormat::kAuto, data::kConfigDataFormats);
  schema.criteo_dense = static_cast<int>(b.Int("data.criteo_dense", 13, Range::Closed(0, 10000)));
  schema.criteo_sparse =
      static_cast<int>(b.Int("data.criteo_sparse", 26, Range::Closed(0, 10000)));
  const std::string delimiter =
      b.String("data.delimiter", schema.format == data::DataFormat::kCsv ? "," : "\t");
  if (auto d = ParseDelimiter(delimiter)) {
    schema.delimiter = *d;
  } else {
    b.AddError("data.delimiter", "\"" + delimiter + "\" is not a single character (use \"\\t\" or tab for tabs)");
  }
  schema.header = b.Bool("data.header", false);
  schema.label = b.String("data.label", "label");
  schema.dense = b.StringList("data.dense", {});
  schema.sparse = b.StringList("data.sparse", {});
  schema.columns = b.StringList("data.columns", {});
  schema.group_key = b.String("data.group_key", "");
  c.data.max_bad_rows = b.Int("data.max_bad_rows", 0, Range::Closed(0, kMaxInt));
  c.data.rejects_file = b.String("data.rejects_file", "");
  c.read.batch_size = b.Int("data.batch_size", 4096, Range::Closed(1, 1 << 20));
  // data.shuffle: off | buffer | global; true/false (older configs) mean buffer/off.
  const std::string shuffle =
      b.String("data.shuffle", "buffer", {"buffer", "global", "off", "true", "false"});
  c.epoch.shuffle = shuffle == "global"                     ? data::ShuffleMode::kGlobal
                    : (shuffle == "off" || shuffle == "false") ? data::ShuffleMode::kOff
                                                               : data::ShuffleMode::kBuffer;
  c.read.shuffle = c.epoch.shuffle == data::ShuffleMode::kBuffer;
  c.epoch.shuffle_key = b.String("data.shuffle_key", "");
  const std::string memory_cache = b.String("data.memory_cache", "auto", {"auto", "on", "off"});
  c.epoch.memory_cache = memory_cache == "on"    ? data::MemoryCacheMode::kOn
                         : memory_cache == "off" ? data::MemoryCacheMode::kOff
                                                 : data::MemoryCacheMode::kAuto;
  c.epoch.memory_cache_bytes = b.Bytes("data.memory_cache_bytes", 0, Range::Closed(0, kMaxBytes));
  if (!c.epoch.shuffle_key.empty() && c.epoch.shuffle != data::ShuffleMode::kGlobal) {
    b.AddError("data.shuffle_key", "needs data.shuffle: global (data.shuffle is " + shuffle + ")");
  }
  if (c.epoch.shuffle == data::ShuffleMode::kGlobal && c.epoch.memory_cache == data::MemoryCacheMode::kOff) {
    b.AddError("data.memory_cache",
               "off contradicts data.shuffle: global, which permutes the whole training split in memory "
               "(use auto or on, or data.shuffle: buffer)");
  }
  c.read.shuffle_buffer_rows = b.Int("data.shuffle_buffer", 1 << 20, Range::Closed(1, kMaxInt));
  c.read.num_threads = static_cast<int>(b.Int("data.reader_threads", 1, Range::Closed(1, 64)));
  c.read.prefetch_batches = static_cast<int>(b.Int("data.prefetch", 4, Range::Closed(1, 1024)));
  c.read.chunk_bytes = b.Bytes("data.chunk_bytes", data::ReadOptions{}.chunk_bytes, Range::Closed(64 << 10, 1 << 30));
  c.read.seed = c.seed;
  c.data.negative_downsampling =
      b.Double("data.negative_downsampling", 1.0, Range{0, 1, true, false});
  c.data.cache_dir = b.String("data.cache_dir", "");
  c.data.cache = BindEnum(b, "data.cache", data::CacheMode::kAuto, data::kCacheModes);
  c.data.filters = b.StringList("data.filters", {});
  for (size_t i = 0; i < c.data.filters.size(); ++i) {
    if (auto f = data::ParseRowFilter(c.data.filters[i]); !f.ok()) {
      b.AddError("data.filters", "[" + std::to_string(i) + "] " + std::string(f.status().message()));
    }
  }
  // Standardize/quantiles statistics always come from the training files, so validation and
  // eval rows are transformed like training rows.
  c.data.stats_files = c.train_files;
}

// features.*: the default dense transform, hashing and per-feature transforms
void BindFeatures(ConfigBinder& b, TrainConfig& c) {
  c.data.dense.fill = b.Float("features.fill", 0.0f, kDenseValue);
  c.data.dense.log1p = b.Bool("features.log1p", true);
  c.data.dense.clip_min = b.Float("features.clip_min", 0.0f, kDenseValue);
  c.data.dense.clip_max = b.Float("features.clip_max", 0.0f, kDenseValue);
  c.data.hash_seed = static_cast<uint64_t>(b.Int("features.hash_seed", 0, Range::Closed(0, kMaxInt)));
  c.data.transforms = b.StringMap("features.transforms", {});
  for (const auto& [feature, spec] : c.data.transforms) {
    if (auto t = data::ParseTransform(spec); !t.ok()) {
      b.AddError("features.transforms." + feature, t.status().message());
    }
  }
}

// model.*
void BindModel(ConfigBinder& b, TrainConfig& c) {
  c.model.type = b.String("model.type", "deepfm", nn::ModelTypes());
  c.model.embedding_dim = static_cast<int>(b.Int("model.embedding_dim", 16, Range::Closed(1, 4096)));
  for (const auto& [field, dim] : b.IntMap("model.field_dims", {}, Range::Closed(1, 4096))) {
    c.model.field_dims[field] = static_cast<int>(dim);
  }
  for (const auto& [field, pooling] : b.StringMap("model.field_pooling", {}, nn::kPoolings.Names())) {
    c.model.field_pooling[field] = nn::kPoolings.Find(pooling).value_or(nn::Pooling::kSum);  // the binder checked the name
  }
  c.model.hidden.clear();
  for (int64_t h : b.IntList("model.hidden", {400, 400, 400}, Range::Closed(1, kMaxWidth))) {
    c.model.hidden.push_back(static_cast<int>(h));
  }
  c.model.dropout = b.Float("model.dropout", 0.0f, Range::HalfOpen(0, 1));
  c.model.layer_norm = b.Bool("model.layer_norm", false);
  c.model.cross_layers = static_cast<int>(b.Int("model.cross_layers", 3, Range::Closed(0, 64)));
  c.model.cin_layers.clear();
  for (int64_t h : b.IntList("model.cin_layers", {32, 32}, Range::Closed(1, 4096))) c.model.cin_layers.push_back(static_cast<int>(h));
  c.model.attention_layers = static_cast<int>(b.Int("model.attention_layers", 3, Range::Closed(1, 64)));
  c.model.attention_heads = static_cast<int>(b.Int("model.attention_heads", 2, Range::Closed(1, 64)));
  c.model.attention_head_dim = static_cast<int>(b.Int("model.attention_head_dim", 8, Range::Closed(1, 256)));
  c.model.target_field = b.String("model.target_field", "");
  c.model.history_field = b.String("model.history_field", "");
  c.model.attention_hidden.clear();
  for (int64_t h : b.IntList("model.attention_hidden", {36}, Range::Closed(1, kMaxWidth))) c.model.attention_hidden.push_back(static_cast<int>(h));
  c.task_labels = b.StringList("model.task_labels", {});
  for (double w : b.DoubleList("model.task_weights", {}, Range::Closed(0, 1e6))) c.task_weights.push_back(static_cast<float>(w));
  c.model.num_experts = static_cast<int>(b.Int("model.num_experts", 4, Range::Closed(1, 1024)));
  c.model.expert_hidden.clear();
  for (int64_t h : b.IntList("model.expert_hidden", {64}, Range::Closed(1, kMaxWidth))) c.model.expert_hidden.push_back(static_cast<int>(h));
  c.model.tower_hidden.clear();
  for (int64_t h : b.IntList("model.tower_hidden", {32}, Range::Closed(1, kMaxWidth))) c.model.tower_hidden.push_back(static_cast<int>(h));
  if (!c.task_labels.empty() && c.model.type != "mmoe") {
    b.AddError("model.task_labels", "extra task labels need model.type: mmoe (a multi-task model)");
  }
  if (!c.task_weights.empty() && c.task_weights.size() != c.task_labels.size() + 1) {
    b.AddError("model.task_weights", std::to_string(c.task_weights.size()) + " weights for " + std::to_string(c.task_labels.size() + 1) +
                                         " tasks: one for the label, then one per model.task_labels entry");
  }
  if (c.model.type == "mmoe" && c.task_labels.empty()) {
    b.AddError("model.task_labels", "model.type mmoe needs at least one extra task: name its dense label column(s) here");
  }
  c.model.bottom.clear();
  for (int64_t h : b.IntList("model.bottom", {64}, Range::Closed(1, kMaxWidth))) c.model.bottom.push_back(static_cast<int>(h));
  c.model.num_classes = static_cast<int>(b.Int("model.num_classes", 1, Range::Closed(1, 100000)));
  if (c.model.num_classes > 1 && c.model.type != "mlp") {
    b.AddError("model.num_classes", std::to_string(c.model.num_classes) + " classes need model.type: mlp (a softmax classifier)");
  }
  // auto: bf16 where the CPU multiplies bf16 natively (AVX512_BF16), fp32 elsewhere, so one
  // config (the bench specs) runs at its best on either kind of machine. The trainer logs it.
  const std::string precision = b.String("model.precision", "fp32", {"fp32", "bf16", "auto"});
  c.model_precision_auto = precision == "auto";
  c.model.precision = precision == "bf16" || (c.model_precision_auto && kernels::Bf16GemmAvailable())
                          ? nn::GemmPrecision::kBf16
                          : nn::GemmPrecision::kFp32;
  c.model.seed = DeriveSeed(c.seed, 0x6d6f64656cULL);  // "model"
}

// embedding.*: the sparse tables, their optimizer, initializer and lifecycle
void BindEmbedding(ConfigBinder& b, TrainConfig& c) {
  embedding::EmbeddingTableConfig& e = c.embedding;
  e.dim = c.model.embedding_dim;
  e.seed = DeriveSeed(c.seed, 0x656d62ULL);  // "emb"
  optim::SparseOptimizerConfig& so = e.optimizer;
  so.type = BindEnum(b, "embedding.optimizer.type", optim::SparseOptimizerType::kAdagrad, optim::kSparseOptimizerTypes);
  c.embedding_lr = b.Float("embedding.optimizer.lr", 0.05f, Range::Positive());
  so.beta1 = b.Float("embedding.optimizer.beta1", 0.9f, Range::HalfOpen(0, 1));
  so.beta2 = b.Float("embedding.optimizer.beta2", 0.999f, Range::HalfOpen(0, 1));
  so.epsilon = b.Float("embedding.optimizer.epsilon", 1e-8f, Range::AtLeast(0));
  so.initial_accumulator = b.Float("embedding.optimizer.initial_accumulator", 0.0f, Range::AtLeast(0));
  so.l2 = b.Float("embedding.optimizer.l2", 0.0f, Range::AtLeast(0));
  so.ftrl_alpha = b.Float("embedding.optimizer.ftrl_alpha", 0.05f, Range::Positive());
  so.ftrl_beta = b.Float("embedding.optimizer.ftrl_beta", 1.0f, Range::AtLeast(0));
  so.ftrl_l1 = b.Float("embedding.optimizer.ftrl_l1", 0.0f, Range::AtLeast(0));
  so.ftrl_l2 = b.Float("embedding.optimizer.ftrl_l2", 0.0f, Range::AtLeast(0));
  using Sparse = optim::SparseOptimizerType;
  if (so.epsilon == 0.0f && (so.type == Sparse::kAdam || (so.type == Sparse::kAdagrad && so.initial_accumulator == 0.0f))) {
    b.AddError("embedding.optimizer.epsilon", "0 divides by zero for " + std::string(optim::kSparseOptimizerTypes.Name(so.type)) +
                                                  (so.type == Sparse::kAdam ? "" : " unless embedding.optimizer.initial_accumulator > 0"));
  }
  e.initializer.type = BindEnum(b, "embedding.initializer.type", embedding::InitializerType::kNormal, embedding::kInitializerTypes);
  e.initializer.stddev = b.Float("embedding.initializer.stddev", 0.01f, Range::AtLeast(0));
  e.initializer.scale = b.Float("embedding.initializer.scale", 0.01f, Range::AtLeast(0));
  e.min_count = b.Int("embedding.min_count", 1, Range::Closed(1, 4294967295.0));  // a 32-bit sighting count
  e.memory_budget_bytes = b.Bytes("embedding.memory_budget", 0, Range::Closed(0, kMaxBytes));
  e.on_budget = BindEnum(b, "embedding.on_budget", embedding::OnBudget::kEvict, embedding::kOnBudgets);
  // Counted in steps (the tables' clock), below the clock's saturation at 2^32-2.
  e.ttl_steps = b.Int("embedding.ttl_steps", 0, Range::Closed(0, 4294967293.0));
  e.num_shards = static_cast<int>(b.Int("embedding.shards", 64, Range::Closed(1, 65536)));
  if ((e.num_shards & (e.num_shards - 1)) != 0) {
    b.AddError("embedding.shards", std::to_string(e.num_shards) + " is not a power of two");
  }
}

// optimizer.*: the dense optimizer and the learning-rate schedule
void BindOptimizer(ConfigBinder& b, TrainConfig& c) {
  optim::DenseOptimizerConfig& o = c.optimizer;
  o.type = BindEnum(b, "optimizer.type", optim::DenseOptimizerType::kAdam, optim::kDenseOptimizerTypes);
  c.lr_schedule.lr = b.Float("optimizer.lr", 1e-3f, Range::Positive());
  o.beta1 = b.Float("optimizer.beta1", 0.9f, Range::HalfOpen(0, 1));
  o.beta2 = b.Float("optimizer.beta2", 0.999f, Range::HalfOpen(0, 1));
  o.epsilon = b.Float("optimizer.epsilon", 1e-8f, Range::AtLeast(0));
  o.weight_decay = b.Float("optimizer.weight_decay", 0.0f, Range::AtLeast(0));
  o.momentum = b.Float("optimizer.momentum", 0.0f, Range::HalfOpen(0, 1));
  o.initial_accumulator = b.Float("optimizer.initial_accumulator", 0.0f, Range::AtLeast(0));
  using Dense = optim::DenseOptimizerType;
  if (o.epsilon == 0.0f && (o.type == Dense::kAdam || o.type == Dense::kAdamW || (o.type == Dense::kAdagrad && o.initial_accumulator == 0.0f))) {
    b.AddError("optimizer.epsilon", "0 divides by zero for " + std::string(optim::kDenseOptimizerTypes.Name(o.type)) +
                                        (o.type == Dense::kAdagrad ? " unless optimizer.initial_accumulator > 0" : ""));
  }
  c.lr_schedule.warmup_steps = b.Int("optimizer.warmup_steps", 0, Range::Closed(0, kMaxInt));
  c.lr_schedule.decay =
      b.String("optimizer.decay", "none", {"none", "linear", "cosine", "exponential", "step"});
  c.lr_schedule.decay_steps = b.Int("optimizer.decay_steps", 0, Range::Closed(0, kMaxInt));
  c.lr_schedule.decay_rate = b.Float("optimizer.decay_rate", 0.5f, Range{0, 1, true, false});
  c.lr_schedule.min_lr = b.Float("optimizer.min_lr", 0.0f, Range::AtLeast(0));
  if (c.lr_schedule.decay != "none" && c.lr_schedule.decay_steps == 0) {
    b.AddError("optimizer.decay_steps", "must be > 0 when optimizer.decay is " + c.lr_schedule.decay);
  }
  if (c.lr_schedule.min_lr > c.lr_schedule.lr) {
    b.AddError("optimizer.min_lr", "must not exceed optimizer.lr");
  }
  if (Status s = optim::ValidateLrSchedule(c.lr_schedule); !s.ok() && b.errors().empty()) {
    b.AddError("optimizer", s.message());  // backstop for rules the checks above do not cover
  }
}

// train.*
void BindTrain(ConfigBinder& b, TrainConfig& c) {
  TrainerSettings& t = c.train;
  t.epochs = b.Int("train.epochs", 1, Range::Closed(1, 1000000));
  t.max_steps = b.Int("train.max_steps", 0, Range::Closed(0, kMaxInt));
  t.eval_every_steps = b.Int("train.eval_every_steps", 0, Range::Closed(0, kMaxInt));
  t.checkpoint_every_steps = b.Int("train.checkpoint_every_steps", 0, Range::Closed(0, kMaxInt));
  t.keep_checkpoints = b.Int("train.keep_checkpoints", 3, Range::Closed(1, 1000000));
  // Bound only when given, so that a config without it resolves (and hashes) as before the key
  // existed: a run's config_hash in meta.json does not change with the upgrade.
  if (b.Has("train.checkpoint_full_every")) {
    t.checkpoint_full_every = b.Int("train.checkpoint_full_every", 1, Range::Closed(1, 1000000));
  }
  t.checkpoint_dir = b.String("train.checkpoint_dir", "");
  if (!t.checkpoint_dir.empty() && t.checkpoint_dir.rfind("s3://", 0) != 0) {
    b.AddError("train.checkpoint_dir", "must be an object-store prefix such as s3://bucket/runs/x/checkpoints "
               "(local checkpoints always live in RUN_DIR/checkpoints), got \"" + t.checkpoint_dir + "\"");
  }
  t.log_every_steps = b.Int("train.log_every_steps", 100, Range::Closed(1, kMaxInt));
  using Metric = EarlyStoppingMetric;
  t.early_stopping.metric = BindEnum(b, "train.early_stopping.metric", Metric::kAuc, kEarlyStoppingMetrics);
  t.accumulate_steps = b.Int("train.accumulate_steps", 1, Range::Closed(1, 4096));
  if (t.early_stopping.metric == Metric::kAuc && c.model.num_classes > 1) {
    t.early_stopping.metric = Metric::kAccuracy;  // AUC is a binary metric; a classifier's default is accuracy
  } else if (t.early_stopping.metric == Metric::kAccuracy && c.model.num_classes == 1) {
    b.AddError("train.early_stopping.metric", "accuracy needs model.num_classes >= 2; a CTR model watches auc or logloss");
  }
  t.early_stopping.patience = b.Int("train.early_stopping.patience", 0, Range::Closed(0, kMaxInt));
  t.early_stopping.min_delta = b.Double("train.early_stopping.min_delta", 0.0, Range::AtLeast(0));
}

// eval.*
void BindEval(ConfigBinder& b, TrainConfig& c) {
  c.eval.gauc = b.Bool("eval.gauc", false);
  c.eval.batch_size = b.Int("eval.batch_size", 0, Range::Closed(0, 1 << 20));
}

// tracking.* and monitoring.* (docs/tracking.md)
void BindTracking(ConfigBinder& b, TrainConfig& c) {
  TrackingSettings& tr = c.tracking;
  tr.enabled = b.Bool("tracking.enabled", true);
  tr.workspace = b.String("tracking.workspace", "");
  tr.store = b.String("tracking.store", "");
  tr.run_name = b.String("tracking.run_name", "");
  tr.tags = b.StringList("tracking.tags", {});
  tr.group = b.String("tracking.group", "");
  tr.parent_id = b.Int("tracking.parent_id", 0, Range::Closed(0, kMaxInt));
  for (const auto& tag : tr.tags) {
    if (tag.empty()) b.AddError("tracking.tags", "a tag must not be empty");
  }
  MonitoringSettings& mon = c.monitoring;
  mon.enabled = b.Bool("monitoring.enabled", true);
  mon.host = b.String("monitoring.host", "127.0.0.1");
  mon.port = static_cast<int>(b.Int("monitoring.port", 0, Range::Closed(0, 65535)));
  mon.linger_on_failure_s = b.Double("monitoring.linger_on_failure_s", 0.0, Range::Closed(0, 3600));
  if (mon.host.empty()) b.AddError("monitoring.host", "must not be empty (default 127.0.0.1)");
}

// checks.* (docs/data.md, "Data quality")
void BindChecks(ConfigBinder& b, TrainConfig& c) {
  data::DataChecks& ck = c.checks;
  ck.min_rows = b.Int("checks.min_rows", 1, Range::Closed(0, kMaxInt));
  ck.max_bad_rows = b.Int("checks.max_bad_rows", -1, Range::Closed(-1, kMaxInt));
  ck.allow_constant_label = b.Bool("checks.allow_constant_label", false);
  ck.max_rows = b.Int("checks.max_rows", 200000, Range::Closed(0, kMaxInt));
  ck.before_train = b.Bool("checks.before_train", true);
  if (ck.max_rows > 0 && ck.min_rows > ck.max_rows) {
    b.AddError("checks.min_rows", std::to_string(ck.min_rows) + " exceeds checks.max_rows = " +
                                      std::to_string(ck.max_rows) +
                                      " (the rows profiled per split); raise checks.max_rows, or 0 to profile every row");
  }
  auto parse_ratio = [](const std::string& s) -> std::optional<double> {
    double v = 0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size() || !(v >= 0 && v <= 1)) {
      return std::nullopt;
    }
    return v;
  };
  for (const auto& [column, text] : b.StringMap("checks.max_null_ratio", {})) {
    if (auto v = parse_ratio(text)) {
      ck.max_null_ratio[column] = *v;
    } else {
      b.AddError("checks.max_null_ratio." + column, "expected a ratio in [0, 1], got \"" + text + "\"");
    }
  }
  const std::vector<std::string> rate = b.StringList("checks.label_rate", {});
  if (!rate.empty()) {
    auto lo = rate.size() == 2 ? parse_ratio(rate[0]) : std::nullopt;
    auto hi = rate.size() == 2 ? parse_ratio(rate[1]) : std::nullopt;
    if (!lo || !hi || *lo > *hi) {
      b.AddError("checks.label_rate", "expected [min, max] with 0 <= min <= max <= 1");
    } else {
      ck.has_label_rate = true;
      ck.label_rate_min = *lo;
      ck.label_rate_max = *hi;
    }
  }
}

// dist.* (docs/scaling.md)
void BindDist(ConfigBinder& b, TrainConfig& c) {
  const TrainerSettings& t = c.train;
  const std::string dist_mode = b.String("dist.mode", "sync", {"sync", "async"});
  c.dist.mode = dist_mode == "async" ? DistMode::kAsync : DistMode::kSync;
  const std::string split = b.String("dist.data_split", "auto", {"auto", "shards", "batches"});
  c.dist.data_split = split == "shards" ? DataSplit::kShards : split == "batches" ? DataSplit::kBatches : DataSplit::kAuto;
  c.dist.servers = static_cast<int>(b.Int("dist.servers", 1, Range::Closed(1, 65536)));
  c.dist.staleness = b.Int("dist.staleness", 4, Range::Closed(0, 1000000));
  if (c.dist.mode == DistMode::kAsync) {
    // Workers run on their own: nothing that needs every rank at one step during training.
    if (c.dist.data_split == DataSplit::kBatches) {
      b.AddError("dist.data_split", "batches needs dist.mode sync (asynchronous workers read their own shards)");
    }
    if (t.eval_every_steps > 0) b.AddError("train.eval_every_steps", "needs dist.mode sync (async evaluates at the end)");
    if (t.early_stopping.patience > 0) b.AddError("train.early_stopping.patience", "needs dist.mode sync");
    if (t.checkpoint_every_steps > 0) {
      b.AddError("train.checkpoint_every_steps", "needs dist.mode sync (async checkpoints at the end and on SIGTERM)");
    }
    if (c.train.accumulate_steps > 1) b.AddError("train.accumulate_steps", "needs dist.mode sync");
    if (t.checkpoint_full_every > 1) {
      b.AddError("train.checkpoint_full_every", "needs dist.mode sync (async checkpoints only at the end: set 1)");
    }
  }
  c.dist.timeout_s = b.Double("dist.timeout_s", 300.0, Range{0, 1e6, true, false});
  c.dist.batch_per_rank = b.String("dist.batch", "global", {"global", "per_rank"}) == "per_rank";
  const std::string scaling = b.String("dist.lr_scaling", "none", {"none", "linear", "sqrt"});
  c.dist.lr_scaling = scaling == "linear" ? LrScaling::kLinear : scaling == "sqrt" ? LrScaling::kSqrt : LrScaling::kNone;
}

// Keys that must agree across sections.
void CheckCrossKeys(ConfigBinder& b, const TrainConfig& c) {
  const data::SchemaConfig& schema = c.data.schema;
  const TrainerSettings& t = c.train;
  if (c.train_files.empty() && !c.stream) {
    b.AddError("data.train", "is required: a file, a glob or a list of them (e.g. --set data.train=train.tsv)");
  }
  if (c.valid_files.empty()) {
    if (t.eval_every_steps > 0) b.AddError("train.eval_every_steps", "needs data.valid");
    if (t.early_stopping.patience > 0) b.AddError("train.early_stopping.patience", "needs data.valid");
  }
  if (c.eval.gauc && schema.group_key.empty()) {
    b.AddError("eval.gauc", "needs data.group_key (the column that identifies a user or query)");
  }
  const bool all_parquet =
      !c.train_files.empty() &&
      std::all_of(c.train_files.begin(), c.train_files.end(), [](const std::string& f) {
        return f.size() >= 8 && f.compare(f.size() - 8, 8, ".parquet") == 0;
      });
  // libsvm defaults to one categorical feature holding every index (docs/formats/libsvm.md).
  if ((schema.format == data::DataFormat::kAuto ? all_parquet
                               : schema.format != data::DataFormat::kCriteo && schema.format != data::DataFormat::kLibsvm && schema.format != data::DataFormat::kIdx) &&
      schema.dense.empty() && schema.sparse.empty()) {
    b.AddError("data.format", std::string(schema.format == data::DataFormat::kAuto ? "parquet" : data::FormatName(schema.format)) + " needs data.dense and/or data.sparse column names");
  }
}

}  // namespace

// One binder per section, in the order of docs/config.md: errors are reported in that order.
TrainConfig BindTrainConfig(ConfigBinder& b) {
  TrainConfig c;
  c.seed = static_cast<uint64_t>(b.Int("seed", 42, Range::Closed(0, kMaxInt)));
  c.deterministic = b.Bool("deterministic", false);
  c.threads = static_cast<int>(b.Int("threads", 2, Range::Closed(1, 256)));
  BindData(b, c);
  BindFeatures(b, c);
  BindModel(b, c);
  BindEmbedding(b, c);
  BindOptimizer(b, c);
  BindTrain(b, c);
  BindEval(b, c);
  BindTracking(b, c);
  BindChecks(b, c);
  BindDist(b, c);
  BindStreamSection(b, &c);
  BindPublishSection(b, &c);
  CheckCrossKeys(b, c);
  return c;
}

std::vector<KeySpec> TrainConfigSchema() {
  // data.stream's and train.publish's keys, and train.checkpoint_full_every, are bound only when
  // given (stream_section.cc, publish_section.cc, BindTrain): the schema is read from a config that
  // has them, so it lists them too.
  auto binder = ConfigBinder::FromYamlString(
      "data: {stream: {url: 'redis://127.0.0.1:1/schema', event_time_column: ts, event_time_unit: s}}\n"
      "train: {publish: {to: models}, checkpoint_full_every: 1}",
      "schema");
  BindTrainConfig(*binder);
  return binder->keys();
}

const char* DataSplitName(DataSplit split) {
  switch (split) {
    case DataSplit::kAuto: return "auto";
    case DataSplit::kShards: return "shards";
    case DataSplit::kBatches: return "batches";
  }
  return "?";
}

namespace {

Result<LoadedConfig> Load(ConfigBinder binder, const std::vector<std::string>& sets) {
  for (const auto& s : sets) RECTRAIN_RETURN_IF_ERROR(binder.ApplySet(s));
  LoadedConfig out;
  out.config = BindTrainConfig(binder);
  RECTRAIN_RETURN_IF_ERROR(binder.Finish());
  out.resolved_yaml = binder.ResolvedYaml();
  out.hash = HashBytes(out.resolved_yaml, 0);
  return out;
}

}  // namespace

Result<LoadedConfig> LoadTrainConfigFromString(std::string_view text, const std::string& source,
                                               const std::vector<std::string>& sets) {
  RECTRAIN_ASSIGN_OR_RETURN(ConfigBinder binder, ConfigBinder::FromYamlString(text, source));
  return Load(std::move(binder), sets);
}

Result<LoadedConfig> LoadTrainConfig(const std::string& path, const std::vector<std::string>& sets) {
  // FromYamlFile reads at most kMaxConfigBytes + 1 bytes, so /dev/zero or a FIFO is refused.
  RECTRAIN_ASSIGN_OR_RETURN(ConfigBinder binder, ConfigBinder::FromYamlFile(path));
  return Load(std::move(binder), sets);
}

}  // namespace rectrain::config

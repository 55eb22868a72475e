#include "rectrain/config/train_config.h"

#include <gtest/gtest.h>

#include "rectrain/kernels/gemm.h"

#include <tuple>

namespace rectrain::config {
namespace {

Result<LoadedConfig> Load(const std::string& text, std::vector<std::string> sets = {}) {
  return LoadTrainConfigFromString(text, "c.yaml", sets);
}

TEST(TrainConfig, DefaultsWithOnlyTrainFiles) {
  auto c = Load("data: {train: a.tsv}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  const TrainConfig& t = c->config;
  EXPECT_EQ(t.train_files, std::vector<std::string>{"a.tsv"});
  EXPECT_TRUE(t.valid_files.empty());
  EXPECT_EQ(t.threads, 2);
  EXPECT_EQ(t.read.batch_size, 4096);
  EXPECT_TRUE(t.read.shuffle);
  EXPECT_EQ(t.model.type, "deepfm");
  EXPECT_EQ(t.model.hidden, (std::vector<int>{400, 400, 400}));
  EXPECT_EQ(t.model.precision, nn::GemmPrecision::kFp32);
  EXPECT_EQ(t.embedding.optimizer.type, optim::SparseOptimizerType::kAdagrad);
  EXPECT_FLOAT_EQ(t.embedding_lr, 0.05f);
  EXPECT_EQ(t.optimizer.type, optim::DenseOptimizerType::kAdam);
  EXPECT_FLOAT_EQ(t.lr_schedule.lr, 1e-3f);
  EXPECT_EQ(t.data.schema.delimiter, '\t');
  EXPECT_EQ(t.train.epochs, 1);
  EXPECT_NE(c->hash, 0u);
  // The resolved YAML holds every key and binds again to the same hash.
  auto again = Load(c->resolved_yaml);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->resolved_yaml, c->resolved_yaml);
  EXPECT_EQ(again->hash, c->hash);
}

TEST(TrainConfig, ModelPrecision) {
  auto c = Load("data: {train: a.tsv}\nmodel: {precision: bf16}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->config.model.precision, nn::GemmPrecision::kBf16);
  auto bad = Load("data: {train: a.tsv}\nmodel: {precision: fp16}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("model.precision"), std::string::npos)
      << bad.status();
}

// auto resolves from the CPU: bf16 exactly where the bf16 GEMM runs natively (the bench specs
// use it so they run on AVX2-only machines too).
TEST(TrainConfig, ModelPrecisionAutoFollowsTheCpu) {
  auto c = Load("data: {train: a.tsv}\nmodel: {precision: auto}\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->config.model_precision_auto);
  EXPECT_EQ(c->config.model.precision, kernels::Bf16GemmAvailable() ? nn::GemmPrecision::kBf16
                                                                     : nn::GemmPrecision::kFp32);
  auto fp32 = Load("data: {train: a.tsv}\nmodel: {precision: fp32}\n");
  ASSERT_TRUE(fp32.ok());
  EXPECT_FALSE(fp32->config.model_precision_auto);
}

TEST(TrainConfig, ShuffleModesAndMemoryCache) {
  auto d = Load("data: {train: a.tsv}\n");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->config.epoch.shuffle, data::ShuffleMode::kBuffer);
  EXPECT_EQ(d->config.epoch.memory_cache, data::MemoryCacheMode::kAuto);
  EXPECT_EQ(d->config.epoch.memory_cache_bytes, 0);
  // true/false from older configs mean buffer/off.
  for (auto [text, mode, reader_shuffle] :
       {std::tuple{"true", data::ShuffleMode::kBuffer, true}, {"false", data::ShuffleMode::kOff, false},
        {"off", data::ShuffleMode::kOff, false}, {"buffer", data::ShuffleMode::kBuffer, true},
        {"global", data::ShuffleMode::kGlobal, false}}) {
    auto c = Load("data: {train: a.tsv}\n", {std::string("data.shuffle=") + text});
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->config.epoch.shuffle, mode) << text;
    EXPECT_EQ(c->config.read.shuffle, reader_shuffle) << text;
  }
  auto g = Load("data: {train: a.tsv, shuffle: global, shuffle_key: user_id, memory_cache: on, "
                "memory_cache_bytes: 2GiB}\n");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->config.epoch.shuffle_key, "user_id");
  EXPECT_EQ(g->config.epoch.memory_cache, data::MemoryCacheMode::kOn);
  EXPECT_EQ(g->config.epoch.memory_cache_bytes, int64_t{2} << 30);
  auto bad = Load("data: {train: a.tsv, shuffle: globl, memory_cache: maybe}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("data.shuffle: \"globl\" is not one of buffer, global, off, true, false; "
                                        "did you mean global?"),
            std::string::npos)
      << bad.status();
  EXPECT_NE(bad.status().message().find("data.memory_cache: \"maybe\" is not one of auto, on, off"),
            std::string::npos)
      << bad.status();
  auto key = Load("data: {train: a.tsv, shuffle_key: user_id}\n");
  ASSERT_FALSE(key.ok());
  EXPECT_NE(key.status().message().find("data.shuffle_key: needs data.shuffle: global (data.shuffle is buffer)"),
            std::string::npos)
      << key.status();
  auto off = Load("data: {train: a.tsv, shuffle: global, memory_cache: off}\n");
  ASSERT_FALSE(off.ok());
  EXPECT_NE(off.status().message().find("data.memory_cache: off contradicts data.shuffle: global"), std::string::npos)
      << off.status();
}

TEST(TrainConfig, SetOverridesAndSizes) {
  auto c = Load("data: {train: a.tsv}\nembedding: {memory_budget: 8GiB}\n",
                {"model.hidden=[256,128]", "optimizer.lr=0.002", "data.format=csv",
                 "data.dense=[x]", "data.header=true", "embedding.optimizer.lr=0.1"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->config.model.hidden, (std::vector<int>{256, 128}));
  EXPECT_FLOAT_EQ(c->config.lr_schedule.lr, 0.002f);
  EXPECT_EQ(c->config.data.schema.delimiter, ',');
  EXPECT_EQ(c->config.embedding.memory_budget_bytes, int64_t{8} << 30);
  EXPECT_FLOAT_EQ(c->config.SparseLrSchedule().lr, 0.1f);
}

TEST(TrainConfig, AllErrorsReportedTogether) {
  auto c = Load(
      "data: {train: a.tsv, batch_size: 0}\n"
      "model:\n  hiden: [1]\n  type: deepfn\n"
      "optimizer: {lr: -1}\n"
      "train: {epochs: two}\n",
      {"embedding.optimiser.lr=0.1"});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message(),
            "invalid configuration (6 errors):\n"
            "  model.hiden: unknown key; did you mean model.hidden? (c.yaml:3:3)\n"
            "  embedding.optimiser: unknown key; did you mean embedding.optimizer? "
            "(--set embedding.optimiser.lr=0.1)\n"
            "  data.batch_size: 0 is out of range [1, 1048576] (c.yaml:1:22)\n"
            "  model.type: \"deepfn\" is not one of lr, fm, wide_deep, deepfm, dcn_v2, xdeepfm, autoint, fwfm, dlrm, din, mmoe, mlp; did you "
            "mean deepfm? (c.yaml:4:3)\n"
            "  optimizer.lr: -1 is out of range (0, +inf) (c.yaml:5:13)\n"
            "  train.epochs: expected an integer, got \"two\" (c.yaml:6:9)");
}

TEST(TrainConfig, MultiTaskKeys) {
  auto ok = Load("data: {train: a.tsv}\nmodel: {type: mmoe, task_labels: [b], task_weights: [1, 0.5]}\n");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->config.task_labels, std::vector<std::string>{"b"});
  EXPECT_EQ(ok->config.task_weights, (std::vector<float>{1.0f, 0.5f}));
  auto msg = [](const std::string& text) {
    auto c = Load(text);
    return c.ok() ? std::string() : std::string(c.status().message());
  };
  EXPECT_NE(msg("data: {train: a.tsv}\nmodel: {type: mmoe, task_labels: [b], task_weights: [1, 1, 1]}\n")
                .find("model.task_weights: 3 weights for 2 tasks: one for the label, then one per model.task_labels entry"),
            std::string::npos);
  EXPECT_NE(msg("data: {train: a.tsv}\nmodel: {type: mmoe}\n")
                .find("model.task_labels: model.type mmoe needs at least one extra task"),
            std::string::npos);
  EXPECT_NE(msg("data: {train: a.tsv}\nmodel: {type: deepfm, task_labels: [b]}\n")
                .find("model.task_labels: extra task labels need model.type: mmoe"),
            std::string::npos);
}

TEST(TrainConfig, CrossKeyChecks) {
  auto c = Load("data: {valid: v.tsv}\neval: {gauc: true}\noptimizer: {decay: cosine}\n");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "invalid configuration (3 errors):\n"
            "  optimizer.decay_steps: must be > 0 when optimizer.decay is cosine\n"
            "  data.train: is required: a file, a glob or a list of them (e.g. --set "
            "data.train=train.tsv)\n"
            "  eval.gauc: needs data.group_key (the column that identifies a user or query) "
            "(c.yaml:2:8)");
}

// The file is read only up to the size limit (docs/config.md "Limits"): an endless one is refused.
TEST(TrainConfig, EndlessFileIsRefusedAtTheSizeLimit) {
  auto c = LoadTrainConfig("/dev/zero", {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("is more than a config may hold"), std::string::npos) << c.status();
}

TEST(TrainConfig, MissingFileIsNotFound) {
  auto c = LoadTrainConfig("/nonexistent/x.yaml", {});
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(c.status().message(), "cannot read config file /nonexistent/x.yaml");
}

}  // namespace
TEST(TrainConfig, DataPipelineKeys) {
  auto c = Load(
      "data:\n"
      "  train: [t1.tsv, t2.tsv]\n"
      "  valid: v.tsv\n"
      "  format: tsv\n"
      "  header: true\n"
      "  dense: [age]\n"
      "  sparse: [genres]\n"
      "  filters: [\"label not null\", \"country in [us, de]\"]\n"
      "  negative_downsampling: 0.25\n"
      "  cache_dir: /tmp/cc\n"
      "features:\n"
      "  transforms: {age: \"fill(30) | log1p | standardize\", genres: \"split('|', 5)\"}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  const data::DataConfig& d = c->config.data;
  EXPECT_EQ(d.schema.format, data::DataFormat::kTsv);
  EXPECT_EQ(d.filters, (std::vector<std::string>{"label not null", "country in [us, de]"}));
  EXPECT_DOUBLE_EQ(d.negative_downsampling, 0.25);
  EXPECT_EQ(d.cache_dir, "/tmp/cc");
  EXPECT_EQ(d.stats_files, (std::vector<std::string>{"t1.tsv", "t2.tsv"}));
  EXPECT_EQ(d.transforms.at("age"), "fill(30) | log1p | standardize");
  EXPECT_EQ(d.transforms.at("genres"), "split('|', 5)");
  auto again = Load(c->resolved_yaml);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->hash, c->hash);
}

TEST(TrainConfig, DataPipelineDefaults) {
  auto c = Load("data: {train: a.tsv}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->config.data.schema.format, data::DataFormat::kAuto);
  EXPECT_DOUBLE_EQ(c->config.data.negative_downsampling, 1.0);
  EXPECT_TRUE(c->config.data.filters.empty());
  EXPECT_TRUE(c->config.data.transforms.empty());
  EXPECT_EQ(c->config.data.cache_dir, "");
  EXPECT_EQ(c->config.data.stats_files, std::vector<std::string>{"a.tsv"});
}

TEST(TrainConfig, DataPipelineErrors) {
  auto c = Load(
      "data:\n"
      "  train: a.parquet\n"
      "  format: parket\n"
      "  dense: [a]\n"
      "  filters: [\"x maybe\"]\n"
      "  negative_downsampling: 0\n"
      "features:\n"
      "  transforms: {a: \"lg1p\"}\n");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "invalid configuration (4 errors):\n"
            "  data.format: \"parket\" is not one of auto, criteo, csv, tsv, parquet, libsvm, libffm, idx; did you mean "
            "parquet? (c.yaml:3:3)\n"
            "  data.negative_downsampling: 0 is out of range (0, 1] (c.yaml:6:3)\n"
            "  data.filters: [0] row filter \"x maybe\": expected \"COL not null\", \"COL in [a, "
            "b]\" or \"COL not in [a, b]\" (c.yaml:5:3)\n"
            "  features.transforms.a: unknown transform step \"lg1p\"; did you mean log1p? "
            "(c.yaml:8:16)");
  // auto on .parquet files needs feature names, like parquet.
  auto p = Load("data: {train: [a.parquet, b.parquet]}\n");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            "invalid configuration: data.format: parquet needs data.dense and/or data.sparse "
            "column names");
  EXPECT_TRUE(Load("data: {train: [a.parquet, b.tsv]}\n").ok());
}

TEST(TrainConfig, Checks) {
  auto c = Load(
      "data: {train: a.tsv}\n"
      "checks: {max_null_ratio: {I1: 0.5, \"*\": 0.9}, min_rows: 1000, label_rate: [0.01, 0.9]}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  const data::DataChecks& k = c->config.checks;
  EXPECT_EQ(k.min_rows, 1000);
  EXPECT_EQ(k.max_bad_rows, -1);
  EXPECT_EQ(k.max_null_ratio, (std::map<std::string, double>{{"*", 0.9}, {"I1", 0.5}}));
  EXPECT_TRUE(k.has_label_rate);
  EXPECT_DOUBLE_EQ(k.label_rate_min, 0.01);
  EXPECT_DOUBLE_EQ(k.label_rate_max, 0.9);
  auto again = Load(c->resolved_yaml);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->config.checks.max_null_ratio, k.max_null_ratio);
  EXPECT_FALSE(Load("data: {train: a.tsv}\n")->config.checks.has_label_rate);
  // The check before training: on by default, 200000 rows per split, at least one row, no
  // constant label.
  const data::DataChecks d = Load("data: {train: a.tsv}\n")->config.checks;
  EXPECT_TRUE(d.before_train);
  EXPECT_EQ(d.max_rows, 200000);
  EXPECT_EQ(d.min_rows, 1);
  EXPECT_FALSE(d.allow_constant_label);
  auto off = Load("data: {train: a.tsv}\nchecks: {before_train: false, max_rows: 0, min_rows: 5000000, "
                  "allow_constant_label: true}\n");
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->config.checks.before_train);
  EXPECT_EQ(off->config.checks.max_rows, 0);
  EXPECT_TRUE(off->config.checks.allow_constant_label);
  auto over = Load("data: {train: a.tsv}\nchecks: {min_rows: 300000}\n");
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().message(),
            "invalid configuration: checks.min_rows: 300000 exceeds checks.max_rows = 200000 (the rows "
            "profiled per split); raise checks.max_rows, or 0 to profile every row (c.yaml:2:10)");

  auto bad = Load("data: {train: a.tsv}\nchecks: {max_null_ratio: {I1: 2}, label_rate: [0.9, 0.1]}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "invalid configuration (2 errors):\n"
            "  checks.max_null_ratio.I1: expected a ratio in [0, 1], got \"2\" (c.yaml:2:27)\n"
            "  checks.label_rate: expected [min, max] with 0 <= min <= max <= 1 (c.yaml:2:35)");
}

TEST(TrainConfig, DistKeys) {
  auto d = Load("data: {train: a.tsv}\n");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->config.dist.mode, DistMode::kSync);
  EXPECT_EQ(d->config.dist.data_split, DataSplit::kAuto);
  EXPECT_EQ(d->config.ResolvedDataSplit(), DataSplit::kShards);
  EXPECT_DOUBLE_EQ(d->config.dist.timeout_s, 300.0);
  EXPECT_FALSE(d->config.dist.batch_per_rank);
  EXPECT_EQ(d->config.dist.lr_scaling, LrScaling::kNone);
  auto det = Load("deterministic: true\ndata: {train: a.tsv}\n");
  ASSERT_TRUE(det.ok());
  EXPECT_EQ(det->config.ResolvedDataSplit(), DataSplit::kBatches);
  auto set = Load("data: {train: a.tsv}\ndist: {data_split: batches, timeout_s: 5, batch: per_rank, lr_scaling: sqrt}\n");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->config.ResolvedDataSplit(), DataSplit::kBatches);
  EXPECT_DOUBLE_EQ(set->config.dist.timeout_s, 5.0);
  EXPECT_TRUE(set->config.dist.batch_per_rank);
  EXPECT_EQ(set->config.dist.lr_scaling, LrScaling::kSqrt);
  auto async = Load("data: {train: a.tsv}\ndist: {mode: async, servers: 2, staleness: 0}\n");
  ASSERT_TRUE(async.ok()) << async.status();
  EXPECT_EQ(async->config.dist.mode, DistMode::kAsync);
  EXPECT_EQ(async->config.dist.servers, 2);
  EXPECT_EQ(async->config.dist.staleness, 0);
  auto async_bad = Load("data: {train: a.tsv, valid: b.tsv}\ndist: {mode: async, data_split: batches}\n"
                        "train: {eval_every_steps: 10}\n");
  ASSERT_FALSE(async_bad.ok());
  EXPECT_NE(async_bad.status().message().find("dist.data_split: batches needs dist.mode sync"), std::string::npos);
  EXPECT_NE(async_bad.status().message().find("train.eval_every_steps: needs dist.mode sync"), std::string::npos);
  EXPECT_FALSE(Load("data: {train: a.tsv}\ndist: {timeout_s: 0}\n").ok());
}

TEST(TrainConfig, ClassifierKeys) {
  auto c = Load("data: {train: x-images-idx3-ubyte.gz, format: idx}\nmodel: {type: mlp, num_classes: 10}\n"
                "train: {accumulate_steps: 4}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->config.model.num_classes, 10);
  EXPECT_EQ(c->config.train.accumulate_steps, 4);
  EXPECT_EQ(c->config.train.early_stopping.metric, EarlyStoppingMetric::kAccuracy);  // auc does not apply
  auto wrong_type = Load("data: {train: a.tsv}\nmodel: {type: deepfm, num_classes: 3}\n");
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_NE(wrong_type.status().message().find("3 classes need model.type: mlp"), std::string::npos);
  auto acc_binary = Load("data: {train: a.tsv}\ntrain: {early_stopping: {metric: accuracy}}\n");
  ASSERT_FALSE(acc_binary.ok());
  EXPECT_NE(acc_binary.status().message().find("accuracy needs model.num_classes >= 2"), std::string::npos);
}

TEST(TrainConfig, StreamSection) {
  auto c = Load("data:\n  stream:\n    url: kafka://h1:9092,h2:9092/clicks\n    partitions: ['0', '2']\n"
                "    start: earliest\n    format: json\n    kafka: {security.protocol: plaintext}\n"
                "train: {max_rows: 1000, checkpoint_every_s: 30, online_window: 5000}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  const TrainConfig& t = c->config;
  ASSERT_TRUE(t.stream.has_value());
  EXPECT_EQ(t.stream->kind, stream::SourceKind::kKafka);
  EXPECT_EQ(t.stream->hosts, (std::vector<std::string>{"h1:9092", "h2:9092"}));
  EXPECT_EQ(t.stream->topic, "clicks");
  EXPECT_EQ(t.stream->partitions, (std::vector<std::string>{"0", "2"}));
  EXPECT_EQ(t.stream->start, stream::StartPosition::kEarliest);
  EXPECT_EQ(t.stream->format, stream::MessageFormat::kJson);
  EXPECT_EQ(t.stream->kafka.at("security.protocol"), "plaintext");
  EXPECT_EQ(t.stream->group, "rectrain");
  EXPECT_EQ(t.train.max_rows, 1000);
  EXPECT_EQ(t.train.checkpoint_every_s, 30);
  EXPECT_EQ(t.train.online_window, 5000);
  EXPECT_TRUE(t.train_files.empty());  // data.train is not needed with a stream
  auto again = Load(c->resolved_yaml);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->hash, c->hash);
  // A config without the section resolves without its keys.
  auto plain = Load("data: {train: a.tsv}\n");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->resolved_yaml.find("stream"), std::string::npos);
  EXPECT_FALSE(plain->config.stream.has_value());
}

TEST(TrainConfig, StreamSectionErrors) {
  auto c = Load("data:\n  stream:\n    url: http://x:1/y\n    start: newest\n"
                "    kafka: {a: b}\ntrain: {epochs: 3}\n");
  ASSERT_FALSE(c.ok());
  const std::string m(c.status().message());
  EXPECT_NE(m.find("data.stream.url: \"http://x:1/y\": unknown scheme"), std::string::npos) << m;
  EXPECT_NE(m.find("data.stream.start"), std::string::npos) << m;
  EXPECT_NE(m.find("train.epochs: does not apply to data.stream"), std::string::npos) << m;
  auto r = Load("data:\n  stream: {url: 'redis://h:1/k', kafka: {a: b}}\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("data.stream.kafka"), std::string::npos) << r.status();
  auto no_url = Load("data:\n  stream: {group: g}\n");
  ASSERT_FALSE(no_url.ok());
  EXPECT_NE(no_url.status().message().find("data.stream.url: is required"), std::string::npos) << no_url.status();
  auto window = Load("data: {train: a.tsv}\ntrain: {online_window: 10}\n");
  ASSERT_FALSE(window.ok());
  EXPECT_NE(window.status().message().find("applies to online runs only"), std::string::npos) << window.status();
}

TEST(TrainConfig, StreamEventTimeColumn) {
  auto c = Load("data:\n  format: tsv\n  columns: [label, a, ts]\n  dense: [a]\n"
                "  stream: {url: 'redis://h:1/k', event_time_column: ts, event_time_unit: ms}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->config.stream->event_time_column, "ts");
  EXPECT_EQ(c->config.stream->event_time_unit, stream::EventTimeUnit::kMilliseconds);
  auto seconds = Load("data:\n  stream: {url: 'redis://h:1/k', event_time_column: ts}\n");
  ASSERT_TRUE(seconds.ok()) << seconds.status();
  EXPECT_EQ(seconds->config.stream->event_time_unit, stream::EventTimeUnit::kSeconds);
  // Without the keys a stream config resolves (and hashes) as before they existed.
  auto plain = Load("data:\n  stream: {url: 'redis://h:1/k'}\n");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->resolved_yaml.find("event_time"), std::string::npos) << plain->resolved_yaml;
  EXPECT_TRUE(plain->config.stream->event_time_column.empty());
  auto error_of = [](const std::string& yaml) {
    auto r = Load(yaml);
    return r.ok() ? std::string("ok") : std::string(r.status().message());
  };
  EXPECT_NE(error_of("data:\n  stream: {url: 'redis://h:1/k', event_time_unit: ms}\n")
                .find("data.stream.event_time_unit: applies only with data.stream.event_time_column"),
            std::string::npos);
  EXPECT_NE(error_of("data:\n  stream: {url: 'redis://h:1/k', event_time_column: ts, event_time_unit: minutes}\n")
                .find("data.stream.event_time_unit"),
            std::string::npos);
  EXPECT_NE(error_of("data:\n  stream: {url: 'redis://h:1/k', event_time_column: ''}\n")
                .find("data.stream.event_time_column: must name a column"),
            std::string::npos);
  EXPECT_NE(error_of("data:\n  format: libsvm\n  stream: {url: 'redis://h:1/k', event_time_column: ts}\n")
                .find("data.stream.event_time_column: needs rows with named columns (data.format criteo, csv or tsv), not libsvm"),
            std::string::npos)
      << error_of("data:\n  format: libsvm\n  stream: {url: 'redis://h:1/k', event_time_column: ts}\n");
}

TEST(TrainConfig, PublishSection) {
  auto c = Load("data: {train: a.tsv}\ntrain:\n  publish: {to: models, every_s: 2, full_every: 0}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->config.train.publish.has_value());
  EXPECT_EQ(c->config.train.publish->to, "models");
  EXPECT_EQ(c->config.train.publish->every_s, 2);
  EXPECT_EQ(c->config.train.publish->full_every, 0);
  auto defaults = Load("data: {train: a.tsv}\ntrain: {publish: {to: models}}\n");
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->config.train.publish->every_s, 5);
  EXPECT_EQ(defaults->config.train.publish->full_every, 10);
  // Without the section: no publishing, and the resolved config (its hash) as before.
  auto plain = Load("data: {train: a.tsv}\n");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->config.train.publish.has_value());
  EXPECT_EQ(plain->resolved_yaml.find("publish"), std::string::npos);
}

TEST(TrainConfig, PublishSectionErrors) {
  auto no_dir = Load("data: {train: a.tsv}\ntrain: {publish: {every_s: 2}}\n");
  ASSERT_FALSE(no_dir.ok());
  EXPECT_NE(no_dir.status().message().find("train.publish.to: is required"), std::string::npos) << no_dir.status();
  auto s3 = Load("data: {train: a.tsv}\ntrain: {publish: {to: 's3://bucket/models'}}\n");
  ASSERT_TRUE(s3.ok()) << s3.status();
  EXPECT_EQ(s3->config.train.publish->to, "s3://bucket/models");
  auto gs = Load("data: {train: a.tsv}\ntrain: {publish: {to: 'gs://bucket/models'}}\n");
  ASSERT_FALSE(gs.ok());
  EXPECT_NE(gs.status().message().find("train.publish.to: 'gs://bucket/models' is neither a directory nor an s3:// prefix"),
            std::string::npos)
      << gs.status();
  auto zero = Load("data: {train: a.tsv}\ntrain: {publish: {to: m, every_s: 0}}\n");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("train.publish.every_s"), std::string::npos) << zero.status();
  auto async = Load("data: {train: a.tsv}\ndist: {mode: async}\ntrain: {publish: {to: m}}\n");
  ASSERT_FALSE(async.ok());
  EXPECT_NE(async.status().message().find("train.publish: needs dist.mode sync"), std::string::npos) << async.status();
  auto unknown = Load("data: {train: a.tsv}\ntrain: {publish: {to: m, every: 2}}\n");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("train.publish.every"), std::string::npos) << unknown.status();
}

}  // namespace rectrain::config

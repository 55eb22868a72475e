// The sample cache end to end: a cache gives the same rows as parsing, data.cache auto/build/off,
// the key changes with every setting and file that changes rows, shuffle/skip_rows contract,
// cache files as input (and the check that the config matches their rows).
#include "rectrain/data/cache.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <tuple>

#include <gtest/gtest.h>

#include "rectrain/data/generator.h"
#include "rectrain/data/internal/test_util.h"
#include "rectrain/data/profile.h"
#include "rectrain/io/file.h"

namespace rectrain::data {
namespace {

using test_util::ReadAll;
using test_util::Rows;
using test_util::TempDir;

// Criteo-shape rows (2,500) generated once per test.
std::string MakeCriteo(const TempDir& dir, int64_t rows = 2500) {
  GenerateConfig g;
  g.out = dir.Path("train.tsv");
  g.rows = rows;
  g.seed = 7;
  g.num_threads = 1;
  EXPECT_TRUE(GenerateDataset(g).ok());
  return g.out;
}

// CSV with a multi-valued field (split), a group key and a standardized dense feature.
std::string MakeCsv(const TempDir& dir) {
  std::string text = "label,age,genres,user,movie\n";
  for (int i = 0; i < 700; ++i) {
    text += std::to_string(i % 3 == 0 ? 1 : 0) + "," + (i % 11 == 0 ? "" : std::to_string(18 + i % 50)) + ",";
    for (int k = 0; k < i % 4; ++k) text += (k ? "|g" : "g") + std::to_string((i + k) % 9);
    text += ",u" + std::to_string(i % 37) + ",m" + std::to_string(i % 101) + "\n";
  }
  return dir.Write("ratings.csv", text);
}

DataConfig CsvConfig(const TempDir& dir, const std::string& file) {
  DataConfig c;
  c.files = {file};
  c.schema.format = DataFormat::kCsv;
  c.schema.delimiter = ',';
  c.schema.header = true;
  c.schema.dense = {"age"};
  c.schema.sparse = {"genres", "user", "movie"};
  c.schema.group_key = "user";
  c.transforms = {{"age", "fill(30) | standardize"}, {"genres", "split('|', 3)"}};
  c.cache_dir = dir.Path("cache");
  c.cache = CacheMode::kOff;
  return c;
}

void ExpectSameRows(const Rows& a, const Rows& b) {
  ASSERT_EQ(a.labels.size(), b.labels.size());
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(a.dense, b.dense);
  EXPECT_EQ(a.lists, b.lists);
  EXPECT_EQ(a.group, b.group);
}

ReadOptions Opts(int64_t batch = 300, int threads = 2) {
  ReadOptions o;
  o.batch_size = batch;
  o.num_threads = threads;
  return o;
}

TEST(SampleCache, CriteoCacheGivesTheParsedRowsInFileOrder) {
  TempDir dir;
  DataConfig c;
  c.files = {MakeCriteo(dir)};
  c.cache_dir = dir.Path("cache");
  c.cache = CacheMode::kOff;
  auto parsed = ReadAll(c, Opts());
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  CacheWriteOptions w;
  w.block_rows = 777;  // blocks and batches do not line up
  auto info = BuildCache(c, Opts(), w);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_TRUE(info->built);
  EXPECT_EQ(info->rows, 2500);
  EXPECT_EQ(info->blocks, 4);
  EXPECT_LT(info->file_bytes, info->raw_bytes);  // lz4 + dictionaries pay off on criteo ids
  c.cache = CacheMode::kAuto;
  auto reader = OpenBatchReader(c, Opts());
  ASSERT_TRUE(reader.ok());
  EXPECT_NE((*reader)->cache_note().find(info->path), std::string::npos);
  auto cached = ReadAll(c, Opts());
  ASSERT_TRUE(cached.ok()) << cached.status().ToString();
  ExpectSameRows(*parsed, *cached);
  EXPECT_EQ(cached->batch_sizes.front(), 300);
  EXPECT_EQ(cached->batch_sources.front(), info->path);
  EXPECT_EQ(cached->batch_first_lines[1], 301);  // 1-based row of the cache
  EXPECT_EQ(cached->stats.rows_read, 2500);
  EXPECT_GT(cached->stats.bytes_read, 0);
  // A second build finds it.
  auto again = BuildCache(c, Opts(), w);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->built);
  EXPECT_EQ(again->path, info->path);
}

TEST(SampleCache, MultiValuedGroupKeyAndStatsRoundTripWithEveryCodec) {
  TempDir dir;
  DataConfig c = CsvConfig(dir, MakeCsv(dir));
  auto parsed = ReadAll(c, Opts(64, 1));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  for (const char* codec : {"lz4", "zstd", "none"}) {
    CacheWriteOptions w;
    w.codec = codec;
    w.block_rows = 100;
    const std::string out = dir.Path(std::string("x_") + codec + ".rtc");
    auto info = BuildCache(c, Opts(), w, out);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    auto reader = OpenCacheReader({out}, Opts(64, 2));
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    Rows rows;
    while (true) {
      auto b = (*reader)->Next();
      ASSERT_TRUE(b.ok()) << b.status().ToString();
      if (!*b) break;
      for (int64_t r = 0; r < (*b)->size; ++r) {
        rows.labels.push_back((*b)->labels[r]);
        rows.dense.emplace_back((*b)->dense.begin() + r, (*b)->dense.begin() + r + 1);
        std::vector<std::vector<uint64_t>> lists;
        for (const SparseColumn& col : (*b)->sparse) {
          lists.emplace_back(col.ids.begin() + col.RowBegin(r), col.ids.begin() + col.RowEnd(r));
        }
        rows.lists.push_back(std::move(lists));
        rows.group.push_back((*b)->group_keys[r]);
      }
      (*reader)->Recycle(std::move(**b));
    }
    ExpectSameRows(*parsed, rows);
    EXPECT_EQ((*reader)->sparse_names(), (std::vector<std::string>{"genres", "user", "movie"}));
  }
}

TEST(SampleCache, ModesOffAutoBuild) {
  TempDir dir;
  DataConfig c;
  c.files = {MakeCriteo(dir, 500)};
  c.cache_dir = dir.Path("cache");
  c.cache = CacheMode::kAuto;
  auto r = OpenBatchReader(c, Opts());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->cache_note(), "");  // nothing built yet: parses
  EXPECT_FALSE(std::filesystem::exists(c.cache_dir));
  c.cache = CacheMode::kBuild;
  r = OpenBatchReader(c, Opts());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NE((*r)->cache_note().find("built now"), std::string::npos);
  c.cache = CacheMode::kAuto;
  r = OpenBatchReader(c, Opts());
  ASSERT_TRUE(r.ok());
  EXPECT_NE((*r)->cache_note().find("key matches"), std::string::npos);
  c.cache = CacheMode::kOff;
  r = OpenBatchReader(c, Opts());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->cache_note(), "");
}

TEST(SampleCache, EverySettingThatChangesRowsChangesTheKey) {
  TempDir dir;
  DataConfig base = CsvConfig(dir, MakeCsv(dir));
  const std::string stats_file = dir.Write("stats.csv", "label,age,genres,user,movie\n1,40,g1,u1,m1\n");
  auto k0 = CacheKey(base);
  ASSERT_TRUE(k0.ok()) << k0.status().ToString();
  std::vector<std::pair<std::string, DataConfig>> variants;
  auto add = [&](const std::string& what, auto edit) {
    DataConfig c = base;
    edit(c);
    variants.emplace_back(what, c);
  };
  add("transform", [](DataConfig& c) { c.transforms["age"] = "fill(31) | standardize"; });
  add("new transform", [](DataConfig& c) { c.transforms["movie"] = "hash(10)"; });
  add("hash_seed", [](DataConfig& c) { c.hash_seed = 1; });
  add("filters", [](DataConfig& c) { c.filters = {"age not null"}; });
  add("downsampling", [](DataConfig& c) { c.negative_downsampling = 0.5; });
  add("dense fill", [](DataConfig& c) { c.dense.fill = 1; });
  add("dense log1p", [](DataConfig& c) { c.dense.log1p = false; });
  add("clip", [](DataConfig& c) { c.dense.clip_max = 5; });
  add("max_bad_rows", [](DataConfig& c) { c.max_bad_rows = 3; });
  add("schema", [](DataConfig& c) { c.schema.sparse = {"genres", "user"}; });
  add("group key", [](DataConfig& c) { c.schema.group_key = ""; });
  add("stats files", [&](DataConfig& c) { c.stats_files = {stats_file}; });
  for (const auto& [what, c] : variants) {
    auto k = CacheKey(c);
    ASSERT_TRUE(k.ok()) << what;
    EXPECT_NE(*k, *k0) << what;
    EXPECT_NE(CachePath(c, *k), CachePath(base, *k0)) << what;
  }
  // Settings that do not change rows keep the key.
  DataConfig same = base;
  same.rejects_file = dir.Path("rejects.txt");
  same.cache = CacheMode::kBuild;
  EXPECT_EQ(*CacheKey(same), *k0);
}

TEST(SampleCache, ChangedInputFileIsNeverReadStale) {
  TempDir dir;
  DataConfig c;
  c.files = {MakeCriteo(dir, 300)};
  c.cache_dir = dir.Path("cache");
  c.cache = CacheMode::kBuild;
  auto first = ReadAll(c, Opts());
  ASSERT_TRUE(first.ok());
  // Same size, different content (one label flipped in the middle of the file).
  std::string text = io::ReadFileToString(c.files[0]).value();
  const size_t nl = text.find('\n', text.size() / 2);
  text[nl + 1] = text[nl + 1] == '0' ? '1' : '0';
  std::ofstream(c.files[0], std::ios::binary | std::ios::trunc) << text;
  c.cache = CacheMode::kAuto;
  auto found = FindCache(c);
  ASSERT_TRUE(found.ok());
  EXPECT_FALSE(found->has_value());
  auto r = OpenBatchReader(c, Opts());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->cache_note(), "");
  auto second = ReadAll(c, Opts());
  ASSERT_TRUE(second.ok());
  EXPECT_NE(first->labels, second->labels);
}

TEST(SampleCache, ShuffleIsDeterministicPerSeedAndEpochAndSkipRowsResumes) {
  TempDir dir;
  DataConfig c;
  c.files = {MakeCriteo(dir)};
  c.cache_dir = dir.Path("cache");
  CacheWriteOptions w;
  w.block_rows = 256;
  const std::string path = dir.Path("t.rtc");
  ASSERT_TRUE(BuildCache(c, Opts(), w, path).ok());
  c.files = {path};
  c.schema.format = DataFormat::kAuto;  // *.rtc
  ReadOptions o = Opts(128, 2);
  o.shuffle = true;
  o.shuffle_buffer_rows = 500;
  o.seed = 3;
  auto a = ReadAll(c, o);
  auto b = ReadAll(c, o);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status().ToString();
  ExpectSameRows(*a, *b);
  EXPECT_EQ(a->batch_sources.front(), "");
  o.epoch = 1;
  auto e1 = ReadAll(c, o);
  ASSERT_TRUE(e1.ok());
  EXPECT_NE(a->labels.size(), 0u);
  EXPECT_NE(a->dense, e1->dense);
  // Same multiset of rows as the file-order pass.
  ReadOptions plain = Opts(128, 2);
  auto ordered = ReadAll(c, plain);
  ASSERT_TRUE(ordered.ok());
  auto key = [](const Rows& r) {
    std::vector<std::vector<uint64_t>> v = r.ids;
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(key(*a), key(*ordered));
  EXPECT_NE(a->ids, ordered->ids);
  // skip_rows: the rest of the same pass.
  o.epoch = 0;
  o.skip_rows = 1000;
  auto resumed = ReadAll(c, o);
  ASSERT_TRUE(resumed.ok());
  ASSERT_EQ(resumed->ids.size(), 1500u);
  EXPECT_TRUE(std::equal(resumed->ids.begin(), resumed->ids.end(), a->ids.begin() + 1000));
  EXPECT_EQ(resumed->stats.rows_skipped, 1000);
  plain.skip_rows = 2400;
  auto tail = ReadAll(c, plain);
  ASSERT_TRUE(tail.ok());
  ASSERT_EQ(tail->ids.size(), 100u);
  EXPECT_TRUE(std::equal(tail->ids.begin(), tail->ids.end(), ordered->ids.begin() + 2400));
}

TEST(SampleCache, BuffersReusedAcrossReadersOfOtherSchemasGiveTheSameRows) {
  // Decoded blocks, batches and the shuffle buffer go back to the readers' pool when a reader
  // ends and the next reader of that pool starts with them: whatever the last reader left in them
  // (another schema, a pass abandoned half way, multi-valued rows) must not leak into the next pass.
  TempDir dir;
  DataConfig crit;
  crit.files = {MakeCriteo(dir)};
  crit.cache_dir = dir.Path("cache");
  crit.cache = CacheMode::kOff;
  CacheWriteOptions w;
  w.block_rows = 300;
  const std::string crit_path = dir.Path("c.rtc");
  ASSERT_TRUE(BuildCache(crit, Opts(), w, crit_path).ok());
  DataConfig csv = CsvConfig(dir, MakeCsv(dir));
  auto csv_parsed = ReadAll(csv, Opts(64, 1));
  ASSERT_TRUE(csv_parsed.ok()) << csv_parsed.status().ToString();
  w.block_rows = 100;
  const std::string csv_path = dir.Path("m.rtc");
  ASSERT_TRUE(BuildCache(csv, Opts(), w, csv_path).ok());
  crit.files = {crit_path};
  csv.files = {csv_path};
  ReadOptions shuffled = Opts(128, 2);
  shuffled.shuffle = true;
  shuffled.shuffle_buffer_rows = 1000;
  shuffled.seed = 5;
  auto crit1 = ReadAll(crit, shuffled);  // each reader with fresh buffers of its own
  auto csv1 = ReadAll(csv, shuffled);
  ASSERT_TRUE(crit1.ok() && csv1.ok()) << crit1.status().ToString() << csv1.status().ToString();
  ReadOptions pooled = shuffled;
  pooled.buffer_pool = MakeReaderBufferPool();
  ASSERT_TRUE(ReadAll(crit, pooled).ok());
  {
    // Abandoned after one batch: its buffers return to the pool mid-pass.
    auto r = OpenCacheReader({crit_path}, pooled);
    ASSERT_TRUE(r.ok());
    auto b = (*r)->Next();
    ASSERT_TRUE(b.ok() && b->has_value());
  }
  auto csv2 = ReadAll(csv, pooled);
  auto crit2 = ReadAll(crit, pooled);
  ASSERT_TRUE(crit2.ok() && csv2.ok());
  ExpectSameRows(*crit1, *crit2);
  ExpectSameRows(*csv1, *csv2);
  // The shuffled csv rows are the parsed rows, multi-valued lists and group keys included.
  auto sorted = [](const Rows& r) {
    std::vector<std::tuple<float, std::vector<float>, std::vector<std::vector<uint64_t>>, uint64_t>> v;
    for (size_t i = 0; i < r.labels.size(); ++i) v.emplace_back(r.labels[i], r.dense[i], r.lists[i], r.group[i]);
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(sorted(*csv2), sorted(*csv_parsed));
  // And file order after all that: the parsed rows in order.
  ReadOptions ordered = Opts(64, 2);
  ordered.buffer_pool = pooled.buffer_pool;
  auto csv_ordered = ReadAll(csv, ordered);
  ASSERT_TRUE(csv_ordered.ok());
  ExpectSameRows(*csv_parsed, *csv_ordered);
}

TEST(SampleCache, ProfileOfACacheFileDescribesItsTransformedRows) {
  // The data check before `rectrain train` (and `rectrain data stats|check`) profiles *.rtc input
  // from its decoded rows, not as text.
  TempDir dir;
  DataConfig csv = CsvConfig(dir, MakeCsv(dir));
  CacheWriteOptions w;
  w.block_rows = 100;
  const std::string path = dir.Path("m.rtc");
  ASSERT_TRUE(BuildCache(csv, Opts(), w, path).ok());
  auto p = ProfileFiles({path}, csv.schema, csv.transforms, 2);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->rows, 700);
  EXPECT_FALSE(p->truncated);
  ASSERT_EQ(p->files.size(), 1u);
  EXPECT_EQ(p->files[0].rows, 700);
  EXPECT_EQ(p->files[0].bad_rows, 0);
  EXPECT_EQ(p->label, "label");
  EXPECT_EQ(p->labeled_rows, 700);
  EXPECT_EQ(p->positive_rows, 234);  // i % 3 == 0
  std::vector<std::string> names;
  for (const ColumnProfile& c : p->columns) names.push_back(c.name);
  ASSERT_EQ(names, (std::vector<std::string>{"label", "age", "genres", "user", "movie"}));
  EXPECT_EQ(p->columns[1].non_null, 700);  // filled by fill(30)
  EXPECT_EQ(p->columns[1].numeric, 700);
  EXPECT_NEAR(p->columns[1].Mean(), 0.0, 1e-3);  // standardized
  // An empty genre list (i % 4 == 0) was given the field's missing-value id by the transform:
  // transformed rows have no nulls (documented; null ratios are checked on the source text).
  EXPECT_EQ(p->columns[2].non_null, 700);
  EXPECT_NEAR(p->columns[3].distinct, 37, 2);
  EXPECT_NEAR(p->columns[4].distinct, 101, 4);
  EXPECT_EQ(p->columns[3].numeric, 0);  // ids are not numbers
  DataChecks checks;
  checks.min_rows = 1;
  checks.has_label_rate = true;
  checks.label_rate_min = 0.4;
  const auto v = CheckProfile(*p, checks);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_NE(v[0].find("label rate: 0.3343 is outside checks.label_rate [0.4, 1]"), std::string::npos) << v[0];
  // max_rows: exactly the cap, truncated (also when the cap falls on a batch boundary).
  for (int64_t cap : {250, 700, 699}) {
    auto t = ProfileFiles({path}, csv.schema, csv.transforms, 1, {}, cap);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->rows, std::min<int64_t>(cap, 700)) << cap;
    EXPECT_EQ(t->truncated, cap < 700) << cap;
  }
  // The same label rate as the text it was built from (criteo: 13 dense + 26 sparse columns).
  DataConfig crit;
  crit.files = {MakeCriteo(dir)};
  crit.cache = CacheMode::kOff;
  const std::string crit_path = dir.Path("c.rtc");
  ASSERT_TRUE(BuildCache(crit, Opts(), w, crit_path).ok());
  auto text = ProfileFiles(crit.files, crit.schema, crit.transforms, 1);
  auto cached = ProfileFiles({crit_path}, crit.schema, crit.transforms, 1);
  ASSERT_TRUE(text.ok() && cached.ok()) << cached.status().ToString();
  EXPECT_EQ(cached->rows, text->rows);
  EXPECT_EQ(cached->positive_rows, text->positive_rows);
  EXPECT_EQ(cached->columns.size(), 40u);
  EXPECT_EQ(CheckProfile(*cached, DataChecks{}).size(), 0u);
  // A damaged cache is an error naming the file, not a garbage profile.
  const std::string bad = dir.Write("bad.rtc", "RTC\x01 not a cache");
  auto err = ProfileFiles({bad}, crit.schema, crit.transforms, 1);
  ASSERT_FALSE(err.ok());
  EXPECT_NE(err.status().ToString().find("bad.rtc"), std::string::npos) << err.status().ToString();
}

TEST(SampleCache, CacheFileAsInputMustMatchTheConfigsRowSettings) {
  TempDir dir;
  DataConfig c = CsvConfig(dir, MakeCsv(dir));
  c.negative_downsampling = 0.5;
  const std::string path = dir.Path("ratings.rtc");
  auto info = BuildCache(c, Opts(), {}, path);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_GT(info->rows_downsampled, 0);
  DataConfig in = c;
  in.files = {path};
  in.schema = SchemaConfig{};
  in.schema.format = DataFormat::kCache;
  auto rows = ReadAll(in, Opts());
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ(static_cast<int64_t>(rows->labels.size()), info->rows);
  EXPECT_EQ(rows->stats.rows_downsampled, info->rows_downsampled);  // the build's count is reported
  in.schema.format = DataFormat::kCriteo;  // *.rtc files are caches whatever data.format says
  in.cache = CacheMode::kOff;
  auto as_criteo = ReadAll(in, Opts());
  ASSERT_TRUE(as_criteo.ok()) << as_criteo.status().ToString();
  EXPECT_EQ(as_criteo->labels, rows->labels);
  in.negative_downsampling = 1.0;  // e.g. evaluation: every row wanted
  auto bad = OpenBatchReader(in, Opts());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("negative_downsampling"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find(path), std::string::npos);
  in.negative_downsampling = 0.5;
  in.transforms.erase("age");
  bad = OpenBatchReader(in, Opts());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("transform.age"), std::string::npos) << bad.status().message();
}

TEST(SampleCache, BadOptionsAndMissingFilesAreClearErrors) {
  TempDir dir;
  DataConfig c;
  c.files = {MakeCriteo(dir, 100)};
  c.cache_dir = dir.Path("cache");
  CacheWriteOptions w;
  w.codec = "brotli";
  auto r = BuildCache(c, Opts(), w);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("use lz4"), std::string::npos);
  w.codec = "lz4";
  w.block_rows = 0;
  EXPECT_FALSE(BuildCache(c, Opts(), w).ok());
  c.files = {dir.Path("missing.tsv")};
  r = BuildCache(c, Opts(), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  auto o = OpenCacheReader({dir.Path("missing.rtc")}, Opts());
  EXPECT_FALSE(o.ok());
  const std::string not_cache = dir.Write("x.rtc", std::string(100, 'x'));
  o = OpenCacheReader({not_cache}, Opts());
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(o.status().message().find("not a rectrain sample cache"), std::string::npos);
}

}  // namespace
}  // namespace rectrain::data

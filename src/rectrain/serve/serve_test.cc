// serve/: row encodings, table files and their memory-mapped reader, manifests and package
// verification, and the /v1/predict request parser (with a fuzz loop).
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include "rectrain/base/random.h"
#include "rectrain/serve/mapped_table.h"
#include "rectrain/serve/model_package.h"
#include "rectrain/serve/service.h"

namespace rectrain::serve {
namespace {
namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() : path_(fs::path(::testing::TempDir()) / ("rectrain_serve_" + std::to_string(::getpid()) + "_" +
                                                       ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string Path(const std::string& name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

TEST(RowEncodingTest, Fp32IsExactFp16AndInt8WithinTheirBounds) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0, 0.05f);
  const int dim = 33;
  std::vector<float> w(dim), back(dim);
  for (float& x : w) x = normal(rng);
  w[0] = 0;
  w[1] = 1e-7f;  // an fp16 subnormal
  w[2] = -0.25f;
  std::vector<uint8_t> row(static_cast<size_t>(RowBytes(RowType::kInt8, dim)));
  for (RowType t : {RowType::kFp32, RowType::kFp16, RowType::kInt8}) {
    row.assign(static_cast<size_t>(RowBytes(t, dim)), 0);
    EncodeRow(t, w.data(), dim, row.data());
    DecodeRow(t, row.data(), dim, back.data());
    float amax = 0;
    for (float x : w) amax = std::max(amax, std::fabs(x));
    for (int i = 0; i < dim; ++i) {
      if (t == RowType::kFp32) {
        EXPECT_EQ(back[i], w[i]);
      } else if (t == RowType::kFp16) {  // relative 2^-11 for normal values, absolute 2^-25 below 2^-14
        EXPECT_LE(std::fabs(back[i] - w[i]), std::max(std::fabs(w[i]) * 4.9e-4f, 3e-8f)) << i;
      } else {
        EXPECT_LE(std::fabs(back[i] - w[i]), amax / 127 / 2 * 1.0001f) << i;
      }
    }
    EXPECT_EQ(back[2], -0.25f) << RowTypeName(t);  // exactly representable in every type (int8: -0.25 = amax?)
  }
  // fp16 edge values.
  const float edges[] = {1.0f, -2.0f, 65504.0f, 6.1035156e-5f /* 2^-14 */, 5.9604645e-8f /* 2^-24 */};
  for (float e : edges) {
    EncodeRow(RowType::kFp16, &e, 1, row.data());
    float d;
    DecodeRow(RowType::kFp16, row.data(), 1, &d);
    EXPECT_EQ(d, e);
  }
  const float big = 1e6f;
  EncodeRow(RowType::kFp16, &big, 1, row.data());
  float d;
  DecodeRow(RowType::kFp16, row.data(), 1, &d);
  EXPECT_TRUE(std::isinf(d));
  EXPECT_FALSE(ParseRowType("bf16").ok());
}

PackageTable Describe(int dim, RowType t, int64_t rows) {
  PackageTable pt;
  pt.name = "emb";
  pt.dim = dim;
  pt.type = t;
  pt.rows = rows;
  return pt;
}

TEST(MappedTableTest, LooksUpEveryRowAndUnknownIdsReadTheOovRow) {
  TempDir dir;
  const int dim = 4;
  const int n = 5000;
  std::vector<uint64_t> ids;
  std::vector<float> w;
  for (int i = 0; i < n; ++i) {
    ids.push_back(Mix64(static_cast<uint64_t>(i) + 17));
    for (int k = 0; k < dim; ++k) w.push_back(static_cast<float>(i * dim + k));
  }
  const std::vector<float> oov = {-1, -2, -3, -4};
  const std::string path = dir.Path("emb.rows");
  ASSERT_TRUE(WriteTableFile(path, dim, RowType::kFp32, ids, w, oov).ok());
  embedding::EmbeddingTableConfig cfg;
  cfg.name = "emb";
  cfg.dim = dim;
  auto t = MappedTable::Open(path, Describe(dim, RowType::kFp32, n + 1), cfg);
  ASSERT_TRUE(t.ok()) << t.status();
  std::vector<uint64_t> q = {ids[0], 12345, ids[4999], ids[77]};
  std::vector<float> out(q.size() * dim);
  ASSERT_TRUE((*t)->Read(q, out, {}).ok());
  EXPECT_EQ(std::vector<float>(out.begin(), out.begin() + 4), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ(std::vector<float>(out.begin() + 4, out.begin() + 8), oov);
  EXPECT_EQ(out[8], 4999.0f * dim);
  EXPECT_EQ(out[12], 77.0f * dim);
  EXPECT_EQ((*t)->Stats().lookups, 4);
  EXPECT_EQ((*t)->Stats().oov_lookups, 1);
  EXPECT_EQ((*t)->Stats().rows, n);
  for (int i = 0; i < n; ++i) ASSERT_EQ((*t)->RowOf(ids[i]), static_cast<uint64_t>(i + 1));
  // Duplicate ids are refused by the writer.
  std::vector<uint64_t> dup = {1, 1};
  EXPECT_EQ(WriteTableFile(dir.Path("dup.rows"), 1, RowType::kFp32, dup, std::vector<float>{1, 2}, std::vector<float>{0}).code(),
            StatusCode::kInvalidArgument);
}

TEST(MappedTableTest, BadFilesAreDataLoss) {
  TempDir dir;
  const std::string path = dir.Path("emb.rows");
  std::vector<uint64_t> ids = {5, 9};
  ASSERT_TRUE(WriteTableFile(path, 2, RowType::kFp16, ids, std::vector<float>{1, 2, 3, 4}, std::vector<float>{0, 0}).ok());
  embedding::EmbeddingTableConfig cfg;
  cfg.name = "emb";
  cfg.dim = 2;
  EXPECT_TRUE(MappedTable::Open(path, Describe(2, RowType::kFp16, 3), cfg).ok());
  // The manifest disagrees: rows, type.
  EXPECT_EQ(MappedTable::Open(path, Describe(2, RowType::kFp16, 4), cfg).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(MappedTable::Open(path, Describe(2, RowType::kFp32, 3), cfg).status().code(), StatusCode::kDataLoss);
  // The model's dim differs from the file's.
  cfg.dim = 3;
  EXPECT_EQ(MappedTable::Open(path, Describe(2, RowType::kFp16, 3), cfg).status().code(), StatusCode::kInvalidArgument);
  cfg.dim = 2;
  // Truncated, bad magic, not a file.
  fs::resize_file(path, fs::file_size(path) - 2);
  auto trunc = MappedTable::Open(path, Describe(2, RowType::kFp16, 3), cfg);
  EXPECT_EQ(trunc.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(trunc.status().message().find("emb.rows"), std::string::npos);
  std::ofstream(dir.Path("junk.rows")) << std::string(200, 'x');
  auto junk = MappedTable::Open(dir.Path("junk.rows"), Describe(2, RowType::kFp16, 3), cfg);
  EXPECT_NE(junk.status().message().find("bad magic"), std::string::npos) << junk.status();
  EXPECT_EQ(MappedTable::Open(dir.Path("none.rows"), Describe(2, RowType::kFp16, 3), cfg).status().code(), StatusCode::kNotFound);
}

Manifest SampleManifest() {
  Manifest m;
  m.version = 7;
  m.created = "2026-12-02T00:00:00Z";
  m.model_type = "deepfm";
  m.trained_steps = 99;
  m.source_run = "runs/x";
  m.min_count = 2;
  m.layout = {.format = data::DataFormat::kCsv, .header = {"label", "a", "b"}, .stats = {{0.1, 3.0000000000000004, {1, 2.5}}}};
  m.dense_names = {"a"};
  m.sparse_names = {"b"};
  m.task_names = {"label"};
  m.feature_columns = {0};
  m.negative_downsampling = 0.25;
  m.config = {"config.yaml", 3, 0x1234};
  m.dense = {"dense.bin", 4, 0xffffffffffffffffULL};
  PackageTable t = Describe(8, RowType::kInt8, 10);
  t.dropped = 4;
  t.file = {"tables/emb.rows", 5, 42};
  m.tables = {t};
  return m;
}

TEST(ManifestTest, RoundTripsExactly) {
  const Manifest m = SampleManifest();
  const std::string text = ManifestToJson(m);
  auto back = ManifestFromJson(text, "m.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(ManifestToJson(*back), text);
  EXPECT_EQ(back->layout.stats[0].std, 3.0000000000000004);  // doubles round-trip bit for bit
  EXPECT_EQ(back->dense.xxh64, 0xffffffffffffffffULL);
  EXPECT_EQ(ManifestFromJson("{}", "m.json").status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(ManifestFromJson("not json", "m.json").status().code(), StatusCode::kDataLoss);
  std::string newer = text;
  newer.replace(newer.find("\"format_version\": 1"), 19, "\"format_version\": 9");
  auto refused = ManifestFromJson(newer, "m.json");
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("format version 9"), std::string::npos);
}

TEST(ManifestTest, VerifyFindsMissingTruncatedAndCorruptFiles) {
  TempDir dir;
  fs::create_directories(dir.Path("tables"));
  std::ofstream(dir.Path("config.yaml")) << "a: 1\n";
  std::ofstream(dir.Path("dense.bin")) << "0123456789";
  std::ofstream(dir.Path("tables/emb.rows")) << "rows";
  Manifest m = SampleManifest();
  m.config = *DescribeFile(dir.str(), "config.yaml");
  m.dense = *DescribeFile(dir.str(), "dense.bin");
  m.tables[0].file = *DescribeFile(dir.str(), "tables/emb.rows");
  EXPECT_TRUE(VerifyPackage(dir.str(), m).ok());
  std::ofstream(dir.Path("dense.bin")) << "0123456780";  // same size, one byte differs
  Status corrupt = VerifyPackage(dir.str(), m);
  EXPECT_EQ(corrupt.code(), StatusCode::kDataLoss);
  EXPECT_NE(corrupt.message().find("dense.bin has checksum"), std::string::npos) << corrupt;
  EXPECT_TRUE(VerifyPackage(dir.str(), m, /*checksums=*/false).ok());
  std::ofstream(dir.Path("dense.bin")) << "012";
  EXPECT_NE(VerifyPackage(dir.str(), m, false).message().find("has 3 bytes but the manifest says 10"), std::string::npos);
  fs::remove(dir.Path("tables/emb.rows"));
  std::ofstream(dir.Path("dense.bin")) << "0123456789";
  EXPECT_NE(VerifyPackage(dir.str(), m).message().find("emb.rows is missing"), std::string::npos);
  m.tables[0].file.path = "../escape";
  EXPECT_NE(VerifyPackage(dir.str(), m).message().find("outside the model directory"), std::string::npos);
  EXPECT_EQ(ReadManifest(dir.str()).status().code(), StatusCode::kNotFound);
}

// ---- /v1/predict bodies ----

class RequestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data::DataConfig c;
    c.schema.format = data::DataFormat::kCsv;
    c.schema.dense = {"age"};
    c.schema.sparse = {"city"};
    c.schema.columns = {"label", "age", "city"};
    auto p = data::RowParser::Create(c, {.format = data::DataFormat::kCsv, .header = {}, .stats = {}});
    ASSERT_TRUE(p.ok()) << p.status();
    parser_ = std::move(p).value();
  }
  Status Parse(const std::string& body, int64_t max_rows = 100) { return ParsePredictRequest(body, *parser_, max_rows).status(); }
  std::unique_ptr<data::RowParser> parser_;
};

TEST_F(RequestTest, RowsByNameAndLines) {
  auto lines = ParsePredictRequest(R"({"rows": [{"age": 31, "city": "paris"}, {"age": 2.5}, {"city": null}]})", *parser_, 10);
  ASSERT_TRUE(lines.ok()) << lines.status();
  EXPECT_EQ(*lines, (std::vector<std::string>{"0,31,paris", "0,2.5,", "0,,"}));
  lines = ParsePredictRequest(R"({"lines": ["1,3,rome"]})", *parser_, 10);
  ASSERT_TRUE(lines.ok());
  EXPECT_EQ(*lines, (std::vector<std::string>{"1,3,rome"}));
  // Escapes, whitespace and an empty list, on the fast path and the general one alike.
  for (bool general : {false, true}) {
    lines = ParsePredictRequest(" {\n\"lines\" :[ \"a\\tb\\\\c\\\"d\\/\" , \"\\u0041x\"]}\n", *parser_, 10, general);
    ASSERT_TRUE(lines.ok()) << lines.status();
    EXPECT_EQ(*lines, (std::vector<std::string>{"a\tb\\c\"d/", "Ax"}));
    lines = ParsePredictRequest(R"({"lines": []})", *parser_, 10, general);
    ASSERT_TRUE(lines.ok());
    EXPECT_TRUE(lines->empty());
  }
  EXPECT_TRUE(ParsePredictRequest(R"({"rows": []})", *parser_, 10).ok());
}

TEST_F(RequestTest, BadBodiesNameWhatIsWrong) {
  struct Case {
    const char* body;
    const char* message;
  };
  const Case cases[] = {
      {"{\"rows\": [", "not valid JSON"},
      {"[1, 2]", "must be a JSON object"},
      {"{}", "exactly one of"},
      {R"({"rows": [], "lines": []})", "exactly one of"},
      {R"({"rows": [], "extra": 1})", "unknown key \"extra\""},
      {R"({"rows": {"age": 1}})", "\"rows\" must be an array"},
      {R"({"rows": [3]})", "rows[0]: expected an object"},
      {R"({"rows": [{"age": 1}, {"height": 1}]})", "rows[1]: unknown field \"height\"; the model's columns are label, age, city"},
      {R"({"rows": [{"age": [1]}]})", "rows[0].age: expected a string, a number or null, got an array"},
      {R"({"rows": [{"age": true}]})", "rows[0].age: expected a string, a number or null, got a boolean"},
      {R"({"rows": [{"city": "a\nb"}]})", "rows[0]: field 'city' contains a line break"},
      {R"({"lines": [1]})", "lines[0]: expected a string"},
      {"{\"rows\": [[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}", "nests deeper than 16"},
  };
  for (const Case& c : cases) {
    Status s = Parse(c.body);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.body;
    EXPECT_NE(s.message().find(c.message), std::string::npos) << c.body << " -> " << s;
  }
  Status big = Parse(R"({"lines": ["a", "b", "c"]})", 2);
  EXPECT_EQ(big.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(big.message().find("at most 2 per request"), std::string::npos);
}

TEST_F(RequestTest, FuzzedBodiesNeverCrashAndFailCleanly) {
  const std::string seeds[] = {R"({"rows": [{"age": 31, "city": "paris"}, {"age": null}]})",
                               R"({"lines": ["1,3,rome", "0,,x\t\"y\"", "1,2,\u00e9"]})"};
  std::mt19937_64 rng(11);
  const std::string alphabet = "{}[]\",:\\ 0123456789.-eE+truefalsnul\n\tabc\x01\xff";
  int ok = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string body = seeds[iter % 2];
    const int edits = 1 + static_cast<int>(rng() % 6);
    for (int e = 0; e < edits; ++e) {
      const size_t at = body.empty() ? 0 : rng() % body.size();
      switch (rng() % 3) {
        case 0: if (!body.empty()) body.erase(at, 1 + rng() % 3); break;
        case 1: body.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
        default: if (!body.empty()) body[at] = alphabet[rng() % alphabet.size()]; break;
      }
    }
    auto r = ParsePredictRequest(body, *parser_, 100);
    // The fast path for {"lines": [...]} agrees with the JSON parser on every body.
    auto general = ParsePredictRequest(body, *parser_, 100, /*general=*/true);
    ASSERT_EQ(r.ok(), general.ok()) << body;
    if (r.ok()) {
      ASSERT_EQ(*r, *general) << body;
    } else {
      ASSERT_EQ(r.status(), general.status()) << body;
    }
    if (r.ok()) {
      ++ok;
      for (const std::string& line : *r) {  // whatever it accepted parses or fails cleanly
        data::Batch b;
        Status s = parser_->ParseLines(std::vector<std::string>{line}, "fuzz", &b);
        EXPECT_TRUE(s.ok() || s.code() == StatusCode::kInvalidArgument) << s;
      }
    } else {
      const StatusCode c = r.status().code();
      ASSERT_TRUE(c == StatusCode::kInvalidArgument || c == StatusCode::kResourceExhausted) << body << " -> " << r.status();
    }
  }
  EXPECT_GT(ok, 100);  // the loop also exercises accepted bodies
}

}  // namespace
}  // namespace rectrain::serve

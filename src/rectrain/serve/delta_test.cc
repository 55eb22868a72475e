// serve/: the serving delta format (golden files tests/golden/serving/, regenerated only with a
// format version bump: RECTRAIN_UPDATE_GOLDEN=1 ./serve_test) and a served table with deltas
// applied reading as a table written with the final rows.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include <gtest/gtest.h>

#include "rectrain/io/file.h"
#include "rectrain/serve/delta.h"
#include "rectrain/serve/served_table.h"

#ifndef RECTRAIN_GOLDEN_DIR
#error "RECTRAIN_GOLDEN_DIR must point at tests/golden"
#endif

namespace rectrain::serve {
namespace {
namespace fs = std::filesystem;

fs::path TestDir() {
  const fs::path p = fs::path(::testing::TempDir()) / ("rectrain_delta_" + std::to_string(::getpid()) + "_" +
                                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

std::vector<uint8_t> Fp32Rows(std::initializer_list<float> w) {
  std::vector<uint8_t> out(w.size() * 4);
  std::memcpy(out.data(), std::data(w), out.size());
  return out;
}

TableDelta GoldenDelta() {
  TableDelta d;
  d.dim = 2;
  d.type = RowType::kFp32;
  d.oov = Fp32Rows({0.5f, -0.5f});
  d.ids = {3, 10, uint64_t{1} << 40};
  d.rows = Fp32Rows({1, 2, 3, 4, 5.25f, -6});
  d.removed = {7, 99};
  return d;
}

DeltaManifest GoldenManifest() {
  DeltaManifest m;
  m.version = 8;
  m.base_version = 7;
  m.base_manifest_xxh64 = 0x0123456789abcdefULL;
  m.created = "2026-12-05T02:00:00Z";
  m.trained_steps = 1234;
  m.source_run = "runs/online";
  m.dense = {.path = "dense.bin", .bytes = 100, .xxh64 = 42};
  m.tables.push_back({.name = "emb", .dim = 2, .type = RowType::kFp32, .changed = 3, .removed = 2, .rows = 9,
                      .file = {.path = "tables/emb.delta", .bytes = 112, .xxh64 = 0xfedcba9876543210ULL}});
  return m;
}

void CheckGolden(const std::string& name, const std::string& bytes) {
  const std::string path = std::string(RECTRAIN_GOLDEN_DIR) + "/serving/" + name;
  if (std::getenv("RECTRAIN_UPDATE_GOLDEN") != nullptr) {
    ASSERT_TRUE(io::WriteFileAtomically(path, bytes).ok());
  }
  auto golden = io::ReadFileToString(path);
  ASSERT_TRUE(golden.ok()) << golden.status();
  EXPECT_EQ(*golden, bytes) << name << " differs from the golden file (a format change needs a version bump)";
}

TEST(DeltaFormat, TableFileMatchesTheGoldenBytesAndReadsBack) {
  const fs::path dir = TestDir();
  const TableDelta d = GoldenDelta();
  const std::string path = (dir / "emb.delta").string();
  ASSERT_TRUE(WriteTableDeltaFile(path, d).ok());
  auto bytes = io::ReadFileToString(path);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(bytes->size(), 48u + 8 + 3 * (8 + 8) + 2 * 8);
  CheckGolden("delta_v1.delta", *bytes);
  const DeltaTableEntry e = GoldenManifest().tables[0];
  auto back = ReadTableDeltaFile(std::string(RECTRAIN_GOLDEN_DIR) + "/serving/delta_v1.delta", e);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->oov, d.oov);
  EXPECT_EQ(back->ids, d.ids);
  EXPECT_EQ(back->rows, d.rows);
  EXPECT_EQ(back->removed, d.removed);
  fs::remove_all(dir);
}

TEST(DeltaFormat, ManifestMatchesTheGoldenTextAndRoundTrips) {
  const std::string json = DeltaManifestToJson(GoldenManifest());
  CheckGolden("delta_manifest_v1.json", json);
  EXPECT_TRUE(IsDeltaManifest(json));
  EXPECT_FALSE(IsDeltaManifest("{\"format\": \"rectrain-serving-model\"}"));
  EXPECT_FALSE(IsDeltaManifest("not json"));
  auto m = DeltaManifestFromJson(json, "m.json");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(DeltaManifestToJson(*m), json);
  EXPECT_EQ(m->base_manifest_xxh64, 0x0123456789abcdefULL);
  std::string newer = json;
  newer.replace(newer.find("\"format_version\": 1"), 19, "\"format_version\": 2");
  EXPECT_EQ(DeltaManifestFromJson(newer, "m.json").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(DeltaManifestFromJson("{\"format\": \"rectrain-serving-model\"}", "m.json").status().code(), StatusCode::kDataLoss);
}

// A version published by an online trainer says what it was trained on (the optional "events").
TEST(DeltaFormat, EventsMatchTheGoldenTextAndRoundTripInBothManifests) {
  DeltaManifest m = GoldenManifest();
  m.events = {.newest_ms = 1796436000123, .stream_position = R"({"partitions":{"events":"1796436000123-4"},"source":"redis","topic":"events"})"};
  const std::string json = DeltaManifestToJson(m);
  CheckGolden("delta_manifest_v1_events.json", json);
  auto back = DeltaManifestFromJson(json, "m.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->events.newest_ms, 1796436000123);
  EXPECT_EQ(DeltaManifestToJson(*back), json);
  EXPECT_TRUE(DeltaManifestFromJson(DeltaManifestToJson(GoldenManifest()), "m.json")->events.empty());
  Manifest full;
  full.events = m.events;
  auto full_back = ManifestFromJson(ManifestToJson(full), "manifest.json");
  ASSERT_TRUE(full_back.ok()) << full_back.status();
  EXPECT_EQ(full_back->events.newest_ms, m.events.newest_ms);
  EXPECT_EQ(ManifestToJson(*full_back), ManifestToJson(full));
  EXPECT_EQ(ManifestToJson(Manifest{}).find("events"), std::string::npos);
}

TEST(DeltaFormat, BadTableFilesAreDataLoss) {
  const fs::path dir = TestDir();
  const DeltaTableEntry e = GoldenManifest().tables[0];
  const std::string path = (dir / "emb.delta").string();
  ASSERT_TRUE(WriteTableDeltaFile(path, GoldenDelta()).ok());
  const std::string good = *io::ReadFileToString(path);
  auto read_with = [&](const std::string& bytes) {
    EXPECT_TRUE(io::WriteFileAtomically(path, bytes).ok());
    return ReadTableDeltaFile(path, e).status();
  };
  EXPECT_EQ(read_with(good.substr(0, good.size() - 1)).code(), StatusCode::kDataLoss);  // truncated
  std::string magic = good;
  magic[0] = 'X';
  EXPECT_EQ(read_with(magic).code(), StatusCode::kDataLoss);
  std::string unordered = good;  // swap the first two changed ids: no longer ascending
  std::swap_ranges(unordered.begin() + 56, unordered.begin() + 64, unordered.begin() + 64);
  const Status s = read_with(unordered);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("ascending"), std::string::npos) << s;
  DeltaTableEntry other = e;
  other.changed = 4;
  EXPECT_TRUE(io::WriteFileAtomically(path, good).ok());
  EXPECT_EQ(ReadTableDeltaFile(path, other).status().code(), StatusCode::kDataLoss);
  fs::remove_all(dir);
}

// Rows of a table as a map, read through `t` for the ids of `probe`.
std::map<uint64_t, std::vector<float>> ReadAll(ServedTable& t, const std::vector<uint64_t>& probe) {
  std::vector<float> out(probe.size() * 2);
  EXPECT_TRUE(t.Read(probe, out, {}).ok());
  std::map<uint64_t, std::vector<float>> m;
  for (size_t i = 0; i < probe.size(); ++i) m[probe[i]] = {out[2 * i], out[2 * i + 1]};
  return m;
}

TEST(ServedTableTest, DeltasReadAsATableWrittenWithTheFinalRows) {
  const fs::path dir = TestDir();
  embedding::EmbeddingTableConfig cfg;
  cfg.name = "emb";
  cfg.dim = 2;
  auto open = [&](const std::string& name, std::vector<uint64_t> ids, std::vector<float> w, std::vector<float> oov) {
    const std::string path = (dir / name).string();
    EXPECT_TRUE(WriteTableFile(path, 2, RowType::kFp32, ids, w, oov).ok());
    PackageTable pt{.name = "emb", .dim = 2, .type = RowType::kFp32, .rows = static_cast<int64_t>(ids.size()) + 1};
    auto t = MappedTable::Open(path, pt, cfg);
    EXPECT_TRUE(t.ok()) << t.status();
    return std::make_unique<ServedTable>(std::shared_ptr<MappedTable>(std::move(t).value()));
  };
  auto base = open("base.rows", {1, 2, 3}, {1, 1, 2, 2, 3, 3}, {0, 0});
  TableDelta d1{.dim = 2, .type = RowType::kFp32, .oov = Fp32Rows({-1, -1}), .ids = {2, 5},
                .rows = Fp32Rows({20, 20, 50, 50}), .removed = {3, 4}};  // 4 has no row: nothing to remove
  auto v1 = base->WithDelta(d1);
  ASSERT_TRUE(v1.ok()) << v1.status();
  TableDelta d2{.dim = 2, .type = RowType::kFp32, .oov = Fp32Rows({-2, -2}), .ids = {3, 5},
                .rows = Fp32Rows({30, 30, 55, 55}), .removed = {1}};
  auto v2 = (*v1)->WithDelta(d2);
  ASSERT_TRUE(v2.ok()) << v2.status();
  const std::vector<uint64_t> probe = {1, 2, 3, 4, 5, 6};
  auto want1 = open("v1.rows", {1, 2, 5}, {1, 1, 20, 20, 50, 50}, {-1, -1});
  auto want2 = open("v2.rows", {2, 3, 5}, {20, 20, 30, 30, 55, 55}, {-2, -2});
  EXPECT_EQ(ReadAll(**v1, probe), ReadAll(*want1, probe));
  EXPECT_EQ(ReadAll(**v2, probe), ReadAll(*want2, probe));
  EXPECT_EQ(ReadAll(*base, probe), ReadAll(*open("again.rows", {1, 2, 3}, {1, 1, 2, 2, 3, 3}, {0, 0}), probe))
      << "applying a delta changed the table it was applied to";
  EXPECT_EQ((*v1)->rows(), 4);
  EXPECT_EQ((*v2)->rows(), 4);
  EXPECT_EQ((*v2)->Stats().oov_lookups, 3);  // 1, 4 and 6 in the one Read above
  std::map<uint64_t, float> listed;
  (*v2)->ForEachRow([&](uint64_t id, const uint8_t* row) {
    float w;
    std::memcpy(&w, row, 4);
    listed[id] = w;
  });
  EXPECT_EQ(listed, (std::map<uint64_t, float>{{2, 20}, {3, 30}, {5, 55}}));
  TableDelta wrong = d2;
  wrong.dim = 3;
  EXPECT_EQ((*v2)->WithDelta(wrong).status().code(), StatusCode::kInvalidArgument);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace rectrain::serve

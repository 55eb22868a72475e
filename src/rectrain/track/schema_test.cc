// Schema golden test: a fresh database must have exactly the DDL in testdata/schema_v1.sql
// (regenerate with RECTRAIN_UPDATE_GOLDEN=1 after adding a migration, and add the new golden
// file next to the old ones). Also checks version bookkeeping and refusal of newer/foreign files.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "rectrain/track/schema.h"
#include "rectrain/track/tracking_store.h"

namespace rectrain::track {
namespace {

namespace fs = std::filesystem;

class SchemaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("rectrain_schema_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "t.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `sql` on a raw connection and returns the rows as "a|b\n" text.
  std::string Query(const std::string& sql) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    std::string out;
    char* err = nullptr;
    int rc = sqlite3_exec(
        db, sql.c_str(),
        [](void* ctx, int n, char** vals, char**) {
          auto* o = static_cast<std::string*>(ctx);
          for (int i = 0; i < n; ++i) *o += (i ? "|" : "") + std::string(vals[i] ? vals[i] : "NULL");
          *o += "\n";
          return 0;
        },
        &out, &err);
    EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
    return out;
  }

  fs::path dir_;
  std::string path_;
};

TEST_F(SchemaTest, FreshDatabaseMatchesGolden) {
  ASSERT_TRUE(TrackingStore::Open(path_).ok());
  std::string ddl = Query(
      "SELECT sql || ';' FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE "
      "'sqlite_%' ORDER BY type DESC, name");
  // ctest sets RECTRAIN_SOURCE_DIR; __FILE__ is relative when ccache rewrites paths (CCACHE_BASEDIR).
  const char* source_env = std::getenv("RECTRAIN_SOURCE_DIR");
  fs::path golden = (source_env != nullptr ? fs::path(source_env) / "src/rectrain/track"
                                           : fs::path(__FILE__).parent_path()) /
                    "testdata" / "schema_v1.sql";
  if (std::getenv("RECTRAIN_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden) << ddl;
  }
  std::ifstream in(golden);
  ASSERT_TRUE(in.good()) << golden;
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(ddl, want.str());
}

TEST_F(SchemaTest, VersionIsRecordedOnce) {
  for (int i = 0; i < 2; ++i) {
    auto store = TrackingStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_EQ(*(*store)->SchemaVersion(), kSchemaVersion);
  }
  EXPECT_EQ(Query("SELECT version, description FROM schema_migrations"),
            "1|initial schema: runs, tags, params, data files, metrics, final metrics, "
            "artifacts\n");
  EXPECT_EQ(Query("PRAGMA user_version"), "1\n");
  EXPECT_EQ(Query("PRAGMA journal_mode"), "wal\n");
  EXPECT_EQ(Migrations().size(), static_cast<size_t>(kSchemaVersion));
}

TEST_F(SchemaTest, NewerSchemaIsRefused) {
  ASSERT_TRUE(TrackingStore::Open(path_).ok());
  Query("INSERT INTO schema_migrations VALUES (7, 'from the future', 0)");
  EXPECT_EQ(TrackingStore::Open(path_).status(),
            FailedPreconditionError("opening tracking database " + path_ +
                                    ": tracking database " + path_ +
                                    " has schema version 7, newer than 1 which this build "
                                    "supports; upgrade rectrain"));
}

TEST_F(SchemaTest, ForeignFileIsDataLoss) {
  std::ofstream(path_) << "this is not a database, it is a text file of more than a few bytes "
                          "so that sqlite reads a header and finds it wrong...................";
  auto st = TrackingStore::Open(path_).status();
  EXPECT_EQ(st.code(), StatusCode::kDataLoss) << st;
}

TEST_F(SchemaTest, MissingDirectoryIsNotFound) {
  auto st = TrackingStore::Open((dir_ / "no" / "such" / "dir.db").string()).status();
  EXPECT_EQ(st.code(), StatusCode::kNotFound) << st;
}

}  // namespace
}  // namespace rectrain::track

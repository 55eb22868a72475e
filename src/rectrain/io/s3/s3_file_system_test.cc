// The S3 file system against a real S3-compatible server (npm s3rver on a free loopback port),
// with fixtures written and results checked by an independent client (Debian's boto3), and
// faults injected by a proxy in between (tests/s3/).
#include "rectrain/io/s3/s3_file_system.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/s3/s3_test_env.h"

namespace rectrain::io::s3 {
namespace {

using ::rectrain::testing::Boto;
using ::rectrain::testing::FaultProxy;
using ::rectrain::testing::S3Server;

// One s3rver for the suite (starting node takes seconds); each test uses its own key prefix.
class S3FsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new std::filesystem::path(std::filesystem::path(::testing::TempDir()) /
                                      ("s3_fs_test_" + std::to_string(::getpid())));
    std::filesystem::remove_all(*root_);
    server_ = new S3Server((*root_ / "server").string(), {"data"});
  }
  static void TearDownTestSuite() {
    delete server_;
    std::filesystem::remove_all(*root_);
    delete root_;
  }
  void SetUp() override {
    ASSERT_EQ(server_->error(), "");
    dir_ = *root_ / ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir_);
    Use(server_->endpoint());
  }
  void TearDown() override { RegisterFileSystem("s3", S3FileSystem::Default()); }
  // Points "s3://" at `endpoint` with short backoffs and timeouts (the tests' retries take ms).
  void Use(const std::string& endpoint, int attempts = 6, const std::string& ca_bundle = "") {
    S3Config c;
    c.endpoint = endpoint;
    c.ca_bundle = ca_bundle;
    c.credentials = {"S3RVER", "S3RVER", ""};
    c.credentials_source = "test";
    c.max_attempts = attempts;
    c.retry_base_ms = 5;
    c.retry_max_ms = 50;
    c.stall_timeout_ms = 1000;
    S3FileSystemOptions o;
    o.part_bytes = 5 << 20;  // S3's smallest part, so that multipart runs on small files
    auto fs = std::make_unique<S3FileSystem>(c, o);
    RegisterFileSystem("s3", fs.get());
    old_.push_back(std::move(fs_));
    fs_ = std::move(fs);
  }
  std::string Local(const std::string& name, const std::string& content) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }
  static std::string Pattern(int64_t n, uint32_t seed) {
    std::string s(static_cast<size_t>(n), '\0');
    std::mt19937 rng(seed);
    for (char& c : s) c = static_cast<char>('a' + rng() % 26);
    return s;
  }
  void Put(const std::string& key, const std::string& content) {
    auto [rc, out] = Boto(server_->endpoint(), "put data " + key + " " + Local("fixture", content));
    ASSERT_EQ(rc, 0) << out;
  }

  static std::filesystem::path* root_;
  static S3Server* server_;
  std::filesystem::path dir_;
  std::unique_ptr<S3FileSystem> fs_;
  std::vector<std::unique_ptr<S3FileSystem>> old_;  // files opened through them may still be live
};

std::filesystem::path* S3FsTest::root_ = nullptr;
S3Server* S3FsTest::server_ = nullptr;

TEST_F(S3FsTest, ReadsWhatBotoWroteInRangesPrefetchedAndInParallelParts) {
  const std::string big = Pattern(12 << 20, 1);
  Put("dir/big.bin", big);
  Put("dir/small.tsv", "1\t2\n");
  auto f = RandomAccessFile::Open("s3://data/dir/big.bin");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ((*f)->size(), static_cast<int64_t>(big.size()));
  EXPECT_TRUE((*f)->remote());
  std::string buf(3 << 20, '\0');
  ASSERT_EQ(*(*f)->ReadAt(10, 100, buf.data()), 100);  // from the head read at open
  EXPECT_EQ(buf.substr(0, 100), big.substr(10, 100));
  EXPECT_EQ((*f)->waits(), 0);
  (*f)->Prefetch(5 << 20, 3 << 20);
  ASSERT_EQ(*(*f)->ReadAt(5 << 20, 3 << 20, buf.data()), 3 << 20);
  EXPECT_EQ(buf, big.substr(5 << 20, 3 << 20));
  std::string all(big.size() + 10, '\0');
  ASSERT_EQ(*(*f)->ReadAt(0, static_cast<int64_t>(all.size()), all.data()), static_cast<int64_t>(big.size()));
  EXPECT_EQ(all.substr(0, big.size()), big);  // 3 parallel parts
  EXPECT_EQ(*(*f)->ReadAt(static_cast<int64_t>(big.size()), 10, all.data()), 0);
  EXPECT_EQ(*ReadFileToString("s3://data/dir/small.tsv"), "1\t2\n");

  Put("empty", "");
  auto e = RandomAccessFile::Open("s3://data/empty");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ((*e)->size(), 0);

  EXPECT_EQ(RandomAccessFile::Open("s3://data/dir/nope").status().message(), "no such file: s3://data/dir/nope");
  EXPECT_EQ(RandomAccessFile::Open("s3://data/dir").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(RandomAccessFile::Open("s3://nobucket/x").status().code(), StatusCode::kNotFound);
}

TEST_F(S3FsTest, AnObjectReplacedDuringAReadIsDataLoss) {
  Put("v.bin", Pattern(1 << 20, 2));
  auto f = RandomAccessFile::Open("s3://data/v.bin");
  ASSERT_TRUE(f.ok());
  Put("v.bin", Pattern(1 << 20, 3));
  std::string buf(1000, '\0');
  auto r = (*f)->ReadAt(500000, 1000, buf.data());
  ASSERT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status();
  EXPECT_NE(r.status().message().find("s3://data/v.bin"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("changed while it was read"), std::string::npos) << r.status();
}

TEST_F(S3FsTest, WritesSinglePutAndMultipartThatBotoReadsBack) {
  FaultProxy proxy(server_->endpoint(), "", (dir_ / "proxy.log").string());  // records the requests
  ASSERT_EQ(proxy.error(), "");
  Use(proxy.endpoint());
  const std::string small = "hello", big = Pattern(11 << 20, 4);
  ASSERT_TRUE(WriteFileAtomically("s3://data/out/small.txt", small).ok());
  {
    auto w = AtomicFileWriter::Create("s3://data/out/big.bin");
    ASSERT_TRUE(w.ok());
    for (size_t off = 0; off < big.size(); off += 1 << 20) ASSERT_TRUE((*w)->Append(std::string_view(big).substr(off, 1 << 20)).ok());
    auto listed = nlohmann::json::parse(Boto(server_->endpoint(), "list data out/").second);
    EXPECT_EQ(listed.size(), 1u) << "the multipart object must not be visible before Commit";
    ASSERT_TRUE((*w)->Commit().ok());
  }
  auto [rc, got] = Boto(server_->endpoint(), "get data out/big.bin " + (dir_ / "big.copy").string());
  ASSERT_EQ(rc, 0) << got;
  std::ifstream in(dir_ / "big.copy", std::ios::binary);
  EXPECT_TRUE(std::string((std::istreambuf_iterator<char>(in)), {}) == big);
  EXPECT_EQ(Boto(server_->endpoint(), "md5 data out/small.txt").second, "5d41402abc4b2a76b9719d911017c592\n");
  {
    auto w = AtomicFileWriter::Create("s3://data/out/abandoned.bin");
    ASSERT_TRUE((*w)->Append(big).ok());  // two parts uploaded, never completed
  }
  int aborts = 0;  // s3rver answers 405 to the abort; the request is what matters here
  for (const std::string& line : proxy.LogLines()) {
    auto j = nlohmann::json::parse(line);
    aborts += j["method"] == "DELETE" && j["path"].get<std::string>().find("abandoned.bin?uploadId=") != std::string::npos;
  }
  EXPECT_EQ(aborts, 1) << "the abandoned multipart upload was not aborted";
  auto listed = nlohmann::json::parse(Boto(server_->endpoint(), "list data out/").second);
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0][0], "out/big.bin");
  EXPECT_EQ(listed[1][0], "out/small.txt");
}

// The connection breaks while the answer to CompleteMultipartUpload comes back, after the server
// made the object: the retries fail (s3rver: 500, the upload is gone; S3: 404 NoSuchUpload), and
// the writer, finding the object whole (HEAD: its size and MD5), commits instead of failing.
TEST_F(S3FsTest, ACompletedUploadWhoseAnswerWasLostCommits) {
  FaultProxy proxy(server_->endpoint(), "drop@4", (dir_ / "proxy.log").string());
  ASSERT_EQ(proxy.error(), "");
  Use(proxy.endpoint());
  const std::string big = Pattern(6 << 20, 5);  // two parts of the 5 MiB set by Use()
  ASSERT_TRUE(CopyFile(Local("lost.bin", big), "s3://data/lost/lost.bin").ok()) << "see " << dir_ / "proxy.log";
  std::string log, dropped;
  for (const std::string& line : proxy.LogLines()) {
    auto j = nlohmann::json::parse(line);
    log += line + "\n";
    if (j["fault"] == "drop") dropped = j["method"].get<std::string>() + " " + j["path"].get<std::string>();
  }
  EXPECT_NE(dropped.find("POST /data/lost/lost.bin?uploadId="), std::string::npos) << log;
  auto [rc, got] = Boto(server_->endpoint(), "get data lost/lost.bin " + (dir_ / "lost.copy").string());
  ASSERT_EQ(rc, 0) << got;
  std::ifstream in(dir_ / "lost.copy", std::ios::binary);
  EXPECT_TRUE(std::string((std::istreambuf_iterator<char>(in)), {}) == big);
}

TEST_F(S3FsTest, ListsGlobsAndPrefixesAcrossPages) {
  auto [rc, out] = Boto(server_->endpoint(), "put-many data many/part- 1100 " + Local("row", "1\t2\n"));
  ASSERT_EQ(rc, 0) << out;
  Put("many/sub/x.tsv", "x");
  Put("many/readme", "r");
  auto all = ExpandPaths({"s3://data/many/"});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size(), 1102u);  // two ListObjectsV2 pages of 1000
  EXPECT_EQ(all->front(), "s3://data/many/part-00000");
  auto parts = ExpandPaths({"s3://data/many/part-*"});
  ASSERT_TRUE(parts.ok()) << parts.status();
  EXPECT_EQ(parts->size(), 1100u);
  auto deep = ExpandPaths({"s3://data/many/*/x.tsv"});
  ASSERT_TRUE(deep.ok()) << deep.status();
  EXPECT_EQ(*deep, std::vector<std::string>{"s3://data/many/sub/x.tsv"});
  EXPECT_EQ(ExpandPaths({"s3://data/many/s*"}).status().code(), StatusCode::kInvalidArgument);  // a directory
  EXPECT_EQ(ExpandPaths({"s3://data/none/"}).status().code(), StatusCode::kNotFound);
  auto page = fs_->client().List("data", "many/part-000", "", 7);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->size(), 100u);  // 15 pages of 7
  auto dir = fs_->List("s3://data/many", false);
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(dir->back().name, "sub");
  EXPECT_TRUE(dir->back().is_dir);
  auto fp1 = Fingerprint("s3://data/many/readme");
  ASSERT_TRUE(fp1.ok()) << fp1.status();
  Put("many/readme", "changed");
  EXPECT_NE(Fingerprint("s3://data/many/readme")->ToString(), fp1->ToString());
  ASSERT_TRUE(fs_->RemoveAll("s3://data/many/sub").ok());
  EXPECT_EQ(ExpandPaths({"s3://data/many/*/x.tsv"}).status().code(), StatusCode::kNotFound);
}

TEST_F(S3FsTest, RetriesFaultsAndResumesRangedReads) {
  const std::string big = Pattern(3 << 20, 5);
  Put("f.bin", big);
  FaultProxy proxy(server_->endpoint(), "503@2,slowdown@3,drop@4,stall@6,down@8,503%5", (dir_ / "proxy.log").string(), 2);
  ASSERT_EQ(proxy.error(), "");
  Use(proxy.endpoint());
  std::string got(big.size(), '\0');
  for (int round = 0; round < 3; ++round) {
    auto f = RandomAccessFile::Open("s3://data/f.bin");
    ASSERT_TRUE(f.ok()) << f.status();
    ASSERT_EQ(*(*f)->ReadAt(1 << 20, 2 << 20, got.data()), 2 << 20);
    EXPECT_TRUE(got.substr(0, 2 << 20) == big.substr(1 << 20, 2 << 20));
  }
  const RemoteIoStats stats = fs_->io_stats();
  EXPECT_GE(stats.retries, 6);
  EXPECT_GE(stats.retry_reasons.at("SlowDown"), 1);
  EXPECT_GE(stats.retry_reasons.at("HTTP 503"), 1);
  EXPECT_GE(stats.retry_reasons.at("connection reset") + stats.retry_reasons.count("short body"), 1);
  EXPECT_NE(stats.ToString().find("retries"), std::string::npos);
  // A stalled body was cut by the stall timeout (1 s here) and resumed: the log shows the next
  // GET asking only for the bytes still missing.
  bool resumed = false;
  for (const std::string& line : proxy.LogLines()) resumed |= line.find("\"stall\"") != std::string::npos;
  EXPECT_TRUE(resumed);
}

TEST_F(S3FsTest, AfterTheRetryBudgetTheErrorNamesObjectOperationAndStatus) {
  Put("f.bin", "x");
  FaultProxy proxy(server_->endpoint(), "503%1", (dir_ / "proxy.log").string());
  ASSERT_EQ(proxy.error(), "");
  Use(proxy.endpoint(), 3);
  auto f = RandomAccessFile::Open("s3://data/f.bin");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kUnavailable);
  const std::string& m = f.status().message();
  EXPECT_NE(m.find("s3://data/f.bin: GET bytes 0-65535 failed after 3 attempts"), std::string::npos) << m;
  EXPECT_NE(m.find("HTTP 503 ServiceUnavailable"), std::string::npos) << m;
  server_->Kill();
  Use(server_->endpoint(), 2);
  auto down = RandomAccessFile::Open("s3://data/f.bin");
  EXPECT_NE(down.status().message().find("connection refused"), std::string::npos) << down.status();
  ASSERT_EQ(server_->Start(), "");
}

TEST_F(S3FsTest, CopyTreeUploadsTheManifestLastAndDownloadsBack) {
  std::filesystem::create_directories(dir_ / "model/tables");
  Local("model/manifest.json", "{}");
  Local("model/tables/a.bin", Pattern(6 << 20, 6));
  Local("model/dense.bin", "d");
  FaultProxy proxy(server_->endpoint(), "", (dir_ / "proxy.log").string());
  Use(proxy.endpoint());
  ASSERT_TRUE(CopyTree((dir_ / "model").string(), "s3://data/models/7", "manifest.json").ok());
  std::string last_put;
  for (const std::string& line : proxy.LogLines()) {
    auto j = nlohmann::json::parse(line);
    if (j["method"] == "PUT" || j["method"] == "POST") last_put = j["path"];
  }
  EXPECT_NE(last_put.find("models/7/manifest.json"), std::string::npos) << last_put;
  ASSERT_TRUE(CopyTree("s3://data/models/7", (dir_ / "back").string()).ok());
  std::ifstream in(dir_ / "back/tables/a.bin", std::ios::binary);
  EXPECT_TRUE(std::string((std::istreambuf_iterator<char>(in)), {}) == Pattern(6 << 20, 6));
}

// HTTPS is verified: a self-signed certificate fails (not retried) until AWS_CA_BUNDLE (here
// S3Config::ca_bundle) names it.
TEST_F(S3FsTest, HttpsVerifiesTheServerCertificate) {
  Put("tls.txt", "over tls");
  const std::string cert = (dir_ / "cert.pem").string(), key = (dir_ / "key.pem").string();
  const std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext "
                          "subjectAltName=IP:127.0.0.1 -keyout " + key + " -out " + cert + " 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  FaultProxy proxy(server_->endpoint(), "", (dir_ / "proxy.log").string(), 3, {cert, key});
  ASSERT_EQ(proxy.error(), "");
  Use(proxy.endpoint());
  auto untrusted = ReadFileToString("s3://data/tls.txt");
  ASSERT_FALSE(untrusted.ok());
  EXPECT_NE(untrusted.status().message().find("TLS error"), std::string::npos) << untrusted.status();
  EXPECT_NE(untrusted.status().message().find("AWS_CA_BUNDLE"), std::string::npos) << untrusted.status();
  EXPECT_TRUE(proxy.LogLines().empty());  // refused at the handshake, and not retried
  Use(proxy.endpoint(), 6, cert);
  auto trusted = ReadFileToString("s3://data/tls.txt");
  ASSERT_TRUE(trusted.ok()) << trusted.status();
  EXPECT_EQ(*trusted, "over tls");
}

}  // namespace
}  // namespace rectrain::io::s3

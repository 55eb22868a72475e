// The IDX reader (data.format idx): values from small hand-made files, plain and gzipped, the
// pass planner's shuffles and rank shares, every malformed-file error, and Debian's
// Fashion-MNIST when installed.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <fstream>
#include <map>

#include "rectrain/base/random.h"
#include "rectrain/data/internal/idx_reader.h"
#include "rectrain/data/internal/test_util.h"
#include "rectrain/data/reader.h"

namespace rectrain::data {
namespace {

using test_util::ReadAll;
using test_util::TempDir;

std::string Be32(uint32_t v) {
  return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                     static_cast<char>(v)};
}

// count images of h × w: pixel p of image i = (i * 7 + p) % 256; label = i % 10.
std::string Images(uint32_t count, uint32_t h, uint32_t w) {
  std::string s = Be32(0x803) + Be32(count) + Be32(h) + Be32(w);
  for (uint32_t i = 0; i < count; ++i) {
    for (uint32_t p = 0; p < h * w; ++p) s.push_back(static_cast<char>((i * 7 + p) % 256));
  }
  return s;
}
std::string Labels(uint32_t count) {
  std::string s = Be32(0x801) + Be32(count);
  for (uint32_t i = 0; i < count; ++i) s.push_back(static_cast<char>(i % 10));
  return s;
}
void WriteGz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

DataConfig Idx(const std::vector<std::string>& files) {
  DataConfig c;
  c.files = files;
  c.schema.format = DataFormat::kIdx;
  c.cache = CacheMode::kOff;
  return c;
}

TEST(IdxReader, ValuesOfPlainAndGzippedFiles) {
  TempDir dir;
  dir.Write("a-images-idx3-ubyte", Images(3000, 2, 3));
  dir.Write("a-labels-idx1-ubyte", Labels(3000));
  WriteGz(dir.Path("b-images-idx3-ubyte.gz"), Images(5, 2, 3));
  WriteGz(dir.Path("b-labels-idx1-ubyte.gz"), Labels(5));
  ReadOptions o;
  o.batch_size = 1000;
  auto rows = ReadAll(Idx({dir.Path("a-images-idx3-ubyte"), dir.Path("b-images-idx3-ubyte.gz")}), o);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->labels.size(), 3005u);
  EXPECT_EQ(rows->batch_sizes, (std::vector<int64_t>{1000, 1000, 1000, 5}));
  EXPECT_FLOAT_EQ(rows->labels[123], 3.0f);
  ASSERT_EQ(rows->dense[123].size(), 6u);
  EXPECT_FLOAT_EQ(rows->dense[123][4], static_cast<float>((123 * 7 + 4) % 256) / 255.0f);
  EXPECT_FLOAT_EQ(rows->dense[3002][1], static_cast<float>((2 * 7 + 1) % 256) / 255.0f);  // b's image 2
  EXPECT_EQ(rows->stats.files, 2);
  // format auto recognises the names.
  DataConfig a = Idx({dir.Path("a-images-idx3-ubyte")});
  a.schema.format = DataFormat::kAuto;
  auto again = ReadAll(a, o);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->labels.size(), 3000u);
}

TEST(IdxReader, ShufflesAndRankSharesPartitionThePass) {
  TempDir dir;
  dir.Write("t-images-idx3-ubyte", Images(5000, 1, 2));
  dir.Write("t-labels-idx1-ubyte", Labels(5000));
  const DataConfig c = Idx({dir.Path("t-images-idx3-ubyte")});
  ReadOptions o;
  o.batch_size = 256;
  o.shuffle = true;
  o.seed = 3;
  auto key = [](const test_util::Rows& r) {
    std::multiset<std::pair<float, float>> s;
    for (size_t i = 0; i < r.labels.size(); ++i) s.insert({r.dense[i][0], r.labels[i]});
    return s;
  };
  auto whole = ReadAll(c, o);
  ASSERT_TRUE(whole.ok());
  auto same = ReadAll(c, o);
  EXPECT_EQ(whole->dense, same->dense);  // (seed, epoch) decide the order
  o.epoch = 1;
  auto other = ReadAll(c, o);
  EXPECT_NE(whole->dense, other->dense);
  EXPECT_EQ(key(*whole), key(*other));
  o.epoch = 0;
  std::multiset<std::pair<float, float>> merged;
  for (int r = 0; r < 3; ++r) {
    o.rank = r;
    o.world = 3;
    auto share = ReadAll(c, o);
    ASSERT_TRUE(share.ok());
    EXPECT_GT(share->labels.size(), 1000u);
    for (const auto& k : key(*share)) merged.insert(k);
  }
  EXPECT_EQ(merged, key(*whole));
  // skip_rows resumes inside the pass.
  o.rank = 0;
  o.world = 1;
  o.skip_rows = 300;
  auto skipped = ReadAll(c, o);
  ASSERT_EQ(skipped->labels.size(), 4700u);
  EXPECT_EQ(skipped->dense[0], whole->dense[300]);
}

TEST(IdxReader, MalformedFilesAreNamedErrors) {
  TempDir dir;
  auto open = [&](const std::string& images) {
    auto r = OpenBatchReader(Idx({dir.Path(images)}), ReadOptions());
    return r.ok() ? OkStatus() : r.status();
  };
  dir.Write("m-images-idx3-ubyte", Images(10, 2, 2));
  Status s = open("m-images-idx3-ubyte");
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s;
  EXPECT_NE(s.message().find("should be in " + dir.Path("m-labels-idx1-ubyte")), std::string::npos) << s;

  dir.Write("m-labels-idx1-ubyte", Labels(9));
  s = open("m-images-idx3-ubyte");
  EXPECT_NE(s.message().find("has 9 labels but"), std::string::npos) << s;

  dir.Write("m-labels-idx1-ubyte", Labels(10));
  dir.Write("m-images-idx3-ubyte", Images(10, 2, 2).substr(0, 30));
  s = open("m-images-idx3-ubyte");
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("the header says 10 images of 2 x 2 (56 bytes) but the file has 30 bytes"),
            std::string::npos)
      << s;

  dir.Write("m-images-idx3-ubyte", "not an idx file at all");
  s = open("m-images-idx3-ubyte");
  EXPECT_NE(s.message().find("is not an IDX image file (expected the magic 0x00000803"), std::string::npos) << s;

  dir.Write("m-images-idx3-ubyte", Images(10, 2, 2));
  dir.Write("m-labels-idx1-ubyte", Images(10, 1, 1));  // an image file where labels belong
  s = open("m-images-idx3-ubyte");
  EXPECT_NE(s.message().find("is not an IDX label file"), std::string::npos) << s;

  dir.Write("pixels.bin", Images(10, 2, 2));
  s = open("pixels.bin");
  EXPECT_NE(s.message().find("is not named like an IDX image file"), std::string::npos) << s;

  WriteGz(dir.Path("z-images-idx3-ubyte.gz"), Images(100, 2, 2));
  {
    std::ifstream in(dir.Path("z-images-idx3-ubyte.gz"), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    bytes.resize(bytes.size() / 2);  // a cut gzip stream
    dir.Write("z-images-idx3-ubyte.gz", bytes);
  }
  WriteGz(dir.Path("z-labels-idx1-ubyte.gz"), Labels(100));
  s = open("z-images-idx3-ubyte.gz");
  EXPECT_FALSE(s.ok());

  DataConfig t = Idx({dir.Path("m-images-idx3-ubyte")});
  t.transforms["px0"] = "log1p";
  auto r = OpenBatchReader(t, ReadOptions());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("features.transforms, data.filters and data.negative_downsampling do not apply"),
            std::string::npos);
}

// Mutated image and label files (random bytes changed, cut, grown) never crash the reader: every
// pass ends with rows or a Status (the same cases the libFuzzer target explores).
TEST(IdxReader, MutatedFilesNeverCrash) {
  TempDir dir;
  Rng rng(17);
  const std::string images = Images(40, 3, 3), labels = Labels(40);
  int errors = 0;
  for (int round = 0; round < 400; ++round) {
    std::string img = images, lab = labels;
    std::string& victim = rng.Below(2) ? img : lab;
    const int edits = 1 + static_cast<int>(rng.Below(4));
    for (int e = 0; e < edits; ++e) {
      switch (rng.Below(3)) {
        case 0: victim[rng.Below(std::min<size_t>(victim.size(), 24))] = static_cast<char>(rng.Below(256)); break;
        case 1: victim.resize(rng.Below(victim.size() + 1)); break;
        default: victim.append(rng.Below(16), static_cast<char>(rng.Below(256))); break;
      }
      if (victim.empty()) break;
    }
    dir.Write("f-images-idx3-ubyte", img);
    dir.Write("f-labels-idx1-ubyte", lab);
    ReadOptions o;
    o.batch_size = 16;
    o.shuffle = round % 2 == 1;
    auto rows = ReadAll(Idx({dir.Path("f-images-idx3-ubyte")}), o);
    if (!rows.ok()) {
      ++errors;
      const StatusCode code = rows.status().code();
      EXPECT_TRUE(code == StatusCode::kInvalidArgument || code == StatusCode::kDataLoss || code == StatusCode::kNotFound)
          << rows.status();
      EXPECT_NE(rows.status().message().find(dir.Path("f-")), std::string::npos) << rows.status();
    }
  }
  EXPECT_GT(errors, 100);
}

// Found by the fuzzer: sides of 0xfdffffff x 0xfdff0102 pixels overflowed their product.
TEST(IdxReader, HugeImageSidesAreAnError) {
  TempDir dir;
  dir.Write("h-images-idx3-ubyte", Be32(0x803) + Be32(3) + Be32(0xfdffffffu) + Be32(0xfdff0102u) + "xyz");
  dir.Write("h-labels-idx1-ubyte", Labels(3));
  auto r = OpenBatchReader(Idx({dir.Path("h-images-idx3-ubyte")}), ReadOptions());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("images of 4261412863 x 4261347586 pixels (at most 1048576 per image)"),
            std::string::npos)
      << r.status();
}

TEST(IdxReader, FashionMnistFromDebian) {
  const std::string dir = "/usr/share/datasets/fashion-mnist/";
  std::ifstream probe(dir + "train-images-idx3-ubyte.gz");
  if (!probe) GTEST_SKIP() << "dataset-fashion-mnist is not installed (scripts/install_deps.sh installs it)";
  ReadOptions o;
  o.batch_size = 10000;
  auto test = ReadAll(Idx({dir + "t10k-images-idx3-ubyte.gz"}), o);
  ASSERT_TRUE(test.ok()) << test.status();
  ASSERT_EQ(test->labels.size(), 10000u);
  EXPECT_EQ(test->dense[0].size(), 784u);
  std::map<float, int> per_class;
  for (float y : test->labels) ++per_class[y];
  ASSERT_EQ(per_class.size(), 10u);
  for (const auto& [y, n] : per_class) EXPECT_EQ(n, 1000) << "class " << y;  // the test set is balanced
  float max_px = 0;
  for (float v : test->dense[0]) max_px = std::max(max_px, v);
  EXPECT_LE(max_px, 1.0f);
  EXPECT_GT(max_px, 0.5f);
}

}  // namespace
}  // namespace rectrain::data

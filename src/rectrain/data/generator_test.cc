#include "rectrain/data/generator.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "rectrain/data/internal/synthetic_truth.h"
#include "rectrain/data/internal/test_util.h"
#include "rectrain/data/reader.h"
#include "rectrain/io/file.h"

namespace rectrain::data {
namespace {

using internal::SyntheticTruth;
using test_util::TempDir;

std::string Slurp(const std::string& path) {
  auto s = io::ReadFileToString(path);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : std::string();
}

GenerateReport Generate(const std::string& out, int64_t rows, uint64_t seed, const std::string& shape,
                        int threads) {
  GenerateConfig c;
  c.out = out;
  c.rows = rows;
  c.seed = seed;
  c.shape = shape;
  c.num_threads = threads;
  auto r = GenerateDataset(c);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : GenerateReport();
}

struct ParsedRow {
  int label;
  std::vector<int64_t> dense;
  std::vector<int64_t> tokens;
};

// Parses generated text the way the PyTorch peer does (tokens are hex uint32).
std::vector<ParsedRow> ParseGenerated(const std::string& text, int nd, int ns) {
  std::vector<ParsedRow> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f;
    size_t start = 0;
    while (true) {
      size_t tab = line.find('\t', start);
      f.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    EXPECT_EQ(f.size(), static_cast<size_t>(1 + nd + ns));
    if (f.size() != static_cast<size_t>(1 + nd + ns)) return rows;
    ParsedRow r;
    r.label = f[0] == "1" ? 1 : 0;
    EXPECT_TRUE(f[0] == "0" || f[0] == "1");
    for (int j = 0; j < nd; ++j) r.dense.push_back(f[1 + j].empty() ? -1 : std::stoll(f[1 + j]));
    for (int k = 0; k < ns; ++k) {
      const std::string& t = f[1 + nd + k];
      if (t.empty()) {
        r.tokens.push_back(-1);
        continue;
      }
      EXPECT_EQ(t.size(), 8u) << t;
      EXPECT_EQ(t.find_first_not_of("0123456789abcdef"), std::string::npos) << t;
      uint32_t v = 0;
      std::from_chars(t.data(), t.data() + t.size(), v, 16);
      r.tokens.push_back(v);
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

double Auc(const std::vector<float>& score, const std::vector<int>& y) {
  std::vector<size_t> idx(score.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return score[a] < score[b]; });
  double rank_sum = 0, pos = 0;
  for (size_t i = 0; i < idx.size();) {  // average ranks over ties
    size_t j = i;
    while (j < idx.size() && score[idx[j]] == score[idx[i]]) ++j;
    for (size_t k = i; k < j; ++k) {
      if (y[idx[k]]) {
        rank_sum += 0.5 * (i + 1 + j);
        ++pos;
      }
    }
    i = j;
  }
  const double neg = static_cast<double>(y.size()) - pos;
  return (rank_sum - pos * (pos + 1) / 2) / (pos * neg);
}

TEST(GeneratorTest, DeterministicAcrossThreadCounts) {
  TempDir dir;
  Generate(dir.Path("t1.tsv"), 10000, 5, "criteo", 1);
  Generate(dir.Path("t2.tsv"), 10000, 5, "criteo", 2);
  Generate(dir.Path("t3.tsv"), 10000, 5, "criteo", 3);
  const std::string a = Slurp(dir.Path("t1.tsv"));
  EXPECT_EQ(a, Slurp(dir.Path("t2.tsv")));
  EXPECT_EQ(a, Slurp(dir.Path("t3.tsv")));
  EXPECT_EQ(Slurp(dir.Path("t1.tsv.prob")), Slurp(dir.Path("t3.tsv.prob")));
  Generate(dir.Path("s6.tsv"), 10000, 6, "criteo", 2);
  EXPECT_NE(a, Slurp(dir.Path("s6.tsv")));
  // Only the output files remain (temp files are renamed).
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 8);
}

TEST(GeneratorTest, ProbFileIsTheTruthOfEachRowWhateverTheSeed) {
  TempDir dir;
  auto truth = SyntheticTruth::ForShape("criteo");
  ASSERT_TRUE(truth.ok());
  for (uint64_t seed : {1, 2}) {
    const std::string out = dir.Path("s" + std::to_string(seed) + ".tsv");
    GenerateReport rep = Generate(out, 3000, seed, "criteo", 2);
    EXPECT_EQ(rep.rows, 3000);
    EXPECT_EQ(rep.num_dense, 13);
    EXPECT_EQ(rep.num_sparse, 26);
    EXPECT_EQ(rep.bytes, static_cast<int64_t>(Slurp(out).size()));
    std::vector<ParsedRow> rows = ParseGenerated(Slurp(out), 13, 26);
    auto probs = ReadProbabilities(out + ".prob");
    ASSERT_TRUE(probs.ok()) << probs.status();
    ASSERT_EQ(rows.size(), 3000u);
    ASSERT_EQ(probs->size(), 3000u);
    for (size_t i = 0; i < rows.size(); ++i) {
      // The truth is a function of the row's content and the shape only: recomputing it from
      // the text gives the .prob value (printed with 6 decimals), for both seeds.
      const double p = truth->Probability(rows[i].dense.data(), rows[i].tokens.data());
      ASSERT_NEAR((*probs)[i], p, 6e-7) << "row " << i << " seed " << seed;
    }
  }
}

// MainEffect and LatentVector are the parameters Terms uses (bench/zoo/posterior_bound.cc
// estimates them): the main effects add up to Terms' main, each pair term is
// weight · <v_a, v_b> / 2, and a field's vector is the same in every pair it is in.
TEST(GeneratorTest, MainEffectAndLatentVectorAreTheTermsParameters) {
  auto truth = SyntheticTruth::ForShape("criteo");
  ASSERT_TRUE(truth.ok());
  EXPECT_EQ(truth->noise_sd(), 0.45);
  Rng rng(7);
  std::vector<int64_t> dense(13), tokens(26);
  for (int i = 0; i < 100; ++i) {
    truth->SampleRow(rng, dense.data(), tokens.data());
    if (i == 0) tokens[3] = -1;  // a missing token has parameters of its own
    std::vector<double> pair_terms(truth->pairs().size());
    const auto t = truth->Terms(dense.data(), tokens.data(), nullptr, pair_terms.data());
    double main = 0;
    for (int f = 0; f < 26; ++f) main += truth->MainEffect(f, tokens[f]);
    EXPECT_EQ(main, t.main);
    for (size_t p = 0; p < truth->pairs().size(); ++p) {
      const auto& pair = truth->pairs()[p];
      double va[SyntheticTruth::kLatentDim], vb[SyntheticTruth::kLatentDim];
      truth->LatentVector(pair.a, tokens[pair.a], va);
      truth->LatentVector(pair.b, tokens[pair.b], vb);
      double dot = 0;
      for (int c = 0; c < SyntheticTruth::kLatentDim; ++c) dot += va[c] * vb[c];
      EXPECT_EQ(pair.weight * dot * 0.5, pair_terms[p]);
    }
  }
  EXPECT_NE(truth->MainEffect(3, -1), truth->MainEffect(3, 0));
  double v0[SyntheticTruth::kLatentDim], v1[SyntheticTruth::kLatentDim];
  truth->LatentVector(0, 12345, v0);
  truth->LatentVector(1, 12345, v1);
  EXPECT_NE(v0[0], v1[0]);  // per field, not per token alone
}

// Terms splits the logit the generator uses (bench/zoo/criteo_ceiling.cc leaves parts out).
TEST(GeneratorTest, TermsAddUpToTheLogitAndUnknownFieldsDropTheirEffects) {
  auto truth = SyntheticTruth::ForShape("criteo");
  ASSERT_TRUE(truth.ok());
  Rng rng(5);
  std::vector<int64_t> dense(13), tokens(26);
  bool none[26], all[26];
  std::fill(std::begin(none), std::end(none), false);
  std::fill(std::begin(all), std::end(all), true);
  for (int i = 0; i < 200; ++i) {
    truth->SampleRow(rng, dense.data(), tokens.data());
    std::vector<double> pair_terms(truth->pairs().size());
    const auto t = truth->Terms(dense.data(), tokens.data(), nullptr, pair_terms.data());
    EXPECT_EQ(truth->bias() + t.total, truth->Logit(dense.data(), tokens.data()));  // the same bits
    double pair_sum = 0;  // each pair's own term, added in the order Terms adds them
    for (double v : pair_terms) pair_sum += v;
    EXPECT_EQ(pair_sum, t.pairs);
    EXPECT_NEAR(t.main + t.pairs + t.dense + t.noise, t.total, 1e-12);
    EXPECT_NE(t.main, 0.0);
    EXPECT_NE(t.pairs, 0.0);
    EXPECT_NE(t.noise, 0.0);
    const auto known = truth->Terms(dense.data(), tokens.data(), all);
    EXPECT_EQ(known.total, t.total);
    const auto unknown = truth->Terms(dense.data(), tokens.data(), none);
    EXPECT_EQ(unknown.main, 0.0);
    EXPECT_EQ(unknown.pairs, 0.0);
    EXPECT_EQ(unknown.dense, t.dense);  // dense and noise do not depend on the tokens' flags
    EXPECT_EQ(unknown.noise, t.noise);
    // Field 0 (never missing) interacts with fields 1 and 5: without it, its main effect and
    // those pairs go.
    bool but_first[26];
    std::copy(std::begin(all), std::end(all), but_first);
    but_first[0] = false;
    std::vector<double> partial_pairs(truth->pairs().size(), -1.0);
    const auto partial = truth->Terms(dense.data(), tokens.data(), but_first, partial_pairs.data());
    EXPECT_NE(partial.main, t.main);
    EXPECT_NE(partial.pairs, t.pairs);
    for (size_t p = 0; p < partial_pairs.size(); ++p) {
      const bool left_out = truth->pairs()[p].a == 0 || truth->pairs()[p].b == 0;
      EXPECT_EQ(partial_pairs[p], left_out ? 0.0 : pair_terms[p]) << "pair " << p;
    }
  }
}

TEST(GeneratorTest, LabelRateAndOracleAucAreInRange) {
  TempDir dir;
  for (const std::string shape : {"criteo", "easy", "seed"}) {
    const std::string out = dir.Path(shape + ".tsv");
    GenerateReport rep = Generate(out, 20000, 11, shape, 2);
    const int nd = shape == "seed" ? 50 : 13;
    EXPECT_EQ(rep.num_dense, nd);
    std::vector<ParsedRow> rows = ParseGenerated(Slurp(out), nd, 26);
    auto probs = ReadProbabilities(out + ".prob");
    ASSERT_TRUE(probs.ok());
    std::vector<int> y;
    for (const ParsedRow& r : rows) y.push_back(r.label);
    const double rate = std::accumulate(y.begin(), y.end(), 0.0) / y.size();
    EXPECT_GT(rate, 0.20) << shape;
    EXPECT_LT(rate, 0.30) << shape;
    const double auc = Auc(*probs, y);
    EXPECT_GT(auc, 0.76) << shape;
    EXPECT_LT(auc, 0.90) << shape;
  }
}

TEST(GeneratorTest, ShapesHaveCriteoLikeVocabularies) {
  auto criteo = SyntheticTruth::ForShape("criteo");
  auto seed = SyntheticTruth::ForShape("seed");
  auto easy = SyntheticTruth::ForShape("easy");
  ASSERT_TRUE(criteo.ok() && seed.ok() && easy.ok());
  int64_t seed_total = 0, huge = 0, tiny = 0;
  for (const auto& f : seed->fields()) seed_total += f.cardinality;
  for (const auto& f : criteo->fields()) {
    huge += f.cardinality >= 1000000;
    tiny += f.cardinality <= 30;
    EXPECT_GE(f.zipf_s, 1.0);
    EXPECT_LE(f.zipf_s, 1.2);
  }
  EXPECT_NEAR(static_cast<double>(seed_total), 20e6, 1e6);
  EXPECT_GE(huge, 4);
  EXPECT_GE(tiny, 5);
  for (const auto& f : easy->fields()) EXPECT_LE(f.cardinality, 100);
  EXPECT_EQ(seed->num_dense(), 50);
  // Token mapping is a bijection of ranks within a field.
  std::set<uint32_t> tokens;
  for (uint64_t r = 0; r < 100000; ++r) tokens.insert(criteo->TokenOf(2, r));
  EXPECT_EQ(tokens.size(), 100000u);
}

// easy: the truth sees a missing dense value as the reader's default fill (0) does, so no part
// of the logit is out of a model's reach; criteo keeps a separate missing effect.
TEST(GeneratorTest, EasyTruthTreatsMissingDenseAsZero) {
  auto easy = SyntheticTruth::ForShape("easy");
  auto criteo = SyntheticTruth::ForShape("criteo");
  ASSERT_TRUE(easy.ok() && criteo.ok());
  std::vector<int64_t> tokens(26);
  for (int f = 0; f < 26; ++f) tokens[f] = easy->TokenOf(f, 0);
  int criteo_differs = 0;
  for (int j = 0; j < 13; ++j) {
    std::vector<int64_t> zero(13, 3), missing(13, 3);
    zero[j] = 0;
    missing[j] = -1;
    EXPECT_EQ(easy->Logit(missing.data(), tokens.data()), easy->Logit(zero.data(), tokens.data()))
        << "I" << j + 1;
    criteo_differs += criteo->Logit(missing.data(), tokens.data()) != criteo->Logit(zero.data(), tokens.data());
  }
  EXPECT_GE(criteo_differs, 12);
}

TEST(GeneratorTest, ReaderParsesGeneratedFiles) {
  TempDir dir;
  Generate(dir.Path("c.tsv"), 5000, 3, "criteo", 2);
  Generate(dir.Path("s.tsv"), 2000, 3, "seed", 2);
  DataConfig c;
  c.files = {dir.Path("c.tsv")};
  ReadOptions opt;
  opt.batch_size = 1000;
  opt.num_threads = 2;
  opt.chunk_bytes = 64 << 10;
  auto rows = test_util::ReadAll(c, opt);
  ASSERT_TRUE(rows.ok()) << rows.status();
  std::vector<ParsedRow> text = ParseGenerated(Slurp(dir.Path("c.tsv")), 13, 26);
  ASSERT_EQ(rows->labels.size(), 5000u);
  for (size_t i = 0; i < text.size(); ++i) {
    ASSERT_EQ(rows->labels[i], text[i].label);
    for (int j = 0; j < 13; ++j) {
      const double x = text[i].dense[j] < 0 ? 0.0 : static_cast<double>(text[i].dense[j]);
      ASSERT_FLOAT_EQ(rows->dense[i][j], static_cast<float>(std::log1p(x)));
    }
  }
  c.files = {dir.Path("s.tsv")};
  c.schema.criteo_dense = 50;
  rows = test_util::ReadAll(c, opt);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->stats.rows_read, 2000);
}

TEST(GeneratorTest, Errors) {
  TempDir dir;
  GenerateConfig c;
  c.out = dir.Path("x.tsv");
  c.rows = 0;
  EXPECT_EQ(GenerateDataset(c).status().message(), "rows must be > 0, got 0");
  c.rows = 10;
  c.shape = "huge";
  EXPECT_EQ(GenerateDataset(c).status().message(),
            "unknown dataset shape \"huge\"; expected criteo, seed or easy");
  c.shape = "criteo";
  c.out = dir.Path("no/such/dir/x.tsv");
  EXPECT_FALSE(GenerateDataset(c).ok());
}

TEST(GeneratorTest, ReadProbabilitiesErrors) {
  TempDir dir;
  auto ok = ReadProbabilities(dir.Write("p", "0.5\n1.000000\r\n0"));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(*ok, (std::vector<float>{0.5f, 1.0f, 0.0f}));
  const std::string bad = dir.Write("bad", "0.5\nabc\n");
  EXPECT_EQ(ReadProbabilities(bad).status().message(),
            bad + ":2: expected a probability in [0, 1], got \"abc\"");
  const std::string out_of_range = dir.Write("oor", "1.5\n");
  EXPECT_EQ(ReadProbabilities(out_of_range).status().message(),
            out_of_range + ":1: expected a probability in [0, 1], got \"1.5\"");
  const std::string empty = dir.Write("empty", "");
  EXPECT_EQ(ReadProbabilities(empty).status().message(), empty + " is empty: it has no probabilities");
  EXPECT_EQ(ReadProbabilities(dir.Path("missing")).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace rectrain::data

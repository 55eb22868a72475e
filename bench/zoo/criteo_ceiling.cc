// criteo_ceiling: how close could any model get to the oracle on generated data, given the
// training rows it has? docs/benchmarks.md "Model zoo" quotes its output.
//
// It recomputes the generator's truth (data/internal/synthetic_truth.h) for every validation row
// and scores it with parts of the truth left out:
//   - the oracle itself (checks that this tool reproduces valid.tsv.prob's AUC);
//   - without the row-noise term, which is a hash of the whole row: no model can learn it from
//     other rows, so "noise-free" is the real ceiling;
//   - main + dense effects only (the pair interactions left out);
//   - tokens seen at least n times in the training file known exactly (their main effects and
//     the pairs they are in), every other token contributing 0 (its expected effect);
//   - the posterior bound (posterior_bound.h): every seen id's effect and latent vector
//     estimated from its own training rows, with the rest of each row given exactly.
// The "known exactly" lines know a seen id's effect without estimation noise; the posterior
// bound estimates it as well as the id's rows allow, so it is the tighter (and still optimistic)
// bound for a model trained on TRAIN. Tokens are counted per field, the missing token as one id.
//
// With --predictions (a model's probabilities for VALID's rows, as `rectrain eval
// --predictions` writes them) it also says which parts of the truth the model has learnt: the
// least-squares fit of the model's logit on the truth's terms (main, dense and every pair,
// jointly, with an intercept). A coefficient of 1 carries the term at full strength, 0 not at
// all; as every logit of an uncertain model shrinks, the dense term (13 features, all learnable
// from the rows) is the reference for "fully learnt".
//
// Usage: criteo_ceiling TRAIN.tsv VALID.tsv [--predictions PRED.txt]
//        (files of `rectrain data gen`, criteo shape)
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "posterior_bound.h"
#include "rectrain/base/parallel.h"
#include "rectrain/data/internal/synthetic_truth.h"
#include "rectrain/train/metrics.h"

namespace {

using rectrain::data::internal::SyntheticTruth;

constexpr int kDense = 13;
constexpr int kSparse = 26;

struct Row {
  float label = 0;
  int64_t dense[kDense];
  int64_t tokens[kSparse];
};

// One line of `rectrain data gen` output: label, 13 integers, 26 tokens of 8 hex digits; an
// empty field is missing (-1). Returns false, naming the line, on anything else.
bool ParseRow(const std::string& line, const std::string& file, int64_t line_no, Row& row) {
  size_t pos = 0;
  for (int col = 0; col < 1 + kDense + kSparse; ++col) {
    const size_t end = std::min(line.find('\t', pos), line.size());
    const std::string field = line.substr(pos, end - pos);
    if (end == line.size() && col != kDense + kSparse) {
      std::fprintf(stderr, "%s:%lld: expected %d tab-separated fields, found %d\n", file.c_str(),
                   static_cast<long long>(line_no), 1 + kDense + kSparse, col + 1);
      return false;
    }
    char* stop = nullptr;
    if (col == 0) {
      row.label = std::strtof(field.c_str(), &stop);
    } else if (field.empty()) {
      (col <= kDense ? row.dense[col - 1] : row.tokens[col - 1 - kDense]) = -1;
    } else if (col <= kDense) {
      row.dense[col - 1] = std::strtoll(field.c_str(), &stop, 10);
    } else {
      row.tokens[col - 1 - kDense] = static_cast<int64_t>(std::strtoull(field.c_str(), &stop, 16));
    }
    if (stop != nullptr && *stop != '\0') {
      std::fprintf(stderr, "%s:%lld: field %d: not a number: \"%s\"\n", file.c_str(),
                   static_cast<long long>(line_no), col + 1, field.c_str());
      return false;
    }
    pos = end + 1;
  }
  return true;
}

template <typename Fn>
bool ForEachRow(const std::string& file, Fn fn) {
  std::ifstream in(file);
  if (!in) {
    std::fprintf(stderr, "%s: cannot open\n", file.c_str());
    return false;
  }
  std::string line;
  Row row;
  for (int64_t line_no = 1; std::getline(in, line); ++line_no) {
    if (!ParseRow(line, file, line_no, row)) return false;
    fn(row);
  }
  return true;
}

// One probability per line, in (0, 1). Returns false, naming the line, on anything else.
bool ReadPredictions(const std::string& file, std::vector<double>& logits) {
  std::ifstream in(file);
  if (!in) {
    std::fprintf(stderr, "%s: cannot open\n", file.c_str());
    return false;
  }
  std::string line;
  for (int64_t line_no = 1; std::getline(in, line); ++line_no) {
    char* stop = nullptr;
    const double p = std::strtod(line.c_str(), &stop);
    if (line.empty() || *stop != '\0' || !(p > 0.0 && p < 1.0)) {
      std::fprintf(stderr, "%s:%lld: expected a probability in (0, 1), found \"%s\"\n", file.c_str(),
                   static_cast<long long>(line_no), line.c_str());
      return false;
    }
    logits.push_back(std::log(p / (1.0 - p)));
  }
  return true;
}

// Least squares: the x minimising |A x - b| from the normal equations (A^T A) x = A^T b, by
// Gaussian elimination with partial pivoting (k is small: the number of truth terms + 1).
// Returns false when A^T A is singular.
bool SolveNormalEquations(std::vector<double> ata, std::vector<double> atb, std::vector<double>& x) {
  const size_t k = atb.size();
  for (size_t c = 0; c < k; ++c) {
    size_t pivot = c;
    for (size_t r = c + 1; r < k; ++r) {
      if (std::fabs(ata[r * k + c]) > std::fabs(ata[pivot * k + c])) pivot = r;
    }
    if (std::fabs(ata[pivot * k + c]) < 1e-12) return false;
    for (size_t j = 0; j < k; ++j) std::swap(ata[c * k + j], ata[pivot * k + j]);
    std::swap(atb[c], atb[pivot]);
    for (size_t r = c + 1; r < k; ++r) {
      const double f = ata[r * k + c] / ata[c * k + c];
      for (size_t j = c; j < k; ++j) ata[r * k + j] -= f * ata[c * k + j];
      atb[r] -= f * atb[c];
    }
  }
  x.assign(k, 0.0);
  for (size_t c = k; c-- > 0;) {
    double v = atb[c];
    for (size_t j = c + 1; j < k; ++j) v -= ata[c * k + j] * x[j];
    x[c] = v / ata[c * k + c];
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const bool with_predictions = argc == 5 && std::string(argv[3]) == "--predictions";
  if (argc != 3 && !with_predictions) {
    std::fprintf(stderr, "usage: %s TRAIN.tsv VALID.tsv [--predictions PRED.txt] (criteo-shape files of rectrain data gen)\n", argv[0]);
    return 2;
  }
  auto truth = SyntheticTruth::ForShape("criteo");
  if (!truth.ok()) return 1;
  std::vector<std::unordered_map<int64_t, uint32_t>> seen(kSparse);
  // The rows as the posterior bound reads them, from the row's truth terms.
  auto truth_row = [&](const Row& r, const SyntheticTruth::LogitTerms& all) {
    rectrain::bench::TruthRow t;
    t.label = r.label;
    t.dense_logit = truth->bias() + all.dense;
    t.noise_free_logit = truth->bias() + all.main + all.pairs + all.dense;
    std::copy(r.tokens, r.tokens + kSparse, t.tokens);
    return t;
  };
  std::vector<rectrain::bench::TruthRow> train_rows, valid_rows;
  if (!ForEachRow(argv[1], [&](const Row& r) {
        train_rows.push_back(truth_row(r, truth->Terms(r.dense, r.tokens)));
        for (int f = 0; f < kSparse; ++f) ++seen[f][r.tokens[f]];
      })) {
    return 1;
  }
  const std::vector<uint32_t> min_counts = {1, 3, 10, 30, 100};
  struct Score {
    std::string name;
    std::vector<float> logits;
  };
  std::vector<Score> scores = {{"oracle (the generator's truth)", {}},
                               {"noise-free oracle (truth without the row-noise term)", {}},
                               {"main + dense effects only (no pairs, no noise)", {}}};
  for (uint32_t n : min_counts) {
    scores.push_back({"ids seen >= " + std::to_string(n) + "x in train known exactly, dense exact, no noise", {}});
  }
  // Per validation row, the truth's terms the predictions are regressed on: main, dense, then
  // every pair's own term.
  const auto& pairs = truth->pairs();
  const size_t num_terms = 2 + pairs.size();
  std::vector<double> terms, pair_terms(pairs.size());
  std::vector<float> labels;
  if (!ForEachRow(argv[2], [&](const Row& r) {
        labels.push_back(r.label);
        const auto all = truth->Terms(r.dense, r.tokens, nullptr, pair_terms.data());
        valid_rows.push_back(truth_row(r, all));
        if (with_predictions) {
          terms.push_back(all.main);
          terms.push_back(all.dense);
          terms.insert(terms.end(), pair_terms.begin(), pair_terms.end());
        }
        scores[0].logits.push_back(static_cast<float>(all.total));
        scores[1].logits.push_back(static_cast<float>(all.main + all.pairs + all.dense));
        scores[2].logits.push_back(static_cast<float>(all.main + all.dense));
        uint32_t count[kSparse];  // the row's tokens' training counts, looked up once
        for (int f = 0; f < kSparse; ++f) {
          const auto it = seen[f].find(r.tokens[f]);
          count[f] = it == seen[f].end() ? 0 : it->second;
        }
        for (size_t k = 0; k < min_counts.size(); ++k) {
          bool known[kSparse];
          for (int f = 0; f < kSparse; ++f) known[f] = count[f] >= min_counts[k];
          const auto part = truth->Terms(r.dense, r.tokens, known);
          scores[3 + k].logits.push_back(static_cast<float>(part.main + part.pairs + part.dense));
        }
      })) {
    return 1;
  }
  const rectrain::ComputeContext compute{2};
  scores.push_back({"posterior bound: every seen id's effect and latent vector estimated from its training rows, the rest of each row given; dense exact, no noise",
                    rectrain::bench::PosteriorBoundLogits(*truth, train_rows, valid_rows, compute)});
  std::printf("train rows %zu, valid rows %zu\n", train_rows.size(), labels.size());
  for (const Score& s : scores) {
    std::printf("valid auc %.5f  %s\n", rectrain::train::ExactAuc(s.logits, labels, compute), s.name.c_str());
  }
  if (!with_predictions) return 0;
  std::vector<double> logits;
  if (!ReadPredictions(argv[4], logits)) return 1;
  if (logits.size() != labels.size()) {
    std::fprintf(stderr, "%s: %zu predictions for %zu rows of %s\n", argv[4], logits.size(), labels.size(), argv[2]);
    return 1;
  }
  const size_t k = num_terms + 1;  // + intercept
  std::vector<double> ata(k * k, 0.0), atb(k, 0.0), x(k);
  for (size_t i = 0; i < labels.size(); ++i) {
    for (size_t t = 0; t < num_terms; ++t) x[t] = terms[i * num_terms + t];
    x[num_terms] = 1.0;
    for (size_t a = 0; a < k; ++a) {
      atb[a] += x[a] * logits[i];
      for (size_t b = 0; b < k; ++b) ata[a * k + b] += x[a] * x[b];
    }
  }
  std::vector<double> coef;
  if (!SolveNormalEquations(ata, atb, coef)) {
    std::fprintf(stderr, "the truth's terms are collinear on these rows; use more validation rows\n");
    return 1;
  }
  std::printf("learnt share of each truth term (least-squares coefficient of the model's logit; 1 = full strength):\n");
  std::printf("  main %.2f  dense %.2f\n", coef[0], coef[1]);
  for (size_t p = 0; p < pairs.size(); ++p) {
    const int a = pairs[p].a, b = pairs[p].b;
    std::printf("  pair C%d x C%d (%lld x %lld ids): %.2f\n", a + 1, b + 1,
                static_cast<long long>(truth->fields()[a].cardinality),
                static_cast<long long>(truth->fields()[b].cardinality), coef[2 + p]);
  }
  return 0;
}

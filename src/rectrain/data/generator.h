// rectrain/data/generator.h: synthetic Criteo-format data with a known ground truth.
//
// Rows: label, I1..I<num_dense> (non-negative integers, some missing), C1..C26 (8 lowercase hex
// digits, some missing), tab-separated. Categorical ids follow per-field Zipf distributions with
// Criteo-like cardinalities; the label is Bernoulli(sigmoid(logit)) where the logit comes from a
// hidden model (per-id effects, pairwise field interactions, dense effects, noise) that depends
// only on the shape, never on `seed` — so a train file and a test file made with different
// seeds share one truth. Alongside FILE it writes FILE.prob: each row's true click probability,
// one per line, so `rectrain eval` (and the PyTorch peer) can report the oracle AUC/logloss.
// Thread safety: GenerateDataset is reentrant; it uses `num_threads` workers internally.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rectrain/base/result.h"

namespace rectrain::data {

struct GenerateConfig {
  int64_t rows = 0;               // > 0
  std::string out;                // output TSV path (FILE.prob is written beside it)
  uint64_t seed = 1;              // sampling seed (rows); the truth does not depend on it
  std::string shape = "criteo";   // criteo (13 dense, 26 cat) | seed (50 dense, 26 cat, ~20M
                                  // ids) | easy (13 dense, 26 cat, small vocabularies)
  int num_threads = 2;
};

struct GenerateReport {
  int64_t rows = 0;
  int64_t bytes = 0;
  double seconds = 0;
  int num_dense = 0;
  int num_sparse = 0;
};

Result<GenerateReport> GenerateDataset(const GenerateConfig& config);

// Reads a FILE.prob side file (one probability per line). Errors name file:line.
Result<std::vector<float>> ReadProbabilities(const std::string& path);

}  // namespace rectrain::data

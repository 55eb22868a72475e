// rectrain/data/transform.h: per-feature transforms and row filters declared in the config,
// applied by the reader to every row (text and Parquet alike), before batching.
//
// A feature's transform is a pipeline of steps written as one string (features.transforms):
//
//   features:
//     transforms:
//       age:      "fill(30) | clip(0, 100) | log1p | standardize"   # dense
//       price:    "log1p | quantiles(10)"         # bucketize at deciles (dense or sparse)
//       hour:     "col(ts) | hour_of_day"          # derived from column ts
//       genres:   "split('|', 5)"                  # sparse, multi-valued, at most 5 ids
//       user_x_movie: "cross(user_id, movie_id)"   # sparse, crossed categorical
//       item:     "hash(1000000)"                  # ids folded into [0, 1e6)
//       rating:   "binarize(8)"                    # the label: 1 if rating >= 8 else 0
//
// Steps (in order; x is the value so far; docs/data.md has the full table):
//   col(name)            first step only: read column `name` (default: the feature's name)
//   cross(a, b)          first step only, sparse: the id of the pair (token_a, token_b)
//   fill(v)              the value of a missing (empty/null) field; default features.fill
//   clip(lo, hi)         min(max(x, lo), hi)
//   log1p                log(1 + max(x, 0))
//   standardize          (x - mean) / std, mean and std from a stats pass over data.train
//   bucketize(b1, ..)    the number of boundaries <= x (0 .. n); boundaries ascending
//   quantiles(n)         bucketize at the n-quantiles of x, from a stats pass over data.train
//   hour_of_day          x = unix seconds (UTC) -> 0 .. 23
//   day_of_week          x = unix seconds (UTC) -> 0 (Sunday) .. 6 (Saturday)
//   binarize(t)          x >= t ? 1 : 0
//   split(sep, max_len)  sparse, text: "a|b|c" -> ids of a, b, c (first max_len; 0 = all)
//   max_len(n)           sparse lists (Parquet list columns or split): keep the first n
//   hash(n)              sparse: id mod n (bounded vocabulary); n >= 1
//   hash_as(feature)     sparse: hash tokens as sparse `feature` does, so equal tokens get
//                        equal ids: a behaviour sequence of that feature's items (DIN's
//                        history of movies shares the movie's embedding rows)
//   hex_id               sparse: the token is the id itself, 16 hex digits (no hashing); what
//                        `rectrain data convert --to tsv` writes. Also allowed as the whole
//                        spec of data.schema.group_key's column.
// A sparse feature with numeric steps hashes the final number's shortest decimal text
// (a bucket 3 -> "3"). Vocabulary min-count is the embedding table's admission
// (embedding.min_count), not a transform.
//
// Row filters (data.filters): "COL not null", "COL in [a, b, ...]", "COL not in [a, ...]".
// A filtered row is dropped and counted (ReaderStats::rows_filtered), never an error.
//
// Negative downsampling (data.negative_downsampling: r in (0, 1]): a row with label 0 is kept
// with probability r (decided by a hash of the row, so the same rows are kept every epoch).
// A model trained on downsampled data over-predicts by the odds factor 1/r; the calibrated
// probability is p' = p / (p + (1 - p) / r), i.e. logit' = logit + log(r): CalibrateLogit().
//
// Thread safety: pure functions over value types.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "rectrain/base/result.h"

namespace rectrain::data {

enum class StepOp : uint8_t {
  kCol,
  kCross,
  kFill,
  kClip,
  kLog1p,
  kStandardize,
  kBucketize,
  kQuantiles,
  kHourOfDay,
  kDayOfWeek,
  kBinarize,
  kSplit,
  kMaxLen,
  kHash,
  kHexId,
  kHashAs,
};

struct TransformStep {
  StepOp op = StepOp::kFill;
  std::vector<double> args;         // numeric arguments (fill value, clip bounds, boundaries, ...)
  std::vector<std::string> names;   // col / cross column names; hash_as: the feature
  std::string sep;                  // split separator (one byte)
  bool NeedsStats() const { return op == StepOp::kStandardize || op == StepOp::kQuantiles; }
  bool IsNumeric() const;           // maps a number to a number
};

// A parsed pipeline. `text` is the spec it came from (it keys the stats and the cache).
struct FeatureTransform {
  std::string text;
  std::vector<TransformStep> steps;
};

// Parses "step | step(args) | ...". InvalidArgument naming the step and what is wrong:
// unknown step (with the nearest name), wrong argument count/type, col/cross not first,
// boundaries not ascending, split separator not one byte, a second stats step.
Result<FeatureTransform> ParseTransform(std::string_view spec);

struct RowFilter {
  enum class Kind : uint8_t { kNotNull, kIn, kNotIn };
  std::string column;
  Kind kind = Kind::kNotNull;
  std::vector<std::string> values;  // kIn / kNotIn: compared with the field's text
  std::string text;                 // as written
};

// Parses "COL not null" | "COL in [a, b]" | "COL not in [a, b]" (values may be quoted).
Result<RowFilter> ParseRowFilter(std::string_view spec);

// Values a stats pass computed for one feature's stats step (see docs/data.md).
struct FeatureStats {
  double mean = 0;
  double std = 1;
  std::vector<double> boundaries;  // quantiles(n): ascending, de-duplicated, <= n - 1 values
};

// Applies the numeric steps [begin, end) of `t` to x (stats steps use `stats`; fill, col, cross,
// split, max_len and hash are skipped). Used by the reader and by tests as the reference.
double ApplyNumericSteps(const FeatureTransform& t, size_t begin, size_t end, double x,
                         const FeatureStats& stats);

// logit + log(rate): the calibration of a model trained with negative downsampling at `rate`.
double CalibrateLogit(double logit, double rate);
// The same on a probability: p / (p + (1 - p) / rate).
double CalibrateProbability(double p, double rate);

}  // namespace rectrain::data

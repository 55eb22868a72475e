// rectrain/data/pass_plan.h: which rows one pass reads, and in which order, for every reader.
// This is the one place that decides "rank r of w reads these rows"; the text/Parquet reader
// (reader.cc), the sample-cache reader (cache.cc) and the trainer all ask it.
//
// A pass is made of units, each decodable on its own: a text chunk (ReadOptions::chunk_bytes of
// a file), a Parquet row group, a sample-cache block. PlanPassUnits orders them — file order,
// or a permutation that depends only on (seed, epoch) when shuffling — and, in a job of several
// ranks, keeps rank r's share: a contiguous stretch of the ordered units, cut so that every
// rank's share of the units' weight (rows where the reader knows them, bytes for text, whose
// rows are only known once parsed) is as equal as whole units allow. The shares of all ranks
// partition the pass: every unit is read by exactly one rank.
//
// The other way to split (dist.data_split: batches) leaves the pass whole and splits every batch:
// rank r takes rows SliceOfBatch(n, r, w) of each global batch of n rows. Then the global batch
// of step t holds the same rows whatever the number of ranks, which makes training independent
// of the rank count, at the price of every rank reading the whole pass. SliceBatches wraps any
// reader that way.
//
// Thread safety: pure functions; a reader from SliceBatches is used like the one it wraps.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/data/reader.h"

namespace rectrain::data {

// Indices (into `weights`) of the units rank `rank` of `world` reads in this pass, in the order
// it reads them. `weights` are >= 0, one per unit in file order. shuffle: the units are first
// permuted by (seed, epoch) (the same permutation on every rank, so the shares are disjoint).
// world == 1 returns every unit. A rank may get no unit when there are fewer units than ranks.
std::vector<int64_t> PlanPassUnits(std::span<const int64_t> weights, bool shuffle, uint64_t seed,
                                   int64_t epoch, int rank, int world);

// InvalidArgument unless 1 <= options.world and 0 <= options.rank < options.world.
Status ValidateRankShare(const ReadOptions& options);

// Rows [begin, end) of a batch of `rows` rows that rank `rank` of `world` trains on: contiguous
// and balanced (sizes differ by at most one, the first ranks take the extra rows).
struct RowRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};
RowRange SliceOfBatch(int64_t rows, int rank, int world);

// A reader of `inner`'s batches cut to this rank's slice (SliceOfBatch). `inner` must produce
// the global batches (ReadOptions::world 1). A slice may be empty (a final batch with fewer rows
// than ranks): such a batch is delivered with size 0, so every rank sees the same number of
// batches. Stats() are inner's, with rows_read counting this rank's rows.
std::unique_ptr<BatchReader> SliceBatches(std::unique_ptr<BatchReader> inner, int rank, int world);

// Copies rows [begin, end) of `in` into *out (reusing its buffers); source/first_line follow.
void CopyBatchRows(const Batch& in, int64_t begin, int64_t end, Batch* out);

}  // namespace rectrain::data

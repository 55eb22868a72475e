// rectrain/data/epoch_order.h: the order in which the rows of an in-memory split are served in
// one epoch (data.shuffle over a MemorySplit; docs/data.md "Shuffling"). Every order is a
// permutation of 0 .. rows-1 that depends only on (seed, epoch) and the split's contents, never
// on thread timing, so a resumed run gets the same order as an uninterrupted one.
//
//   PermutedOrder      a uniformly random permutation (Fisher-Yates).
//   StratifiedOrder    "global shuffle bucketed by key": rows grouped by a key (e.g. user id) are
//                      dealt over the epoch's batches so that a key with n rows lands in n
//                      different batches, spread evenly over the epoch (definition below).
//
// Stratified order, precisely. Let N rows, batch size b, B = ceil(N / b) batches; batches
// 0 .. B-2 hold b rows and batch B-1 holds L = N - (B-1)·b rows (1 <= L <= b).
//   1. The keys are put in a random order and each key's rows in a random order; concatenated,
//      this is the sequence S of N rows (a key's rows are consecutive in S).
//   2. S is dealt like cards: slot g = 0, 1, ... of every batch in turn, visiting batches in the
//      cyclic order o, o+m, o+2m, ... (mod B), where o is a random offset and m the "golden
//      stride" (the integer nearest B/phi that is coprime with B, phi = 1.618...). Batch B-1 is
//      skipped once it holds L rows.
//   3. Batch j is served as the j-th stretch of b rows of the epoch.
// Consequences (tested in epoch_order_test.cc):
//   - every row exactly once; exact batch sizes (b, ..., b, L);
//   - a key with n <= B-1 rows (n <= B when L == b) has at most one row in any batch; a heavier
//     key has at most ceil(n / (B-1)) rows in any batch;
//   - a key's rows fall in the batches o', o'+m, o'+2m, ... (mod B): consecutive multiples of
//     the golden stride, which split the epoch into gaps of at most three lengths (the
//     three-gap theorem), i.e. evenly spread rather than clustered;
//   - over seeds, the batch of a given row is uniform (the offset o is uniform).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace rectrain::data {

// 0, 1, ..., rows-1.
std::vector<uint32_t> IdentityOrder(int64_t rows);

// A uniformly random permutation of 0 .. rows-1, determined by (seed, epoch).
std::vector<uint32_t> PermutedOrder(int64_t rows, uint64_t seed, int64_t epoch);

// Rows grouped by key: rows[starts[k] .. starts[k+1]) share one key; keys in increasing key
// order, rows in increasing row order (a canonical form independent of how rows were read).
struct KeyGroups {
  std::vector<uint32_t> rows;
  std::vector<uint32_t> starts;  // num_keys() + 1 entries
  int64_t num_keys() const { return starts.empty() ? 0 : static_cast<int64_t>(starts.size()) - 1; }
  int64_t num_rows() const { return static_cast<int64_t>(rows.size()); }
};
// `keys[r]` is row r's key. keys.size() must fit in uint32.
KeyGroups GroupRowsByKey(std::span<const uint64_t> keys);

// The stratified order defined in the top comment; batch_size >= 1.
std::vector<uint32_t> StratifiedOrder(const KeyGroups& groups, int64_t batch_size, uint64_t seed,
                                      int64_t epoch);

// The golden stride for `batches` >= 1: the integer nearest batches/phi that is coprime with
// `batches` (1 when batches <= 2).
int64_t GoldenStride(int64_t batches);

}  // namespace rectrain::data

#include "rectrain/data/epoch_order.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "rectrain/base/check.h"
#include "rectrain/base/random.h"

namespace rectrain::data {
namespace {

constexpr uint64_t kPermutationStream = 0x7065726dULL;   // "perm"
constexpr uint64_t kStratifiedStream = 0x73747261ULL;    // "stra"

Rng EpochRng(uint64_t seed, uint64_t stream, int64_t epoch) {
  return Rng(DeriveSeed(DeriveSeed(seed, stream), static_cast<uint64_t>(epoch)));
}

void Shuffle(uint32_t* first, int64_t n, Rng& rng) {
  for (int64_t i = n - 1; i > 0; --i) {
    std::swap(first[i], first[rng.Below(static_cast<uint64_t>(i + 1))]);
  }
}

}  // namespace

std::vector<uint32_t> IdentityOrder(int64_t rows) {
  std::vector<uint32_t> order(static_cast<size_t>(rows));
  std::iota(order.begin(), order.end(), uint32_t{0});
  return order;
}

std::vector<uint32_t> PermutedOrder(int64_t rows, uint64_t seed, int64_t epoch) {
  std::vector<uint32_t> order = IdentityOrder(rows);
  Rng rng = EpochRng(seed, kPermutationStream, epoch);
  Shuffle(order.data(), rows, rng);
  return order;
}

KeyGroups GroupRowsByKey(std::span<const uint64_t> keys) {
  RECTRAIN_CHECK(keys.size() <= 0xffffffffULL) << "GroupRowsByKey: more than 2^32-1 rows";
  std::vector<std::pair<uint64_t, uint32_t>> pairs(keys.size());
  for (size_t r = 0; r < keys.size(); ++r) pairs[r] = {keys[r], static_cast<uint32_t>(r)};
  std::sort(pairs.begin(), pairs.end());
  KeyGroups g;
  g.rows.resize(pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (i == 0 || pairs[i].first != pairs[i - 1].first) g.starts.push_back(static_cast<uint32_t>(i));
    g.rows[i] = pairs[i].second;
  }
  g.starts.push_back(static_cast<uint32_t>(pairs.size()));
  return g;
}

int64_t GoldenStride(int64_t batches) {
  if (batches <= 2) return 1;
  const int64_t target = std::llround(static_cast<double>(batches) * 0.6180339887498949);
  for (int64_t d = 0;; ++d) {
    for (int64_t m : {target - d, target + d}) {
      if (m >= 1 && m < batches && std::gcd(m, batches) == 1) return m;
    }
  }
}

std::vector<uint32_t> StratifiedOrder(const KeyGroups& groups, int64_t batch_size, uint64_t seed,
                                      int64_t epoch) {
  RECTRAIN_CHECK(batch_size >= 1);
  const int64_t n = groups.num_rows();
  std::vector<uint32_t> order(static_cast<size_t>(n));
  if (n == 0) return order;
  Rng rng = EpochRng(seed, kStratifiedStream, epoch);
  // 1. S: keys in random order, each key's rows in random order.
  const int64_t num_keys = groups.num_keys();
  std::vector<uint32_t> key_order = IdentityOrder(num_keys);
  Shuffle(key_order.data(), num_keys, rng);
  std::vector<uint32_t> seq(static_cast<size_t>(n));
  size_t pos = 0;
  for (uint32_t k : key_order) {
    const uint32_t begin = groups.starts[k], end = groups.starts[k + 1];
    std::copy(groups.rows.begin() + begin, groups.rows.begin() + end, seq.begin() + static_cast<int64_t>(pos));
    Shuffle(seq.data() + pos, end - begin, rng);
    pos += end - begin;
  }
  // 2. Deal S slot by slot over the batches in golden-stride order from a random offset.
  const int64_t num_batches = (n + batch_size - 1) / batch_size;
  const int64_t last_size = n - (num_batches - 1) * batch_size;
  const int64_t stride = GoldenStride(num_batches);
  const int64_t offset = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(num_batches)));
  int64_t next = 0;
  for (int64_t slot = 0; next < n; ++slot) {
    int64_t batch = offset;
    for (int64_t c = 0; c < num_batches && next < n; ++c) {
      if (batch != num_batches - 1 || slot < last_size) {
        order[static_cast<size_t>(batch * batch_size + slot)] = seq[static_cast<size_t>(next++)];
      }
      batch += stride;
      if (batch >= num_batches) batch -= num_batches;
    }
  }
  return order;
}

}  // namespace rectrain::data

#include "rectrain/train/metrics.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "rectrain/base/check.h"

namespace rectrain::train {
namespace {

// Maps a float to a uint32 whose unsigned order is the float order (-0 folded onto +0).
inline uint32_t SortableBits(float x) {
  if (x == 0.0f) x = 0.0f;
  uint32_t bits = std::bit_cast<uint32_t>(x);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

// Sorts `v` with `num_threads` chunk sorts followed by rounds of pairwise merges.
template <typename T>
void ParallelSort(std::vector<T>& v, const ComputeContext& compute) {
  const int64_t n = static_cast<int64_t>(v.size());
  const int chunks = NumRanges(compute, n, /*grain=*/1 << 15);
  if (chunks <= 1) {
    std::sort(v.begin(), v.end());
    return;
  }
  std::vector<int64_t> bounds(chunks + 1);
  for (int c = 0; c <= chunks; ++c) bounds[c] = n * c / chunks;
  ParallelForEach(compute, chunks, 1, [&](int, int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) std::sort(v.begin() + bounds[c], v.begin() + bounds[c + 1]);
  });
  for (int width = 1; width < chunks; width *= 2) {
    const int64_t merges = (chunks + 2 * width - 1) / (2 * width);
    ParallelForEach(compute, merges, 1, [&](int, int64_t begin, int64_t end) {
      for (int64_t m = begin; m < end; ++m) {
        const int64_t lo = m * 2 * width;
        const int64_t mid = std::min<int64_t>(lo + width, chunks);
        const int64_t hi = std::min<int64_t>(lo + 2 * width, chunks);
        if (mid < hi) {
          std::inplace_merge(v.begin() + bounds[lo], v.begin() + bounds[mid], v.begin() + bounds[hi]);
        }
      }
    });
  }
}

// AUC over keys (sortable score << 1 | is_positive), sorted ascending.
double AucOfSortedKeys(const uint64_t* keys, int64_t n) {
  double pairs = 0;  // positive-above-negative pairs, ties 1/2
  double neg_below = 0;
  double positives = 0;
  int64_t i = 0;
  while (i < n) {
    const uint64_t score = keys[i] >> 1;
    double pos = 0, neg = 0;
    for (; i < n && (keys[i] >> 1) == score; ++i) {
      if (keys[i] & 1) {
        pos += 1;
      } else {
        neg += 1;
      }
    }
    pairs += pos * neg_below + 0.5 * pos * neg;
    neg_below += neg;
    positives += pos;
  }
  if (positives == 0 || neg_below == 0) return kNaN;
  return pairs / (positives * neg_below);
}

}  // namespace

double ExactAuc(std::span<const float> scores, std::span<const float> labels,
                const ComputeContext& compute) {
  RECTRAIN_CHECK(scores.size() == labels.size()) << scores.size() << " vs " << labels.size();
  const int64_t n = static_cast<int64_t>(scores.size());
  std::vector<uint64_t> keys(n);
  bool has_nan = false;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(scores[i])) has_nan = true;
    keys[i] = (uint64_t{SortableBits(scores[i])} << 1) | (labels[i] > 0.5f ? 1u : 0u);
  }
  if (has_nan) return kNaN;
  ParallelSort(keys, compute);
  return AucOfSortedKeys(keys.data(), n);
}

double LogLoss(std::span<const float> probs, std::span<const float> labels) {
  RECTRAIN_CHECK(probs.size() == labels.size());
  if (probs.empty()) return kNaN;
  constexpr double kEps = 1e-7;
  double sum = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    const double p = std::clamp<double>(probs[i], kEps, 1.0 - kEps);
    sum -= labels[i] > 0.5f ? std::log(p) : std::log1p(-p);
  }
  return sum / static_cast<double>(probs.size());
}

void MetricAccumulator::Reserve(int64_t rows) {
  probs_.reserve(rows);
  labels_.reserve(rows);
  groups_.reserve(rows);
}

void MetricAccumulator::Add(std::span<const float> probs, std::span<const float> labels,
                            std::span<const uint64_t> group_keys) {
  RECTRAIN_CHECK(probs.size() == labels.size());
  RECTRAIN_CHECK(group_keys.empty() || group_keys.size() == probs.size());
  probs_.insert(probs_.end(), probs.begin(), probs.end());
  labels_.insert(labels_.end(), labels.begin(), labels.end());
  if (group_keys.empty()) {
    all_have_groups_ = false;
  } else if (all_have_groups_) {
    groups_.insert(groups_.end(), group_keys.begin(), group_keys.end());
  }
}

void MetricAccumulator::Clear() {
  probs_.clear();
  labels_.clear();
  groups_.clear();
  all_have_groups_ = true;
}

EvalMetrics MetricAccumulator::Compute(const ComputeContext& compute, bool with_gauc) const {
  EvalMetrics m;
  m.rows = rows();
  if (m.rows == 0) return m;
  double sum_pred = 0;
  for (float p : probs_) sum_pred += p;
  for (float y : labels_) m.positives += y > 0.5f ? 1 : 0;
  m.mean_prediction = sum_pred / static_cast<double>(m.rows);
  m.ctr = static_cast<double>(m.positives) / static_cast<double>(m.rows);
  m.calibration = m.ctr > 0 ? m.mean_prediction / m.ctr : kNaN;
  m.auc = ExactAuc(probs_, labels_, compute);
  m.logloss = LogLoss(probs_, labels_);
  if (m.ctr > 0 && m.ctr < 1) {
    const double entropy = -(m.ctr * std::log(m.ctr) + (1 - m.ctr) * std::log1p(-m.ctr));
    m.ne = m.logloss / entropy;
  }
  if (with_gauc && all_have_groups_ && !groups_.empty()) {
    struct Item {
      uint64_t group;
      uint64_t key;
      bool operator<(const Item& o) const { return group != o.group ? group < o.group : key < o.key; }
    };
    std::vector<Item> items(m.rows);
    for (int64_t i = 0; i < m.rows; ++i) {
      items[i] = {groups_[i], (uint64_t{SortableBits(probs_[i])} << 1) | (labels_[i] > 0.5f ? 1u : 0u)};
    }
    ParallelSort(items, compute);
    std::vector<uint64_t> keys;
    double weighted = 0, weight = 0;
    int64_t i = 0;
    while (i < m.rows) {
      int64_t j = i;
      keys.clear();
      for (; j < m.rows && items[j].group == items[i].group; ++j) keys.push_back(items[j].key);
      const double auc = AucOfSortedKeys(keys.data(), static_cast<int64_t>(keys.size()));
      if (!std::isnan(auc)) {
        weighted += auc * static_cast<double>(keys.size());
        weight += static_cast<double>(keys.size());
        ++m.gauc_groups;
      }
      i = j;
    }
    if (weight > 0) m.gauc = weighted / weight;
  }
  return m;
}

}  // namespace rectrain::train

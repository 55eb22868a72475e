#include "rectrain/data/pass_plan.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "rectrain/base/random.h"

namespace rectrain::data {

std::vector<int64_t> PlanPassUnits(std::span<const int64_t> weights, bool shuffle, uint64_t seed,
                                   int64_t epoch, int rank, int world) {
  const int64_t n = static_cast<int64_t>(weights.size());
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (shuffle) {
    // Fisher-Yates from the end; the seed salt is "CHUNK" (the stream of every unit permutation).
    Rng rng(DeriveSeed(DeriveSeed(seed, 0x4348554e4bULL), static_cast<uint64_t>(epoch)));
    for (int64_t i = n - 1; i > 0; --i) {
      std::swap(order[static_cast<size_t>(i)], order[rng.Below(static_cast<uint64_t>(i + 1))]);
    }
  }
  if (world <= 1) return order;
  // Contiguous stretches of the ordered units: rank r's stretch ends at the unit boundary nearest
  // to (r + 1) / world of the total weight, keeping at least one unit for every later rank (so
  // each rank gets one when there are at least as many units as ranks). Every rank computes the
  // same boundaries, so the stretches partition the pass.
  std::vector<double> cum(static_cast<size_t>(n + 1), 0.0);
  for (int64_t k = 0; k < n; ++k) {
    const int64_t u = order[static_cast<size_t>(k)];
    const double w = weights[static_cast<size_t>(u)] > 0 ? static_cast<double>(weights[static_cast<size_t>(u)]) : 0.0;
    cum[static_cast<size_t>(k + 1)] = cum[static_cast<size_t>(k)] + w;
  }
  const double total = cum[static_cast<size_t>(n)];
  auto position = [&](int64_t k) {  // progress through the pass at boundary k
    return total > 0 ? cum[static_cast<size_t>(k)] / total : static_cast<double>(k) / static_cast<double>(n);
  };
  int64_t begin = 0, end = 0;
  for (int r = 0; r < world; ++r) {
    begin = end;
    if (r == world - 1) {
      end = n;
    } else {
      const double target = static_cast<double>(r + 1) / world;
      const int64_t lo = std::min(n, begin + 1), hi = std::max(lo, n - (world - 1 - r));
      end = lo;
      while (end < hi && std::abs(position(end + 1) - target) <= std::abs(position(end) - target)) ++end;
    }
    if (r == rank) break;
  }
  return std::vector<int64_t>(order.begin() + begin, order.begin() + end);
}

Status ValidateRankShare(const ReadOptions& o) {
  if (o.world < 1 || o.rank < 0 || o.rank >= o.world) {
    return InvalidArgumentError("rank " + std::to_string(o.rank) + " of a world of " + std::to_string(o.world) +
                                " is not a rank of the job");
  }
  return OkStatus();
}

RowRange SliceOfBatch(int64_t rows, int rank, int world) {
  if (world <= 1) return {0, rows};
  const int64_t base = rows / world, extra = rows % world;
  const int64_t begin = rank * base + std::min<int64_t>(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

void CopyBatchRows(const Batch& in, int64_t begin, int64_t end, Batch* out) {
  const int64_t n = end - begin;
  const int nd = in.num_dense;
  out->size = n;
  out->num_dense = nd;
  out->labels.assign(in.labels.begin() + begin, in.labels.begin() + end);
  out->dense.assign(in.dense.begin() + begin * nd, in.dense.begin() + end * nd);
  out->sparse.resize(in.sparse.size());
  for (size_t f = 0; f < in.sparse.size(); ++f) {
    const SparseColumn& src = in.sparse[f];
    SparseColumn& dst = out->sparse[f];
    if (src.single_valued()) {
      dst.offsets.clear();
      dst.ids.assign(src.ids.begin() + begin, src.ids.begin() + end);
    } else {
      const int32_t base = src.offsets[static_cast<size_t>(begin)];
      dst.offsets.resize(static_cast<size_t>(n + 1));
      for (int64_t k = 0; k <= n; ++k) dst.offsets[static_cast<size_t>(k)] = src.offsets[static_cast<size_t>(begin + k)] - base;
      dst.ids.assign(src.ids.begin() + base, src.ids.begin() + src.offsets[static_cast<size_t>(end)]);
    }
  }
  if (in.group_keys.empty()) {
    out->group_keys.clear();
  } else {
    out->group_keys.assign(in.group_keys.begin() + begin, in.group_keys.begin() + end);
  }
  // Only the slice starting at the batch's first row knows where it came from.
  out->source = begin == 0 ? in.source : std::string();
  out->first_line = begin == 0 ? in.first_line : 0;
}

namespace {

class SlicingReader final : public BatchReader {
 public:
  SlicingReader(std::unique_ptr<BatchReader> inner, int rank, int world)
      : inner_(std::move(inner)), rank_(rank), world_(world) {}

  Result<std::optional<Batch>> Next() override {
    RECTRAIN_ASSIGN_OR_RETURN(std::optional<Batch> global, inner_->Next());
    if (!global) return std::optional<Batch>();
    const RowRange r = SliceOfBatch(global->size, rank_, world_);
    Batch local;
    if (!spare_.empty()) {
      local = std::move(spare_.back());
      spare_.pop_back();
    }
    CopyBatchRows(*global, r.begin, r.end, &local);
    inner_->Recycle(std::move(*global));
    rows_ += local.size;
    return std::optional<Batch>(std::move(local));
  }
  void Recycle(Batch&& batch) override {
    if (spare_.size() < 4) spare_.push_back(std::move(batch));
  }
  ReaderStats Stats() const override {
    ReaderStats s = inner_->Stats();
    s.rows_read = rows_;
    return s;
  }
  std::string cache_note() const override { return inner_->cache_note(); }
  const std::vector<std::string>& dense_names() const override { return inner_->dense_names(); }
  const std::vector<std::string>& sparse_names() const override { return inner_->sparse_names(); }

 private:
  std::unique_ptr<BatchReader> inner_;
  const int rank_;
  const int world_;
  int64_t rows_ = 0;
  std::vector<Batch> spare_;
};

}  // namespace

std::unique_ptr<BatchReader> SliceBatches(std::unique_ptr<BatchReader> inner, int rank, int world) {
  return std::make_unique<SlicingReader>(std::move(inner), rank, world);
}

}  // namespace rectrain::data

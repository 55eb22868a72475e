// The local store: every table in this process. Per table, the dedupe and the Pull run together
// on one thread (many tables: tables spread over the pool; few: each table's Pull uses the pool,
// parallel over its shards); Push likewise.
#include <memory>

#include "rectrain/base/stopwatch.h"
#include "rectrain/ps/embedding_store.h"
#include "rectrain/ps/internal/batch_ids.h"

namespace rectrain::ps {
namespace {

std::vector<int> ReaderDims(const std::vector<embedding::TableReader*>& readers) {
  std::vector<int> dims;
  for (const auto* r : readers) dims.push_back(r->dim());
  return dims;
}

// `read_only`: a store over `readers` alone (Lookup in kEval only, no Push); `tables` is empty.
class LocalStore final : public EmbeddingStore {
 public:
  LocalStore(const nn::ModelSpec& spec, std::vector<embedding::TableReader*> readers,
             std::vector<embedding::EmbeddingTable*> tables, bool read_only)
      : ids_(spec, ReaderDims(readers)),
        readers_(std::move(readers)),
        tables_(std::move(tables)),
        read_only_(read_only) {}

  Status Lookup(const data::Batch& batch, embedding::PullMode mode, const ComputeContext& compute) override {
    if (mode != embedding::PullMode::kEval && read_only_) return ReadOnly();
    Stopwatch sw;
    const ComputeContext inner = ids_.AcrossTables(compute) ? ComputeContext{.num_threads = 1} : compute;
    RECTRAIN_RETURN_IF_ERROR(ids_.Dedupe(batch, compute, [&](int t) {
      if (mode == embedding::PullMode::kEval) return readers_[static_cast<size_t>(t)]->Read(ids_.unique(t), ids_.rows(t), inner);
      return tables_[static_cast<size_t>(t)]->Pull(ids_.unique(t), mode, ids_.rows(t), inner);
    }));
    ++stats_.lookups;
    stats_.ids_requested += ids_.num_unique();
    stats_.ids_served += ids_.num_unique();
    stats_.pull_seconds += sw.Seconds();
    return OkStatus();
  }

  std::span<const nn::PulledTable> pulled() const override { return ids_.pulled(); }
  std::span<const nn::FieldIndices> fields() const override { return ids_.fields(); }
  std::span<const std::span<float>> grads() const override { return ids_.grads(); }

  Status Push(const optim::StepContext& step, const ComputeContext& compute) override {
    if (read_only_) return ReadOnly();
    Stopwatch sw;
    const int n = ids_.num_tables();
    const bool across = ids_.AcrossTables(compute);
    const ComputeContext inner = across ? ComputeContext{.num_threads = 1} : compute;
    auto one = [&](int64_t t) {
      return tables_[static_cast<size_t>(t)]->Push(ids_.unique(static_cast<int>(t)), ids_.grads_of(static_cast<int>(t)),
                                                    step, inner);
    };
    Status s;
    if (across) {
      s = ParallelFor(compute, n, 1, [&](int64_t begin, int64_t end) -> Status {
        for (int64_t t = begin; t < end; ++t) RECTRAIN_RETURN_IF_ERROR(one(t));
        return OkStatus();
      });
    } else {
      for (int t = 0; t < n && s.ok(); ++t) s = one(t);
    }
    stats_.push_seconds += sw.Seconds();
    return s;
  }

  int64_t num_unique() const override { return ids_.num_unique(); }
  const StoreStats& stats() const override { return stats_; }

 private:
  static Status ReadOnly() {
    return FailedPreconditionError("a read-only embedding store (a serving model's) neither trains nor admits ids");
  }

  internal::BatchIds ids_;
  std::vector<embedding::TableReader*> readers_;  // every table, for kEval
  std::vector<embedding::EmbeddingTable*> tables_;  // the same tables, for kTrain and Push
  const bool read_only_;
  StoreStats stats_;
};

}  // namespace

std::vector<int> TableDims(const std::vector<embedding::EmbeddingTable*>& tables) {
  std::vector<int> dims;
  for (const auto* t : tables) dims.push_back(t->dim());
  return dims;
}

std::unique_ptr<EmbeddingStore> MakeLocalStore(const nn::ModelSpec& spec,
                                               std::vector<embedding::EmbeddingTable*> tables) {
  std::vector<embedding::TableReader*> readers(tables.begin(), tables.end());
  return std::make_unique<LocalStore>(spec, std::move(readers), std::move(tables), /*read_only=*/false);
}

std::unique_ptr<EmbeddingStore> MakeReadOnlyStore(const nn::ModelSpec& spec,
                                                  std::vector<embedding::TableReader*> tables) {
  return std::make_unique<LocalStore>(spec, std::move(tables), std::vector<embedding::EmbeddingTable*>{},
                                      /*read_only=*/true);
}

}  // namespace rectrain::ps

// rectrain/testing/fake_table.h: test-only EmbeddingTable whose rows are a pure function of the
// id (Value(id, d)), recording what was pulled and pushed; Save/Load write a line of text with
// `saved_value`. Used by the store tests (ps/) and the checkpoint tests (checkpoint/).
// Thread safety: none (a test's object).
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include "rectrain/embedding/embedding_table.h"

namespace rectrain::testing {

class FakeTable : public embedding::EmbeddingTable {
 public:
  explicit FakeTable(std::string name, int dim) {
    config_.name = std::move(name);
    config_.dim = dim;
  }
  const embedding::EmbeddingTableConfig& config() const override { return config_; }
  Status Pull(std::span<const uint64_t> ids, embedding::PullMode mode, std::span<float> out,
              const ComputeContext&) override {
    if (out.size() != ids.size() * static_cast<size_t>(dim())) return InvalidArgumentError("size");
    for (size_t i = 0; i < ids.size(); ++i) {
      for (int d = 0; d < dim(); ++d) out[i * dim() + d] = Value(ids[i], d);
    }
    pulls.emplace_back(ids.begin(), ids.end());
    last_mode = mode;
    return OkStatus();
  }
  Result<bool> PushRows(std::span<const uint64_t> ids, std::span<const float> grads, const optim::StepContext& step,
                        const ComputeContext&, std::span<float>) override {
    pushed_ids.assign(ids.begin(), ids.end());
    pushed_grads.assign(grads.begin(), grads.end());
    pushed_lr = step.learning_rate;
    return false;
  }
  Status ApplyOovGradient(std::span<const float>, const optim::StepContext&) override { return OkStatus(); }
  embedding::TableStats Stats() const override { return {}; }
  Status ForEachRow(const RowVisitor&) const override { return OkStatus(); }
  std::span<const float> OovWeights() const override { return {}; }
  void TrackRemovedIds(bool) override {}
  std::vector<uint64_t> TakeRemovedIds() override { return {}; }  // never removes a row
  void TrackChanges(embedding::ChangeLog, bool) override {}
  Status SaveChanges(const std::string& path) const override { return Save(path); }
  Status ForEachChangedRow(embedding::ChangeLog, const RowVisitor&, std::vector<uint64_t>*) const override {
    return OkStatus();
  }
  void MarkSaved(embedding::ChangeLog) override {}
  Status LoadChanges(const std::string& path, const embedding::LoadOptions& options) override {
    return Load(path, options);
  }
  Status Save(const std::string& path) const override {
    std::ofstream out(path);
    out << config_.name << " " << saved_value;
    return out ? OkStatus() : InternalError("cannot write " + path);
  }
  using embedding::EmbeddingTable::Load;
  Status Load(const std::string& path, const embedding::LoadOptions&) override {
    std::ifstream in(path);
    std::string name;
    if (!(in >> name >> saved_value)) return NotFoundError(path);
    return OkStatus();
  }
  float Value(uint64_t id, int d) const { return static_cast<float>(id % 1000) + 0.001f * d; }

  std::vector<std::vector<uint64_t>> pulls;
  embedding::PullMode last_mode = embedding::PullMode::kTrain;
  std::vector<uint64_t> pushed_ids;
  std::vector<float> pushed_grads;
  float pushed_lr = 0;
  int saved_value = 0;

 private:
  embedding::EmbeddingTableConfig config_;
};

}  // namespace rectrain::testing

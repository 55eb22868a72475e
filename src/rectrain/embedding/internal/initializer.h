// rectrain/embedding/internal/initializer.h: private. Initial values of embedding rows. A row's
// values depend only on (seed, id, initializer config): not on arrival order, shard count, thread
// count or whether the row was evicted before (a re-admitted id starts from the same values).
// Thread safety: const methods are safe to call concurrently.
#pragma once

#include <cstdint>
#include <span>

#include "rectrain/base/result.h"
#include "rectrain/embedding/embedding_table.h"

namespace rectrain::embedding::internal {

class RowInitializer {
 public:
  // InvalidArgument names embedding.initializer.<field>.
  static Result<RowInitializer> Make(const InitializerConfig& config, uint64_t seed);

  // Fills `w` with row `id`'s initial values.
  void Fill(uint64_t id, std::span<float> w) const;

 private:
  using Kind = InitializerType;
  RowInitializer(Kind kind, float stddev, float scale, uint64_t seed)
      : kind_(kind), stddev_(stddev), scale_(scale), seed_(seed) {}

  Kind kind_;
  float stddev_;
  float scale_;
  uint64_t seed_;
};

}  // namespace rectrain::embedding::internal

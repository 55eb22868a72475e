// rectrain/stream/internal/redis_source.h (internal to stream/): the Redis Streams MessageSource
// over hiredis (source.h has the contract; redis_source.cc how positions map onto groups).
// Thread safety: as MessageSource.
#pragma once

#include <memory>

#include "rectrain/base/result.h"
#include "rectrain/stream/source.h"

namespace rectrain::stream::internal {

Result<std::unique_ptr<MessageSource>> OpenRedisSource(const StreamConfig& config, int rank, int world);

}  // namespace rectrain::stream::internal

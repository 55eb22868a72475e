// rectrain/train/internal/publish_gather.cc: see publish_gather.h.
#include "rectrain/train/internal/publish_gather.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace rectrain::train::internal {
namespace {

// Every table's parts of one rank, one array per field, tables one after another; `sizes` holds
// each table's id count and removed-id count.
struct Parts {
  std::vector<int64_t> sizes;
  std::vector<uint64_t> ids, removed;
  std::vector<uint32_t> updates;
  std::vector<float> rows;
};

template <typename T>
void Append(std::vector<T>* to, const std::vector<T>& from, size_t at, size_t n) {
  to->insert(to->end(), from.begin() + static_cast<std::ptrdiff_t>(at), from.begin() + static_cast<std::ptrdiff_t>(at + n));
}

// Every rank's `send` on rank 0, in rank order (an AllToAllV in which each rank sends to rank 0
// alone); the other ranks receive nothing.
template <typename T>
Status GatherOnRankZero(dist::Communicator& comm, const std::vector<T>& send, std::vector<T>* recv) {
  std::vector<int64_t> counts(static_cast<size_t>(comm.world()), 0), received;
  counts[0] = static_cast<int64_t>(send.size());
  return comm.AllToAllV(std::span<const T>(send), counts, recv, &received);
}

Status GatherParts(dist::Communicator& comm, const Parts& mine, Parts* all) {
  RECTRAIN_RETURN_IF_ERROR(GatherOnRankZero(comm, mine.sizes, &all->sizes));
  RECTRAIN_RETURN_IF_ERROR(GatherOnRankZero(comm, mine.ids, &all->ids));
  RECTRAIN_RETURN_IF_ERROR(GatherOnRankZero(comm, mine.updates, &all->updates));
  RECTRAIN_RETURN_IF_ERROR(GatherOnRankZero(comm, mine.rows, &all->rows));
  return GatherOnRankZero(comm, mine.removed, &all->removed);
}

}  // namespace

Status GatherSnapshot(dist::Communicator& comm, serve::ModelSnapshot* snapshot) {
  if (!comm.distributed()) return OkStatus();
  Parts mine, all;
  if (comm.rank() != 0) {  // rank 0 keeps its own part where it is
    for (serve::SnapshotTable& t : snapshot->tables) {
      mine.sizes.push_back(static_cast<int64_t>(t.ids.size()));
      mine.sizes.push_back(static_cast<int64_t>(t.removed.size()));
      Append(&mine.ids, t.ids, 0, t.ids.size());
      Append(&mine.updates, t.updates, 0, t.updates.size());
      Append(&mine.rows, t.rows, 0, t.rows.size());
      Append(&mine.removed, t.removed, 0, t.removed.size());
      t = serve::SnapshotTable{.name = t.name, .dim = t.dim};
    }
  }
  RECTRAIN_RETURN_IF_ERROR(GatherParts(comm, mine, &all));
  if (comm.rank() != 0) return OkStatus();
  const size_t tables = snapshot->tables.size();
  if (all.sizes.size() != 2 * tables * static_cast<size_t>(comm.world() - 1)) {
    return InvalidArgumentError("the ranks' snapshots have different numbers of tables (rank 0: " +
                                std::to_string(tables) + ")");
  }
  size_t k = 0, id_at = 0, row_at = 0, removed_at = 0;
  for (int r = 1; r < comm.world(); ++r) {
    for (serve::SnapshotTable& t : snapshot->tables) {
      const size_t n = static_cast<size_t>(all.sizes[k++]), m = static_cast<size_t>(all.sizes[k++]);
      const size_t row_n = n * static_cast<size_t>(t.dim);
      if (id_at + n > all.ids.size() || id_at + n > all.updates.size() || row_at + row_n > all.rows.size() ||
          removed_at + m > all.removed.size()) {
        return InvalidArgumentError("rank " + std::to_string(r) + "'s part of table '" + t.name +
                                    "' is larger than what it sent");
      }
      Append(&t.ids, all.ids, id_at, n);
      Append(&t.updates, all.updates, id_at, n);
      Append(&t.rows, all.rows, row_at, row_n);
      Append(&t.removed, all.removed, removed_at, m);
      id_at += n;
      row_at += row_n;
      removed_at += m;
    }
  }
  return serve::CheckSnapshot(*snapshot);
}

}  // namespace rectrain::train::internal

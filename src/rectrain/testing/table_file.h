// rectrain/testing/table_file.h: test-only. Embedding table checkpoint files
// (docs/formats/checkpoint-embedding.md) compared by contents: two tables with the same rows,
// pending ids, OOV row, clock and counters save files that differ only in the order their hash
// maps hold the rows in (and so in the blocks' CRCs); ReadCanonicalTable takes that order out.
// Thread safety: reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace rectrain::testing {

// The content of an embedding table file (docs/formats/checkpoint-embedding.md) with rows and
// pending ids sorted by id, so two tables with equal contents compare equal whatever their
// slot order. Empty on a malformed file.
struct CanonicalTable {
  std::string header;  // the header's bytes from the version to the name: dims, counts, tick, counters
  std::string oov;
  std::vector<std::pair<uint64_t, std::string>> rows;     // id -> (updates, tick, payload)
  std::vector<std::pair<uint64_t, std::string>> pending;  // id -> (sightings, tick in version 2)
  bool ok = false;
  bool operator==(const CanonicalTable& o) const {
    return ok && o.ok && header == o.header && oov == o.oov && rows == o.rows && pending == o.pending;
  }
};

CanonicalTable ReadCanonicalTable(const std::string& path);

}  // namespace rectrain::testing

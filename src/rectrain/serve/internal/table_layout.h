// rectrain/serve/internal/table_layout.h (internal to serve/): the header of a serving table
// file (docs/formats/serving-model.md), shared by its writer and the memory-mapped reader.
#pragma once

#include <cstdint>
#include <cstring>

namespace rectrain::serve::internal {

inline constexpr char kTableMagic[8] = {'R', 'T', 'S', 'R', 'V', 'T', 'B', '1'};
inline constexpr uint32_t kTableVersion = 1;

// Little-endian, 64 bytes, at offset 0. Sections start at multiples of 64.
struct TableHeader {
  char magic[8] = {'R', 'T', 'S', 'R', 'V', 'T', 'B', '1'};
  uint32_t version = kTableVersion;
  uint32_t dim = 0;
  uint32_t row_type = 0;         // serve::RowType
  uint32_t row_bytes = 0;
  uint64_t rows = 0;             // stored rows; row 0 is the OOV row
  uint64_t slots = 0;            // index slots, a power of two > rows
  uint64_t ids_offset = 0;       // slots × u64: the id in each slot
  uint64_t slot_rows_offset = 0; // slots × u32: the row of each slot, 0 = empty
  uint64_t rows_offset = 0;      // rows × row_bytes
};
static_assert(sizeof(TableHeader) == 64);

inline uint64_t AlignUp(uint64_t x) { return (x + 63) / 64 * 64; }

}  // namespace rectrain::serve::internal

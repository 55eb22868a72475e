#include "rectrain/testing/table_file.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

namespace rectrain::testing {

CanonicalTable ReadCanonicalTable(const std::string& path) {
  CanonicalTable t;
  std::ifstream in(path, std::ios::binary);
  const std::string d((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (d.size() < 84 || d.compare(0, 8, "RTEMBTB1") != 0) return t;
  auto u32 = [&](size_t off) { uint32_t v; std::memcpy(&v, d.data() + off, 4); return v; };
  auto u64 = [&](size_t off) { uint64_t v; std::memcpy(&v, d.data() + off, 8); return v; };
  const uint32_t dim = u32(12), width = u32(16), name_len = u32(20);
  const uint64_t row_count = u64(24), pending_count = u64(32);
  // Version 2 added two counters to the header and a tick to pending records.
  const size_t name_at = u32(8) >= 2 ? 96 : 80, pending_bytes = u32(8) >= 2 ? 16 : 12;
  t.header = d.substr(8, name_at - 8 + name_len);
  size_t pos = name_at + name_len + 4;
  const size_t payload = 4 * (dim + width);
  t.oov = d.substr(pos, 4 + payload);
  pos += 4 + payload + 4;
  for (uint64_t left = row_count; left > 0;) {
    const uint32_t n = u32(pos);
    pos += 4;
    for (uint32_t i = 0; i < n; ++i) {
      t.rows.emplace_back(u64(pos), d.substr(pos + 8, 8 + payload));
      pos += 16 + payload;
    }
    pos += 4;
    left -= n;
  }
  for (uint64_t left = pending_count; left > 0;) {
    const uint32_t n = u32(pos);
    pos += 4;
    for (uint32_t i = 0; i < n; ++i) {
      t.pending.emplace_back(u64(pos), d.substr(pos + 8, pending_bytes - 8));
      pos += pending_bytes;
    }
    pos += 4;
    left -= n;
  }
  if (pos + 8 != d.size() || d.compare(pos, 8, "RTEMBEND") != 0) return t;
  std::sort(t.rows.begin(), t.rows.end());
  std::sort(t.pending.begin(), t.pending.end());
  t.ok = true;
  return t;
}

}  // namespace rectrain::testing

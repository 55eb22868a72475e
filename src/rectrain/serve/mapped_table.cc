// rectrain/serve/mapped_table.cc: see mapped_table.h.
#include "rectrain/serve/mapped_table.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "rectrain/base/random.h"
#include "rectrain/serve/internal/table_layout.h"

namespace rectrain::serve {

Result<std::unique_ptr<MappedTable>> MappedTable::Open(const std::string& path, const PackageTable& expected,
                                                       embedding::EmbeddingTableConfig config) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "cannot open " + path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return ErrnoToStatus(e, "cannot stat " + path);
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size < sizeof(internal::TableHeader)) {
    ::close(fd);
    return DataLossError(path + " is too short for a serving table (" + std::to_string(size) + " bytes)");
  }
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  const int map_errno = errno;
  ::close(fd);  // the mapping keeps the file
  if (p == MAP_FAILED) return ErrnoToStatus(map_errno, "cannot map " + path);
  std::unique_ptr<MappedTable> t(new MappedTable());
  t->base_ = static_cast<const uint8_t*>(p);
  t->size_ = size;
  internal::TableHeader h;
  std::memcpy(&h, t->base_, sizeof(h));
  auto loss = [&](const std::string& what) { return DataLossError(path + ": " + what + " (re-export the model)"); };
  if (std::memcmp(h.magic, internal::kTableMagic, 8) != 0) return loss("not a serving table file (bad magic)");
  if (h.version != internal::kTableVersion) return loss("table format version " + std::to_string(h.version) + " is not 1");
  if (h.dim != static_cast<uint32_t>(expected.dim) || h.row_type != static_cast<uint32_t>(expected.type) ||
      h.rows != static_cast<uint64_t>(expected.rows)) {
    return loss("header (dim " + std::to_string(h.dim) + ", " + std::to_string(h.rows) +
                " rows) differs from the manifest (dim " + std::to_string(expected.dim) + ", " +
                std::to_string(expected.rows) + " rows)");
  }
  if (config.dim != expected.dim) {
    return InvalidArgumentError("table '" + config.name + "' has dim " + std::to_string(config.dim) +
                                " in the model config but " + std::to_string(expected.dim) + " in " + path);
  }
  const uint64_t row_bytes = static_cast<uint64_t>(RowBytes(expected.type, expected.dim));
  const bool pow2 = h.slots >= 2 && (h.slots & (h.slots - 1)) == 0 && h.slots > h.rows;
  if (!pow2 || h.row_bytes != row_bytes || h.ids_offset < sizeof(h) || h.slot_rows_offset < h.ids_offset + 8 * h.slots ||
      h.rows_offset < h.slot_rows_offset + 4 * h.slots || h.rows_offset + h.rows * row_bytes != size ||
      h.ids_offset % 8 != 0 || h.slot_rows_offset % 4 != 0) {
    return loss("inconsistent section offsets or sizes");
  }
  t->config_ = std::move(config);
  t->type_ = expected.type;
  t->dim_ = expected.dim;
  t->rows_ = h.rows;
  t->mask_ = h.slots - 1;
  t->row_bytes_ = row_bytes;
  t->slot_ids_ = reinterpret_cast<const uint64_t*>(t->base_ + h.ids_offset);
  t->slot_rows_ = reinterpret_cast<const uint32_t*>(t->base_ + h.slot_rows_offset);
  t->row_data_ = t->base_ + h.rows_offset;
  return t;
}

MappedTable::~MappedTable() {
  if (base_ != nullptr) ::munmap(const_cast<uint8_t*>(base_), size_);
}

uint64_t MappedTable::RowOf(uint64_t id) const {
  // Probes stop at an empty slot; the writer keeps the load factor <= 2/3, so one always exists.
  for (uint64_t s = Mix64(id) & mask_;; s = (s + 1) & mask_) {
    const uint32_t r = slot_rows_[s];
    if (r == 0) return 0;
    if (slot_ids_[s] == id) return r < rows_ ? r : 0;
  }
}

Status MappedTable::Read(std::span<const uint64_t> ids, std::span<float> out, const ComputeContext& compute) {
  (void)compute;  // serving batches are small: one thread, no fork/join cost
  if (out.size() != ids.size() * static_cast<size_t>(dim_)) {
    return InvalidArgumentError("Read: out has " + std::to_string(out.size()) + " floats, expected " +
                                std::to_string(ids.size() * static_cast<size_t>(dim_)));
  }
  int64_t oov = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const uint64_t r = RowOf(ids[i]);
    oov += r == 0 ? 1 : 0;
    DecodeRow(type_, row_data_ + r * row_bytes_, dim_, out.data() + i * static_cast<size_t>(dim_));
  }
  lookups_.fetch_add(static_cast<int64_t>(ids.size()), std::memory_order_relaxed);
  oov_lookups_.fetch_add(oov, std::memory_order_relaxed);
  return OkStatus();
}

embedding::TableStats MappedTable::Stats() const {
  embedding::TableStats s;
  s.rows = static_cast<int64_t>(rows_) - 1;
  s.bytes = static_cast<int64_t>(size_);
  s.lookups = lookups_.load(std::memory_order_relaxed);
  s.oov_lookups = oov_lookups_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace rectrain::serve

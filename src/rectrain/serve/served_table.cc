// rectrain/serve/served_table.cc: see served_table.h.
#include "rectrain/serve/served_table.h"

#include <cstring>

namespace rectrain::serve {

ServedTable::ServedTable(std::shared_ptr<MappedTable> base, std::shared_ptr<const Overlay> overlay)
    : base_(std::move(base)), overlay_(std::move(overlay)), row_bytes_(RowBytes(base_->type(), base_->dim())) {}

ServedTable::ServedTable(std::shared_ptr<MappedTable> base)
    : ServedTable(base, std::make_shared<Overlay>(Overlay{.live_rows = base->rows() - 1})) {}

const uint8_t* ServedTable::Find(uint64_t id) const {
  const Overlay& o = *overlay_;
  if (!o.slot.empty()) {
    if (auto it = o.slot.find(id); it != o.slot.end()) {
      return it->second < 0 ? nullptr : o.rows.data() + it->second * row_bytes_;
    }
  }
  return base_->StoredRow(id);
}

const uint8_t* ServedTable::oov_row() const { return overlay_->oov.empty() ? base_->oov_row() : overlay_->oov.data(); }

int64_t ServedTable::rows() const { return overlay_->live_rows + 1; }
int64_t ServedTable::overlay_rows() const { return static_cast<int64_t>(overlay_->slot.size()); }

void ServedTable::ForEachRow(const std::function<void(uint64_t id, const uint8_t* row)>& fn) const {
  const Overlay& o = *overlay_;
  base_->ForEachStored([&](uint64_t id, const uint8_t* row) {
    if (!o.slot.contains(id)) fn(id, row);
  });
  for (const auto& [id, r] : o.slot) {
    if (r >= 0) fn(id, o.rows.data() + r * row_bytes_);
  }
}

Result<std::unique_ptr<ServedTable>> ServedTable::WithDelta(const TableDelta& d) const {
  if (d.dim != dim() || d.type != type()) {
    return InvalidArgumentError("table '" + config().name + "': the delta has dim " + std::to_string(d.dim) + " and " +
                                std::string(RowTypeName(d.type)) + " rows, the served table dim " +
                                std::to_string(dim()) + " and " + std::string(RowTypeName(type())) + " rows");
  }
  auto next = std::make_shared<Overlay>(*overlay_);
  next->oov = d.oov;
  const size_t rb = static_cast<size_t>(row_bytes_);
  for (size_t i = 0; i < d.ids.size(); ++i) {
    const uint8_t* src = d.rows.data() + i * rb;
    if (Find(d.ids[i]) == nullptr) ++next->live_rows;
    auto [it, inserted] = next->slot.try_emplace(d.ids[i], -1);
    if (it->second < 0) {  // a new overlay row (the id was in the base, removed, or unknown)
      it->second = static_cast<int64_t>(next->rows.size() / rb);
      next->rows.insert(next->rows.end(), src, src + rb);
    } else {
      std::memcpy(next->rows.data() + it->second * row_bytes_, src, rb);
    }
  }
  for (uint64_t id : d.removed) {
    if (Find(id) == nullptr) continue;  // nothing to remove
    --next->live_rows;
    next->slot[id] = -1;  // its old overlay row stays unused until the next full export
  }
  return std::unique_ptr<ServedTable>(new ServedTable(base_, std::move(next)));
}

Status ServedTable::Read(std::span<const uint64_t> ids, std::span<float> out, const ComputeContext& compute) {
  (void)compute;  // serving batches are small: one thread
  const int d = dim();
  if (out.size() != ids.size() * static_cast<size_t>(d)) {
    return InvalidArgumentError("Read: out has " + std::to_string(out.size()) + " floats, expected " +
                                std::to_string(ids.size() * static_cast<size_t>(d)));
  }
  const RowType t = type();
  const uint8_t* oov = oov_row();
  int64_t unknown = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const uint8_t* row = Find(ids[i]);
    unknown += row == nullptr ? 1 : 0;
    DecodeRow(t, row != nullptr ? row : oov, d, out.data() + i * static_cast<size_t>(d));
  }
  lookups_.fetch_add(static_cast<int64_t>(ids.size()), std::memory_order_relaxed);
  oov_lookups_.fetch_add(unknown, std::memory_order_relaxed);
  return OkStatus();
}

embedding::TableStats ServedTable::Stats() const {
  embedding::TableStats s;
  s.rows = overlay_->live_rows;
  s.bytes = base_->mapped_bytes() + static_cast<int64_t>(overlay_->rows.size() + overlay_->slot.size() * 24);
  s.lookups = lookups_.load(std::memory_order_relaxed);
  s.oov_lookups = oov_lookups_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace rectrain::serve

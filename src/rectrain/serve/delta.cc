// rectrain/serve/delta.cc: see delta.h (format: docs/formats/serving-delta.md).
#include "rectrain/serve/delta.h"

#include <algorithm>
#include <cstring>

#include <nlohmann/json.hpp>

#include "rectrain/io/file.h"
#include "rectrain/serve/internal/manifest_json.h"

namespace rectrain::serve {
namespace {

using nlohmann::json;

constexpr char kDeltaMagic[8] = {'R', 'T', 'S', 'R', 'V', 'D', 'L', '1'};
constexpr uint32_t kDeltaFileVersion = 1;
constexpr char kDeltaFormat[] = "rectrain-serving-delta";

struct DeltaHeader {
  char magic[8] = {'R', 'T', 'S', 'R', 'V', 'D', 'L', '1'};
  uint32_t version = kDeltaFileVersion;
  uint32_t dim = 0;
  uint32_t row_type = 0;
  uint32_t row_bytes = 0;
  uint64_t changed = 0;
  uint64_t removed = 0;
  uint64_t reserved = 0;
};
static_assert(sizeof(DeltaHeader) == 48);

template <typename T>
void Append(std::string* out, const T* p, size_t n) {
  out->append(reinterpret_cast<const char*>(p), n * sizeof(T));
}

}  // namespace

std::string DeltaManifestToJson(const DeltaManifest& m) {
  json tables = json::array();
  for (const auto& t : m.tables) {
    tables.push_back({{"name", t.name}, {"dim", t.dim}, {"row_type", RowTypeName(t.type)}, {"changed_rows", t.changed},
                      {"removed_ids", t.removed}, {"rows", t.rows}, {"file", internal::FileJson(t.file)}});
  }
  json j = {{"format", kDeltaFormat},
                  {"format_version", m.format_version},
                  {"version", m.version},
                  {"base", {{"version", m.base_version}, {"manifest_xxh64", internal::Hex(m.base_manifest_xxh64)}}},
                  {"created", m.created},
                  {"trained_steps", m.trained_steps},
                  {"source_run", m.source_run},
                  {"dense", internal::FileJson(m.dense)},
                  {"tables", tables}};
  internal::PutEvents(m.events, &j);
  return j.dump(2) + "\n";
}

bool IsDeltaManifest(std::string_view text) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.value("format", "") == kDeltaFormat;
}

Result<DeltaManifest> DeltaManifestFromJson(std::string_view text, const std::string& source) {
  DeltaManifest m;
  try {
    const json j = json::parse(text);
    if (j.value("format", "") != kDeltaFormat) {
      return DataLossError(source + " is not a rectrain serving delta manifest (no \"format\": \"" + kDeltaFormat + "\")");
    }
    m.format_version = j.at("format_version").get<int>();
    if (m.format_version > kDeltaFormatVersion) {
      return InvalidArgumentError(source + " has delta format version " + std::to_string(m.format_version) +
                                  "; this rectrain reads up to " + std::to_string(kDeltaFormatVersion) +
                                  " (upgrade rectrain or publish a full export)");
    }
    m.version = j.at("version").get<int64_t>();
    m.base_version = j.at("base").at("version").get<int64_t>();
    m.base_manifest_xxh64 = std::stoull(j.at("base").at("manifest_xxh64").get<std::string>(), nullptr, 16);
    m.created = j.at("created").get<std::string>();
    m.trained_steps = j.at("trained_steps").get<int64_t>();
    m.source_run = j.at("source_run").get<std::string>();
    m.dense = internal::FileFromJson(j.at("dense"));
    for (const json& t : j.at("tables")) {
      DeltaTableEntry e;
      e.name = t.at("name").get<std::string>();
      e.dim = t.at("dim").get<int>();
      RECTRAIN_ASSIGN_OR_RETURN(e.type, ParseRowType(t.at("row_type").get<std::string>()));
      e.changed = t.at("changed_rows").get<int64_t>();
      e.removed = t.at("removed_ids").get<int64_t>();
      e.rows = t.at("rows").get<int64_t>();
      e.file = internal::FileFromJson(t.at("file"));
      if (e.dim < 1 || e.changed < 0 || e.removed < 0 || e.rows < 1) {
        return DataLossError(source + ": table '" + e.name + "' has a negative count or a dim below 1");
      }
      m.tables.push_back(std::move(e));
    }
    m.events = internal::EventsFromJson(j);
  } catch (const std::exception& e) {
    return DataLossError(source + " is not a valid delta manifest: " + e.what());
  }
  return m;
}

Status WriteTableDeltaFile(const std::string& path, const TableDelta& d) {
  const size_t rb = static_cast<size_t>(RowBytes(d.type, d.dim));
  if (d.oov.size() != rb || d.rows.size() != d.ids.size() * rb) {
    return InvalidArgumentError("WriteTableDeltaFile: row bytes do not match dim and row type");
  }
  DeltaHeader h;
  h.dim = static_cast<uint32_t>(d.dim);
  h.row_type = static_cast<uint32_t>(d.type);
  h.row_bytes = static_cast<uint32_t>(rb);
  h.changed = d.ids.size();
  h.removed = d.removed.size();
  std::string out;
  out.reserve(sizeof(h) + rb + d.ids.size() * (8 + rb) + d.removed.size() * 8);
  Append(&out, &h, 1);
  Append(&out, d.oov.data(), d.oov.size());
  Append(&out, d.ids.data(), d.ids.size());
  Append(&out, d.rows.data(), d.rows.size());
  Append(&out, d.removed.data(), d.removed.size());
  return io::WriteFileAtomically(path, out);
}

Result<TableDelta> ReadTableDeltaFile(const std::string& path, const DeltaTableEntry& expected) {
  RECTRAIN_ASSIGN_OR_RETURN(const std::string bytes, io::ReadFileToString(path));
  auto loss = [&](const std::string& what) { return DataLossError(path + ": " + what + " (publish a full export)"); };
  DeltaHeader h;
  if (bytes.size() < sizeof(h)) return loss("too short for a serving delta table");
  std::memcpy(&h, bytes.data(), sizeof(h));
  if (std::memcmp(h.magic, kDeltaMagic, 8) != 0) return loss("not a serving delta table (bad magic)");
  if (h.version != kDeltaFileVersion) return loss("delta table version " + std::to_string(h.version) + " is not 1");
  const uint64_t rb = static_cast<uint64_t>(RowBytes(expected.type, expected.dim));
  if (h.dim != static_cast<uint32_t>(expected.dim) || h.row_type != static_cast<uint32_t>(expected.type) ||
      h.row_bytes != rb || h.changed != static_cast<uint64_t>(expected.changed) ||
      h.removed != static_cast<uint64_t>(expected.removed)) {
    return loss("header (dim " + std::to_string(h.dim) + ", " + std::to_string(h.changed) + " changed, " +
                std::to_string(h.removed) + " removed) differs from the manifest (dim " + std::to_string(expected.dim) +
                ", " + std::to_string(expected.changed) + " changed, " + std::to_string(expected.removed) + " removed)");
  }
  if (bytes.size() != sizeof(h) + rb + h.changed * (8 + rb) + h.removed * 8) return loss("sizes do not add up");
  TableDelta d;
  d.dim = expected.dim;
  d.type = expected.type;
  const char* p = bytes.data() + sizeof(h);
  d.oov.assign(p, p + rb);
  p += rb;
  d.ids.resize(h.changed);
  std::memcpy(d.ids.data(), p, h.changed * 8);
  p += h.changed * 8;
  d.rows.assign(p, p + h.changed * rb);
  p += h.changed * rb;
  d.removed.resize(h.removed);
  std::memcpy(d.removed.data(), p, h.removed * 8);
  const auto strictly_ascending = [](const std::vector<uint64_t>& v) {
    return std::adjacent_find(v.begin(), v.end(), std::greater_equal<uint64_t>()) == v.end();
  };
  if (!strictly_ascending(d.ids) || !strictly_ascending(d.removed)) return loss("ids are not in ascending order");
  return d;
}

Status VerifyDelta(const std::string& dir, const DeltaManifest& m, bool checksums) {
  std::vector<const PackageFile*> files = {&m.dense};
  for (const auto& t : m.tables) files.push_back(&t.file);
  return VerifyFiles(dir, files, checksums);
}

}  // namespace rectrain::serve

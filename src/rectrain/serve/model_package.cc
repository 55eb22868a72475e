// rectrain/serve/model_package.cc: see model_package.h (layout: docs/formats/serving-model.md).
#include "rectrain/serve/model_package.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "rectrain/base/random.h"
#include "rectrain/io/file.h"
#include "rectrain/serve/internal/manifest_json.h"
#include "rectrain/serve/internal/table_layout.h"

namespace rectrain::serve {
namespace fs = std::filesystem;
using nlohmann::json;
using internal::FileFromJson;
using internal::FileJson;
using internal::Hex;

std::string_view RowTypeName(RowType t) {
  switch (t) {
    case RowType::kFp32: return "fp32";
    case RowType::kFp16: return "fp16";
    case RowType::kInt8: return "int8";
  }
  return "?";
}

Result<RowType> ParseRowType(std::string_view name) {
  for (RowType t : {RowType::kFp32, RowType::kFp16, RowType::kInt8}) {
    if (name == RowTypeName(t)) return t;
  }
  return InvalidArgumentError("unknown row type '" + std::string(name) + "' (choose fp32, fp16 or int8)");
}

int64_t RowBytes(RowType t, int dim) {
  switch (t) {
    case RowType::kFp32: return 4LL * dim;
    case RowType::kFp16: return 2LL * dim;
    case RowType::kInt8: return 4LL + dim;  // fp32 scale, then dim int8 weights
  }
  return 0;
}

namespace {

// IEEE binary16 <-> binary32, round to nearest even (no F16C needed: export and load are not hot).
uint16_t FloatToHalf(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504: inf
  if (abs < 0x38800000u) {  // subnormal half (or zero)
    const float a = std::bit_cast<float>(abs);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(a * 16777216.0f)));  // a / 2^-24
  }
  uint32_t m = abs + 0xc8000fffu + ((abs >> 13) & 1u);  // rebias exponent (-112 << 23) and round
  return static_cast<uint16_t>(sign | (m >> 13));
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) return std::bit_cast<float>(sign) + (sign ? -1.0f : 1.0f) * static_cast<float>(m) * 5.9604645e-8f;
  if (e == 31) return std::bit_cast<float>(sign | 0x7f800000u | (m << 13));
  return std::bit_cast<float>(sign | ((e + 112) << 23) | (m << 13));
}

}  // namespace

void EncodeRow(RowType type, const float* w, int dim, uint8_t* row) {
  switch (type) {
    case RowType::kFp32:
      std::memcpy(row, w, 4 * static_cast<size_t>(dim));
      return;
    case RowType::kFp16:
      for (int i = 0; i < dim; ++i) {
        const uint16_t h = FloatToHalf(w[i]);
        std::memcpy(row + 2 * i, &h, 2);
      }
      return;
    case RowType::kInt8: {
      float amax = 0;
      for (int i = 0; i < dim; ++i) amax = std::max(amax, std::fabs(w[i]));
      const float scale = amax / 127.0f;
      std::memcpy(row, &scale, 4);
      for (int i = 0; i < dim; ++i) {
        const float q = scale > 0 ? std::nearbyint(w[i] / scale) : 0.0f;
        row[4 + i] = static_cast<uint8_t>(static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f)));
      }
      return;
    }
  }
}

void DecodeRow(RowType type, const uint8_t* row, int dim, float* out) {
  switch (type) {
    case RowType::kFp32:
      std::memcpy(out, row, 4 * static_cast<size_t>(dim));
      return;
    case RowType::kFp16:
      for (int i = 0; i < dim; ++i) {
        uint16_t h;
        std::memcpy(&h, row + 2 * i, 2);
        out[i] = HalfToFloat(h);
      }
      return;
    case RowType::kInt8: {
      float scale;
      std::memcpy(&scale, row, 4);
      for (int i = 0; i < dim; ++i) out[i] = static_cast<float>(static_cast<int8_t>(row[4 + i])) * scale;
      return;
    }
  }
}

std::string ManifestToJson(const Manifest& m) {
  json stats = json::array();
  for (const auto& s : m.layout.stats) stats.push_back({{"mean", s.mean}, {"std", s.std}, {"boundaries", s.boundaries}});
  json tables = json::array();
  for (const auto& t : m.tables) {
    tables.push_back({{"name", t.name}, {"dim", t.dim}, {"row_type", RowTypeName(t.type)}, {"rows", t.rows},
                      {"dropped_rows", t.dropped}, {"file", FileJson(t.file)}});
  }
  json j = {{"format", "rectrain-serving-model"},
            {"format_version", m.format_version},
            {"version", m.version},
            {"created", m.created},
            {"model_type", m.model_type},
            {"trained_steps", m.trained_steps},
            {"source_run", m.source_run},
            {"min_count", m.min_count},
            {"data", {{"format", data::FormatName(m.layout.format)}, {"header", m.layout.header}, {"feature_stats", stats},
                      {"dense", m.dense_names}, {"sparse", m.sparse_names},
                      {"negative_downsampling", m.negative_downsampling}}},
            {"tasks", m.task_names},
            {"feature_columns", m.feature_columns},
            {"config", FileJson(m.config)},
            {"dense", FileJson(m.dense)},
            {"tables", tables}};
  internal::PutEvents(m.events, &j);
  return j.dump(2) + "\n";
}

Result<Manifest> ManifestFromJson(std::string_view text, const std::string& source) {
  Manifest m;
  try {
    const json j = json::parse(text);
    if (j.value("format", "") != "rectrain-serving-model") {
      return DataLossError(source + " is not a rectrain serving model manifest (no \"format\": \"rectrain-serving-model\")");
    }
    m.format_version = j.at("format_version").get<int>();
    if (m.format_version > kPackageFormatVersion) {
      return InvalidArgumentError(source + " has format version " + std::to_string(m.format_version) +
                                  "; this rectrain reads up to " + std::to_string(kPackageFormatVersion) +
                                  " (upgrade rectrain or re-export the model)");
    }
    m.version = j.at("version").get<int64_t>();
    m.created = j.at("created").get<std::string>();
    m.model_type = j.at("model_type").get<std::string>();
    m.trained_steps = j.at("trained_steps").get<int64_t>();
    m.source_run = j.at("source_run").get<std::string>();
    m.min_count = j.at("min_count").get<int64_t>();
    const json& d = j.at("data");
    const std::string format = d.at("format").get<std::string>();
    if (std::optional<data::DataFormat> f = data::kDataFormats.Find(format)) {
      m.layout.format = *f;
    } else {
      return DataLossError(source + ": data.format \"" + format + "\" is not one of " + data::kDataFormats.List());
    }
    m.layout.header = d.at("header").get<std::vector<std::string>>();
    for (const json& s : d.at("feature_stats")) {
      m.layout.stats.push_back({s.at("mean").get<double>(), s.at("std").get<double>(), s.at("boundaries").get<std::vector<double>>()});
    }
    m.dense_names = d.at("dense").get<std::vector<std::string>>();
    m.sparse_names = d.at("sparse").get<std::vector<std::string>>();
    m.negative_downsampling = d.at("negative_downsampling").get<double>();
    m.task_names = j.at("tasks").get<std::vector<std::string>>();
    m.feature_columns = j.at("feature_columns").get<std::vector<int>>();
    m.config = FileFromJson(j.at("config"));
    m.dense = FileFromJson(j.at("dense"));
    for (const json& t : j.at("tables")) {
      PackageTable pt;
      pt.name = t.at("name").get<std::string>();
      pt.dim = t.at("dim").get<int>();
      RECTRAIN_ASSIGN_OR_RETURN(pt.type, ParseRowType(t.at("row_type").get<std::string>()));
      pt.rows = t.at("rows").get<int64_t>();
      pt.dropped = t.at("dropped_rows").get<int64_t>();
      pt.file = FileFromJson(t.at("file"));
      m.tables.push_back(std::move(pt));
    }
    m.events = internal::EventsFromJson(j);
  } catch (const std::exception& e) {
    return DataLossError(source + " is not a valid manifest: " + e.what());
  }
  for (int c : m.feature_columns) {
    if (c < 0 || c >= static_cast<int>(m.dense_names.size())) {
      return DataLossError(source + ": feature column " + std::to_string(c) + " is not a dense column");
    }
  }
  return m;
}

Result<Manifest> ReadManifest(const std::string& dir) {
  const std::string path = dir + "/manifest.json";
  Result<std::string> text = io::ReadFileToString(path);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) {
      return NotFoundError("no serving model in " + dir + " (no manifest.json; write one with rectrain export RUN_DIR --out " + dir + ")");
    }
    return text.status();
  }
  return ManifestFromJson(*text, path);
}

Result<PackageFile> DescribeFile(const std::string& dir, const std::string& relative_path) {
  const std::string path = dir + "/" + relative_path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "cannot open " + path);
  XXH64_state_t* state = XXH64_createState();
  XXH64_reset(state, 0);
  std::vector<char> buf(1 << 20);
  PackageFile f{.path = relative_path};
  Status st = OkStatus();
  while (true) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      st = ErrnoToStatus(errno, "cannot read " + path);
      break;
    }
    if (n == 0) break;
    XXH64_update(state, buf.data(), static_cast<size_t>(n));
    f.bytes += n;
  }
  // The pages were read for the checksum only: let the kernel drop them from the cache's
  // active list rather than keep two copies warm (the mapping faults them back on demand).
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  f.xxh64 = XXH64_digest(state);
  XXH64_freeState(state);
  if (!st.ok()) return st;
  return f;
}

Status VerifyPackage(const std::string& dir, const Manifest& m, bool checksums) {
  std::vector<const PackageFile*> files = {&m.config, &m.dense};
  for (const auto& t : m.tables) files.push_back(&t.file);
  return VerifyFiles(dir, files, checksums);
}

Status VerifyFiles(const std::string& dir, const std::vector<const PackageFile*>& files, bool checksums) {
  for (const PackageFile* want : files) {
    const std::string path = dir + "/" + want->path;
    if (want->path.find("..") != std::string::npos || want->path.starts_with("/")) {
      return DataLossError(dir + "/manifest.json names a file outside the model directory: " + want->path);
    }
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    if (ec) return DataLossError(path + " is missing (" + ec.message() + "); the model directory is incomplete");
    if (static_cast<int64_t>(size) != want->bytes) {
      return DataLossError(path + " has " + std::to_string(size) + " bytes but the manifest says " +
                           std::to_string(want->bytes) + " (truncated or replaced)");
    }
    if (!checksums) continue;
    RECTRAIN_ASSIGN_OR_RETURN(PackageFile got, DescribeFile(dir, want->path));
    if (got.xxh64 != want->xxh64) {
      return DataLossError(path + " has checksum " + Hex(got.xxh64) + " but the manifest says " + Hex(want->xxh64) +
                           " (the file is corrupt)");
    }
  }
  return OkStatus();
}

Status WriteTableFile(const std::string& path, int dim, RowType type, std::span<const uint64_t> ids,
                      std::span<const float> weights, std::span<const float> oov) {
  using internal::TableHeader;
  const uint64_t rows = ids.size() + 1;
  if (weights.size() != ids.size() * static_cast<size_t>(dim) || oov.size() != static_cast<size_t>(dim)) {
    return InvalidArgumentError("WriteTableFile: weights or oov size does not match dim");
  }
  TableHeader h;
  h.dim = static_cast<uint32_t>(dim);
  h.row_type = static_cast<uint32_t>(type);
  h.row_bytes = static_cast<uint32_t>(RowBytes(type, dim));
  h.rows = rows;
  h.slots = std::bit_ceil(std::max<uint64_t>(2, rows + rows / 2 + 1));  // load factor <= 2/3
  h.ids_offset = internal::AlignUp(sizeof(TableHeader));
  h.slot_rows_offset = internal::AlignUp(h.ids_offset + 8 * h.slots);
  h.rows_offset = internal::AlignUp(h.slot_rows_offset + 4 * h.slots);
  const uint64_t total = h.rows_offset + rows * h.row_bytes;
  std::vector<uint8_t> file(total, 0);
  std::memcpy(file.data(), &h, sizeof(h));
  auto* slot_ids = reinterpret_cast<uint64_t*>(file.data() + h.ids_offset);
  auto* slot_rows = reinterpret_cast<uint32_t*>(file.data() + h.slot_rows_offset);
  if (rows > std::numeric_limits<uint32_t>::max()) return InvalidArgumentError("a table of more than 4G rows");
  EncodeRow(type, oov.data(), dim, file.data() + h.rows_offset);
  for (size_t i = 0; i < ids.size(); ++i) {
    uint64_t s = Mix64(ids[i]) & (h.slots - 1);
    while (slot_rows[s] != 0) {
      if (slot_ids[s] == ids[i]) return InvalidArgumentError("WriteTableFile: id " + std::to_string(ids[i]) + " given twice");
      s = (s + 1) & (h.slots - 1);
    }
    slot_ids[s] = ids[i];
    slot_rows[s] = static_cast<uint32_t>(i + 1);
    EncodeRow(type, weights.data() + i * static_cast<size_t>(dim), dim, file.data() + h.rows_offset + (i + 1) * h.row_bytes);
  }
  return io::WriteFileAtomically(path, std::string_view(reinterpret_cast<const char*>(file.data()), file.size()));
}

}  // namespace rectrain::serve

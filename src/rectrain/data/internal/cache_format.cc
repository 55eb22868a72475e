#include "rectrain/data/internal/cache_format.h"

#include <lz4.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include <nlohmann/json.hpp>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace rectrain::data::internal {
namespace {

constexpr char kHeaderMagic[8] = {'R', 'T', 'C', 'A', 'C', 'H', 'E', '\0'};
constexpr char kTrailerMagic[8] = {'R', 'T', 'C', 'E', 'N', 'D', '\0', '\0'};
constexpr char kBlockMagic[4] = {'R', 'T', 'B', '1'};
constexpr int64_t kHeaderBytes = 16;
constexpr int64_t kTrailerBytes = 32;
constexpr int64_t kBlockHeaderBytes = 16;
constexpr int64_t kDescriptorBytes = 24;

enum class Encoding : uint8_t { kPlain = 0, kDict = 1 };

// One stream's descriptor, as stored (little-endian, 24 bytes).
struct Descriptor {
  uint8_t codec = 0;
  uint8_t encoding = 0;
  uint8_t index_width = 0;
  uint8_t reserved = 0;
  uint32_t stored_bytes = 0;
  uint32_t decoded_bytes = 0;
  uint32_t dict_count = 0;
  uint64_t checksum = 0;
};

void PutU32(std::string* s, uint32_t v) { s->append(reinterpret_cast<const char*>(&v), 4); }
void PutU64(std::string* s, uint64_t v) { s->append(reinterpret_cast<const char*>(&v), 8); }
uint32_t GetU32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t GetU64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

void PutDescriptor(std::string* s, const Descriptor& d) {
  s->push_back(static_cast<char>(d.codec));
  s->push_back(static_cast<char>(d.encoding));
  s->push_back(static_cast<char>(d.index_width));
  s->push_back(static_cast<char>(d.reserved));
  PutU32(s, d.stored_bytes);
  PutU32(s, d.decoded_bytes);
  PutU32(s, d.dict_count);
  PutU64(s, d.checksum);
}

Descriptor GetDescriptor(const char* p) {
  Descriptor d;
  d.codec = static_cast<uint8_t>(p[0]);
  d.encoding = static_cast<uint8_t>(p[1]);
  d.index_width = static_cast<uint8_t>(p[2]);
  d.reserved = static_cast<uint8_t>(p[3]);
  d.stored_bytes = GetU32(p + 4);
  d.decoded_bytes = GetU32(p + 8);
  d.dict_count = GetU32(p + 12);
  d.checksum = GetU64(p + 16);
  return d;
}

// Streams of a block, in order: labels, dense, per sparse field [offsets,] ids, [group].
int NumStreams(const CacheSchema& s) {
  int n = 2 + static_cast<int>(s.sparse_names.size()) + (s.has_group ? 1 : 0);
  for (bool m : s.multi) n += m ? 1 : 0;
  return n;
}

// ---- writing ----

// Compresses `decoded` with `codec` when that saves at least 10%; appends the stored bytes to
// *payload and the descriptor to *descs.
void StoreStream(CacheCodec codec, Encoding encoding, uint8_t width, uint32_t dict_count,
                 std::string_view decoded, std::string* scratch, std::string* descs,
                 std::string* payload) {
  Descriptor d;
  d.encoding = static_cast<uint8_t>(encoding);
  d.index_width = width;
  d.dict_count = dict_count;
  d.decoded_bytes = static_cast<uint32_t>(decoded.size());
  std::string_view stored = decoded;
  if (codec == CacheCodec::kLz4 && !decoded.empty()) {
    scratch->resize(static_cast<size_t>(LZ4_compressBound(static_cast<int>(decoded.size()))));
    const int n = LZ4_compress_default(decoded.data(), scratch->data(), static_cast<int>(decoded.size()),
                                       static_cast<int>(scratch->size()));
    if (n > 0 && static_cast<double>(n) < 0.9 * static_cast<double>(decoded.size())) {
      stored = std::string_view(scratch->data(), static_cast<size_t>(n));
      d.codec = static_cast<uint8_t>(CacheCodec::kLz4);
    }
  } else if (codec == CacheCodec::kZstd && !decoded.empty()) {
    scratch->resize(ZSTD_compressBound(decoded.size()));
    const size_t n = ZSTD_compress(scratch->data(), scratch->size(), decoded.data(), decoded.size(), 3);
    if (!ZSTD_isError(n) && static_cast<double>(n) < 0.9 * static_cast<double>(decoded.size())) {
      stored = std::string_view(scratch->data(), n);
      d.codec = static_cast<uint8_t>(CacheCodec::kZstd);
    }
  }
  d.stored_bytes = static_cast<uint32_t>(stored.size());
  d.checksum = XXH3_64bits(stored.data(), stored.size());
  PutDescriptor(descs, d);
  payload->append(stored);
}

// Ids as a dictionary (first-occurrence order) + 1/2/4-byte indices when that is at most 3/4
// of the plain size, else plain u64.
void StoreIds(CacheCodec codec, const uint64_t* ids, int64_t n, std::string* decoded,
              std::string* scratch, std::string* descs, std::string* payload) {
  std::unordered_map<uint64_t, uint32_t> index;
  index.reserve(static_cast<size_t>(std::min<int64_t>(n, 1 << 16)) * 2);
  std::vector<uint64_t> dict;
  std::vector<uint32_t> idx(static_cast<size_t>(n));
  bool use_dict = n > 0;
  for (int64_t i = 0; i < n && use_dict; ++i) {
    auto [it, inserted] = index.emplace(ids[i], static_cast<uint32_t>(dict.size()));
    if (inserted) dict.push_back(ids[i]);
    idx[static_cast<size_t>(i)] = it->second;
    if (dict.size() > (1u << 16)) use_dict = false;  // 4-byte indices would rarely pay off
  }
  const uint8_t width = dict.size() <= 256 ? 1 : (dict.size() <= 65536 ? 2 : 4);
  if (use_dict && static_cast<int64_t>(dict.size()) * 8 + n * width <= n * 6) {
    decoded->assign(reinterpret_cast<const char*>(dict.data()), dict.size() * 8);
    const size_t base = decoded->size();
    decoded->resize(base + static_cast<size_t>(n) * width);
    char* p = decoded->data() + base;
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t v = idx[static_cast<size_t>(i)];
      std::memcpy(p + i * width, &v, width);  // little-endian: the low `width` bytes
    }
    StoreStream(codec, Encoding::kDict, width, static_cast<uint32_t>(dict.size()), *decoded, scratch,
                descs, payload);
    return;
  }
  StoreStream(codec, Encoding::kPlain, 0, 0,
              std::string_view(reinterpret_cast<const char*>(ids), static_cast<size_t>(n) * 8), scratch,
              descs, payload);
}

Status CheckBatch(const CacheSchema& s, const Batch& b) {
  const int nd = static_cast<int>(s.dense_names.size());
  const int ns = static_cast<int>(s.sparse_names.size());
  if (b.num_dense != nd || b.num_sparse() != ns || static_cast<int64_t>(b.labels.size()) != b.size ||
      static_cast<int64_t>(b.dense.size()) != b.size * nd ||
      (s.has_group && static_cast<int64_t>(b.group_keys.size()) != b.size)) {
    return InvalidArgumentError("batch does not match the cache schema (" + std::to_string(nd) +
                                " dense, " + std::to_string(ns) + " sparse fields)");
  }
  for (int f = 0; f < ns; ++f) {
    const SparseColumn& c = b.sparse[f];
    const bool ok = s.multi[f] ? (static_cast<int64_t>(c.offsets.size()) == b.size + 1 &&
                                  c.offsets[0] == 0 &&
                                  static_cast<int64_t>(c.ids.size()) == c.offsets[b.size])
                               : (c.offsets.empty() && static_cast<int64_t>(c.ids.size()) == b.size);
    if (!ok) return InvalidArgumentError("sparse field " + s.sparse_names[f] + " does not match the cache schema");
  }
  return OkStatus();
}

}  // namespace

Result<CacheCodec> ParseCacheCodec(const std::string& name) {
  if (name == "none") return CacheCodec::kNone;
  if (name == "lz4") return CacheCodec::kLz4;
  if (name == "zstd") return CacheCodec::kZstd;
  return InvalidArgumentError("unknown cache codec \"" + name + "\"; use lz4 (default), zstd or none");
}

const char* CacheCodecName(CacheCodec codec) {
  switch (codec) {
    case CacheCodec::kNone: return "none";
    case CacheCodec::kLz4: return "lz4";
    case CacheCodec::kZstd: return "zstd";
  }
  return "?";
}

std::string EncodeCacheFooter(const CacheFooter& f) {
  nlohmann::json j;
  j["format_version"] = kCacheFormatVersion;
  j["key"] = f.key;
  j["signature"] = f.signature;
  j["source_format"] = f.source_format;
  j["dense"] = f.schema.dense_names;
  j["sparse"] = f.schema.sparse_names;
  std::vector<int> multi(f.schema.multi.begin(), f.schema.multi.end());
  j["multi"] = multi;
  j["group"] = f.schema.has_group;
  j["codec"] = f.codec;
  j["block_rows"] = f.block_rows;
  j["rows"] = f.rows;
  j["counts"] = {{"rows_rejected", f.counts.rows_rejected},
                 {"rows_filtered", f.counts.rows_filtered},
                 {"rows_downsampled", f.counts.rows_downsampled},
                 {"source_files", f.counts.source_files},
                 {"source_bytes", f.counts.source_bytes}};
  nlohmann::json blocks = nlohmann::json::array();
  for (const CacheBlockRef& b : f.blocks) blocks.push_back({b.offset, b.bytes, b.rows});
  j["blocks"] = std::move(blocks);
  return j.dump();
}

// ---- CacheFileWriter ----

Result<std::unique_ptr<CacheFileWriter>> CacheFileWriter::Create(const std::string& path,
                                                                 CacheSchema schema, CacheCodec codec,
                                                                 int64_t block_rows) {
  if (block_rows < 1 || block_rows > kCacheMaxBlockRows) {
    return InvalidArgumentError("cache block rows must be in 1.." + std::to_string(kCacheMaxBlockRows) +
                                ", got " + std::to_string(block_rows));
  }
  if (schema.multi.size() != schema.sparse_names.size()) {
    return InvalidArgumentError("cache schema: multi flags do not match the sparse fields");
  }
  std::unique_ptr<CacheFileWriter> w(new CacheFileWriter());
  RECTRAIN_ASSIGN_OR_RETURN(w->out_, io::AtomicFileWriter::Create(path));
  w->path_ = path;
  w->schema_ = std::move(schema);
  w->codec_ = codec;
  w->block_rows_ = block_rows;
  std::string header(kHeaderMagic, 8);
  PutU32(&header, kCacheFormatVersion);
  PutU32(&header, 0);
  RECTRAIN_RETURN_IF_ERROR(w->out_->Append(header));
  w->offset_ = kHeaderBytes;
  w->pending_.num_dense = static_cast<int>(w->schema_.dense_names.size());
  w->pending_.sparse.resize(w->schema_.sparse_names.size());
  for (size_t f = 0; f < w->schema_.multi.size(); ++f) {
    if (w->schema_.multi[f]) w->pending_.sparse[f].offsets.assign(1, 0);
  }
  return w;
}

CacheFileWriter::~CacheFileWriter() = default;

int64_t CacheFileWriter::bytes_written() const { return out_ ? out_->bytes_written() : 0; }

Status CacheFileWriter::Append(const Batch& b) {
  RECTRAIN_RETURN_IF_ERROR(CheckBatch(schema_, b)) << "while writing " << path_;
  const int nd = pending_.num_dense;
  int64_t r = 0;
  while (r < b.size) {
    const int64_t take = std::min(b.size - r, block_rows_ - pending_.size);
    pending_.labels.insert(pending_.labels.end(), b.labels.begin() + r, b.labels.begin() + r + take);
    pending_.dense.insert(pending_.dense.end(), b.dense.begin() + r * nd, b.dense.begin() + (r + take) * nd);
    for (size_t f = 0; f < pending_.sparse.size(); ++f) {
      const SparseColumn& src = b.sparse[f];
      SparseColumn& dst = pending_.sparse[f];
      const int64_t begin = src.RowBegin(r), end = src.RowBegin(r) + (src.RowEnd(r + take - 1) - src.RowBegin(r));
      const int32_t base = dst.offsets.empty() ? 0 : dst.offsets.back();
      dst.ids.insert(dst.ids.end(), src.ids.begin() + begin, src.ids.begin() + end);
      if (!src.single_valued()) {
        for (int64_t k = 1; k <= take; ++k) {
          dst.offsets.push_back(base + (src.offsets[r + k] - src.offsets[r]));
        }
      }
    }
    if (schema_.has_group) {
      pending_.group_keys.insert(pending_.group_keys.end(), b.group_keys.begin() + r,
                                 b.group_keys.begin() + r + take);
    }
    pending_.size += take;
    r += take;
    if (pending_.size == block_rows_) {
      RECTRAIN_RETURN_IF_ERROR(FlushBlock());
    }
  }
  return OkStatus();
}

Status CacheFileWriter::FlushBlock() {
  if (pending_.size == 0) return OkStatus();
  const int64_t rows = pending_.size;
  std::string descs, payload, decoded;
  auto bytes_of = [](const auto& v) {
    return std::string_view(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(v[0]));
  };
  StoreStream(codec_, Encoding::kPlain, 0, 0, bytes_of(pending_.labels), &scratch_, &descs, &payload);
  StoreStream(codec_, Encoding::kPlain, 0, 0, bytes_of(pending_.dense), &scratch_, &descs, &payload);
  int64_t raw = static_cast<int64_t>(pending_.labels.size() * 4 + pending_.dense.size() * 4);
  for (size_t f = 0; f < pending_.sparse.size(); ++f) {
    SparseColumn& c = pending_.sparse[f];
    if (schema_.multi[f]) {
      StoreStream(codec_, Encoding::kPlain, 0, 0, bytes_of(c.offsets), &scratch_, &descs, &payload);
      raw += static_cast<int64_t>(c.offsets.size() * 4);
    }
    StoreIds(codec_, c.ids.data(), static_cast<int64_t>(c.ids.size()), &decoded, &scratch_, &descs, &payload);
    raw += static_cast<int64_t>(c.ids.size() * 8);
  }
  if (schema_.has_group) {
    StoreIds(codec_, pending_.group_keys.data(), rows, &decoded, &scratch_, &descs, &payload);
    raw += rows * 8;
  }
  std::string header(kBlockMagic, 4);
  PutU32(&header, static_cast<uint32_t>(rows));
  PutU32(&header, static_cast<uint32_t>(NumStreams(schema_)));
  PutU32(&header, static_cast<uint32_t>(XXH3_64bits(descs.data(), descs.size())));
  const int64_t bytes = static_cast<int64_t>(header.size() + descs.size() + payload.size());
  RECTRAIN_RETURN_IF_ERROR(out_->Append(header));
  RECTRAIN_RETURN_IF_ERROR(out_->Append(descs));
  RECTRAIN_RETURN_IF_ERROR(out_->Append(payload));
  blocks_.push_back(CacheBlockRef{offset_, bytes, rows});
  offset_ += bytes;
  rows_ += rows;
  raw_bytes_ += raw;
  pending_.size = 0;
  pending_.labels.clear();
  pending_.dense.clear();
  for (size_t f = 0; f < pending_.sparse.size(); ++f) {
    pending_.sparse[f].ids.clear();
    if (schema_.multi[f]) pending_.sparse[f].offsets.assign(1, 0);
  }
  pending_.group_keys.clear();
  return OkStatus();
}

Status CacheFileWriter::Finish(const std::string& key, const std::string& signature,
                               const std::string& source_format, const CacheBuildCounts& counts) {
  RECTRAIN_RETURN_IF_ERROR(FlushBlock());
  CacheFooter f;
  f.key = key;
  f.signature = signature;
  f.source_format = source_format;
  f.schema = schema_;
  f.codec = CacheCodecName(codec_);
  f.block_rows = block_rows_;
  f.rows = rows_;
  f.counts = counts;
  f.blocks = blocks_;
  const std::string footer = EncodeCacheFooter(f);
  std::string trailer;
  PutU64(&trailer, static_cast<uint64_t>(offset_));
  PutU64(&trailer, footer.size());
  PutU64(&trailer, XXH3_64bits(footer.data(), footer.size()));
  trailer.append(kTrailerMagic, 8);
  RECTRAIN_RETURN_IF_ERROR(out_->Append(footer));
  RECTRAIN_RETURN_IF_ERROR(out_->Append(trailer));
  return out_->Commit();
}

// ---- CacheFile ----

namespace {

Status Corrupt(const std::string& path, const std::string& what) {
  return DataLossError("sample cache " + path + " is corrupt or truncated: " + what +
                       "; delete it and rebuild it with `rectrain data cache CONFIG`");
}

Status ReadFully(const io::RandomAccessFile& f, int64_t offset, int64_t n, char* dst) {
  RECTRAIN_ASSIGN_OR_RETURN(int64_t got, f.ReadAt(offset, n, dst));
  if (got != n) return Corrupt(f.path(), "file ends at byte " + std::to_string(offset + got) +
                                             ", expected " + std::to_string(offset + n) + " bytes");
  return OkStatus();
}

Result<CacheFooter> ParseFooter(const std::string& path, const std::string& text) {
  CacheFooter f;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (j.at("format_version").get<uint32_t>() != kCacheFormatVersion) {
      return Corrupt(path, "footer format_version differs from the header's");
    }
    f.key = j.at("key").get<std::string>();
    f.signature = j.at("signature").get<std::string>();
    f.source_format = j.at("source_format").get<std::string>();
    f.schema.dense_names = j.at("dense").get<std::vector<std::string>>();
    f.schema.sparse_names = j.at("sparse").get<std::vector<std::string>>();
    for (int m : j.at("multi").get<std::vector<int>>()) f.schema.multi.push_back(m != 0);
    f.schema.has_group = j.at("group").get<bool>();
    f.codec = j.at("codec").get<std::string>();
    f.block_rows = j.at("block_rows").get<int64_t>();
    f.rows = j.at("rows").get<int64_t>();
    const nlohmann::json& c = j.at("counts");
    f.counts.rows_rejected = c.at("rows_rejected").get<int64_t>();
    f.counts.rows_filtered = c.at("rows_filtered").get<int64_t>();
    f.counts.rows_downsampled = c.at("rows_downsampled").get<int64_t>();
    f.counts.source_files = c.at("source_files").get<int64_t>();
    f.counts.source_bytes = c.at("source_bytes").get<int64_t>();
    for (const nlohmann::json& b : j.at("blocks")) {
      if (!b.is_array() || b.size() != 3) return Corrupt(path, "a block index entry is not [offset, bytes, rows]");
      f.blocks.push_back(CacheBlockRef{b[0].get<int64_t>(), b[1].get<int64_t>(), b[2].get<int64_t>()});
    }
  } catch (const std::exception& e) {
    return Corrupt(path, std::string("footer: ") + e.what());
  }
  return f;
}

}  // namespace

Result<std::unique_ptr<CacheFile>> CacheFile::Open(const std::string& path) {
  std::unique_ptr<CacheFile> cf(new CacheFile());
  cf->path_ = path;
  RECTRAIN_ASSIGN_OR_RETURN(cf->file_, io::RandomAccessFile::Open(path));
  const io::RandomAccessFile& file = *cf->file_;
  const int64_t size = file.size();
  if (size < kHeaderBytes + kTrailerBytes) {
    return Corrupt(path, std::to_string(size) + " bytes is shorter than a header and trailer (48 bytes)");
  }
  char header[kHeaderBytes];
  RECTRAIN_RETURN_IF_ERROR(ReadFully(file, 0, kHeaderBytes, header));
  if (std::memcmp(header, kHeaderMagic, 8) != 0) {
    return DataLossError(path + " is not a rectrain sample cache (no RTCACHE magic at byte 0)");
  }
  const uint32_t version = GetU32(header + 8);
  if (GetU32(header + 12) != 0 && version == kCacheFormatVersion) return Corrupt(path, "header flags are not 0");
  if (version != kCacheFormatVersion) {
    return DataLossError("sample cache " + path + " has format version " + std::to_string(version) +
                         "; this rectrain reads version " + std::to_string(kCacheFormatVersion) +
                         "; rebuild it with `rectrain data cache CONFIG`");
  }
  char trailer[kTrailerBytes];
  RECTRAIN_RETURN_IF_ERROR(ReadFully(file, size - kTrailerBytes, kTrailerBytes, trailer));
  if (std::memcmp(trailer + 24, kTrailerMagic, 8) != 0) return Corrupt(path, "no trailer magic at the end");
  const uint64_t footer_offset = GetU64(trailer);
  const uint64_t footer_bytes = GetU64(trailer + 8);
  if (footer_offset < static_cast<uint64_t>(kHeaderBytes) ||
      footer_bytes > static_cast<uint64_t>(kCacheMaxFooterBytes) ||
      footer_offset + footer_bytes != static_cast<uint64_t>(size - kTrailerBytes)) {
    return Corrupt(path, "trailer footer range [" + std::to_string(footer_offset) + ", +" +
                             std::to_string(footer_bytes) + ") does not end at the trailer");
  }
  std::string text(footer_bytes, '\0');
  RECTRAIN_RETURN_IF_ERROR(ReadFully(file, static_cast<int64_t>(footer_offset),
                                     static_cast<int64_t>(footer_bytes), text.data()));
  if (XXH3_64bits(text.data(), text.size()) != GetU64(trailer + 16)) return Corrupt(path, "footer checksum mismatch");
  RECTRAIN_ASSIGN_OR_RETURN(cf->footer_, ParseFooter(path, text));
  const CacheFooter& f = cf->footer_;
  if (f.schema.multi.size() != f.schema.sparse_names.size()) return Corrupt(path, "footer multi flags");
  if (f.block_rows < 1 || f.block_rows > kCacheMaxBlockRows) return Corrupt(path, "footer block_rows out of range");
  int64_t offset = kHeaderBytes, rows = 0;
  for (size_t i = 0; i < f.blocks.size(); ++i) {
    const CacheBlockRef& b = f.blocks[i];
    if (b.offset != offset || b.bytes < kBlockHeaderBytes || b.bytes > static_cast<int64_t>(footer_offset) - offset ||
        b.rows < 1 || b.rows > f.block_rows) {
      return Corrupt(path, "block index entry " + std::to_string(i) + " (offset " + std::to_string(b.offset) +
                               ", " + std::to_string(b.bytes) + " bytes, " + std::to_string(b.rows) +
                               " rows) is out of range");
    }
    offset += b.bytes;
    rows += b.rows;
  }
  if (offset != static_cast<int64_t>(footer_offset) || rows != f.rows) {
    return Corrupt(path, "the block index does not cover the file (" + std::to_string(rows) + " rows in blocks, " +
                             std::to_string(f.rows) + " in the footer)");
  }
  return cf;
}

namespace {

// The streams of one block in memory (`p`: its bytes; the payload from `payload_begin`), decoded
// in order, each checked against its descriptor. Errors are DataLoss naming the file, the block
// and the stream.
class BlockStreams {
 public:
  BlockStreams(const std::string& path, std::string where, const char* p, int64_t block_bytes, int64_t payload_begin,
               CacheReadScratch* scratch)
      : path_(path), where_(std::move(where)), p_(p), block_bytes_(block_bytes), pos_(payload_begin),
        scratch_(scratch) {}

  // A plain stream of exactly `bytes` bytes into dst.
  Status Plain(char* dst, int64_t bytes) {
    Descriptor d;
    std::string_view stored;
    RECTRAIN_RETURN_IF_ERROR(Next(&d, &stored));
    if (d.encoding != 0 || d.decoded_bytes != bytes) {
      return Corrupt(path_, LastStream() + ": expected " + std::to_string(bytes) + " plain bytes, descriptor says " +
                                std::to_string(d.decoded_bytes));
    }
    return Decompress(d, stored, dst);
  }

  // An id stream with `count` ids (count < 0: whatever the stream holds, at most 2^27).
  Status Ids(std::vector<uint64_t>* dst, int64_t count) {
    Descriptor d;
    std::string_view stored;
    RECTRAIN_RETURN_IF_ERROR(Next(&d, &stored));
    const std::string what = LastStream();
    if (d.encoding == 0) {
      if (d.index_width != 0 || d.dict_count != 0 || d.decoded_bytes % 8 != 0 ||
          (count >= 0 && d.decoded_bytes != count * 8)) {
        return Corrupt(path_, what + ": id stream size disagrees with the row count");
      }
      dst->resize(d.decoded_bytes / 8);
      return Decompress(d, stored, reinterpret_cast<char*>(dst->data()));
    }
    const int w = d.index_width;
    if ((w != 1 && w != 2 && w != 4) || d.dict_count == 0 ||
        int64_t{d.dict_count} * 8 > int64_t{d.decoded_bytes} ||
        (int64_t{d.decoded_bytes} - int64_t{d.dict_count} * 8) % w != 0) {
      return Corrupt(path_, what + ": bad dictionary descriptor");
    }
    const int64_t n = (int64_t{d.decoded_bytes} - int64_t{d.dict_count} * 8) / w;
    if (count >= 0 && n != count) return Corrupt(path_, what + ": id count disagrees with the row count");
    char* decoded = scratch_->decoded.Get(d.decoded_bytes);
    RECTRAIN_RETURN_IF_ERROR(Decompress(d, stored, decoded));
    const uint64_t* dict = reinterpret_cast<const uint64_t*>(decoded);  // new[] is 16-byte aligned
    const char* idx = decoded + int64_t{d.dict_count} * 8;
    dst->resize(static_cast<size_t>(n));
    uint64_t* o = dst->data();
    // Bounds first (one vectorisable pass), then an unchecked gather.
    uint32_t max_index = 0;
    if (w == 1) {
      const auto* q = reinterpret_cast<const uint8_t*>(idx);
      for (int64_t i = 0; i < n; ++i) max_index = std::max<uint32_t>(max_index, q[i]);
      if (n > 0 && max_index >= d.dict_count) return Corrupt(path_, what + ": dictionary index out of range");
      for (int64_t i = 0; i < n; ++i) o[i] = dict[q[i]];
    } else if (w == 2) {
      auto q = [idx](int64_t i) {
        uint16_t v;
        std::memcpy(&v, idx + 2 * i, 2);  // unaligned load
        return v;
      };
      for (int64_t i = 0; i < n; ++i) max_index = std::max<uint32_t>(max_index, q(i));
      if (n > 0 && max_index >= d.dict_count) return Corrupt(path_, what + ": dictionary index out of range");
      for (int64_t i = 0; i < n; ++i) o[i] = dict[q(i)];
    } else {
      for (int64_t i = 0; i < n; ++i) {
        uint32_t v;
        std::memcpy(&v, idx + i * 4, 4);
        if (v >= d.dict_count) return Corrupt(path_, what + ": dictionary index out of range");
        o[i] = dict[v];
      }
    }
    return OkStatus();
  }

  int64_t pos() const { return pos_; }

 private:
  std::string LastStream() const { return where_ + " stream " + std::to_string(stream_ - 1); }

  // The next stream's descriptor and stored bytes (checksum and descriptor checked).
  Status Next(Descriptor* d, std::string_view* stored) {
    *d = GetDescriptor(p_ + kBlockHeaderBytes + int64_t{stream_} * kDescriptorBytes);
    ++stream_;
    if (d->stored_bytes > block_bytes_ - pos_) return Corrupt(path_, LastStream() + ": stored size runs past the block");
    *stored = std::string_view(p_ + pos_, d->stored_bytes);
    pos_ += d->stored_bytes;
    if (XXH3_64bits(stored->data(), stored->size()) != d->checksum) {
      return Corrupt(path_, LastStream() + ": checksum mismatch");
    }
    if (d->codec > 2 || d->encoding > 1 || d->reserved != 0 || (d->codec == 0 && d->stored_bytes != d->decoded_bytes) ||
        static_cast<int64_t>(d->decoded_bytes) > kCacheMaxStreamBytes) {
      return Corrupt(path_, LastStream() + ": bad descriptor");
    }
    return OkStatus();
  }

  Status Decompress(const Descriptor& d, std::string_view stored, char* dst) const {
    if (d.codec == 0) {
      if (!stored.empty()) std::memcpy(dst, stored.data(), stored.size());
      return OkStatus();
    }
    if (d.codec == 1) {
      const int n = LZ4_decompress_safe(stored.data(), dst, static_cast<int>(stored.size()),
                                        static_cast<int>(d.decoded_bytes));
      if (n == static_cast<int>(d.decoded_bytes)) return OkStatus();
    } else {
      const size_t n = ZSTD_decompress(dst, d.decoded_bytes, stored.data(), stored.size());
      if (!ZSTD_isError(n) && n == d.decoded_bytes) return OkStatus();
    }
    return Corrupt(path_, LastStream() + ": " + (d.codec == 1 ? "lz4" : "zstd") + " data does not decompress to " +
                              std::to_string(d.decoded_bytes) + " bytes");
  }

  const std::string& path_;
  const std::string where_;
  const char* p_;
  const int64_t block_bytes_;
  int64_t pos_;
  int stream_ = 0;
  CacheReadScratch* scratch_;
};

}  // namespace

Status CacheFile::ReadBlock(int64_t index, CacheReadScratch* scratch, Batch* out) const {
  RECTRAIN_CHECK(index >= 0 && index < static_cast<int64_t>(footer_.blocks.size()));
  const CacheBlockRef& ref = footer_.blocks[static_cast<size_t>(index)];
  const std::string where = "block " + std::to_string(index) + " (byte " + std::to_string(ref.offset) + ")";
  char* p = scratch->stored.Get(static_cast<size_t>(ref.bytes));
  RECTRAIN_RETURN_IF_ERROR(ReadFully(*file_, ref.offset, ref.bytes, p));
  const CacheSchema& s = footer_.schema;
  const int num_streams = NumStreams(s);
  if (std::memcmp(p, kBlockMagic, 4) != 0 || GetU32(p + 4) != static_cast<uint64_t>(ref.rows) ||
      GetU32(p + 8) != static_cast<uint32_t>(num_streams)) {
    return Corrupt(path_, where + ": bad block header");
  }
  const int64_t payload_begin = kBlockHeaderBytes + int64_t{num_streams} * kDescriptorBytes;
  if (payload_begin > ref.bytes) return Corrupt(path_, where + ": descriptors run past the block");
  if (GetU32(p + 12) != static_cast<uint32_t>(XXH3_64bits(p + kBlockHeaderBytes,
                                                          static_cast<size_t>(payload_begin - kBlockHeaderBytes)))) {
    return Corrupt(path_, where + ": descriptor checksum mismatch");
  }
  const int64_t rows = ref.rows;
  const int nd = static_cast<int>(s.dense_names.size());
  const int ns = static_cast<int>(s.sparse_names.size());
  out->size = rows;
  out->num_dense = nd;
  out->sparse.resize(static_cast<size_t>(ns));
  BlockStreams streams(path_, where, p, ref.bytes, payload_begin, scratch);
  out->labels.resize(static_cast<size_t>(rows));
  RECTRAIN_RETURN_IF_ERROR(streams.Plain(reinterpret_cast<char*>(out->labels.data()), rows * 4));
  out->dense.resize(static_cast<size_t>(rows * nd));
  RECTRAIN_RETURN_IF_ERROR(streams.Plain(reinterpret_cast<char*>(out->dense.data()), rows * nd * 4));
  for (int f = 0; f < ns; ++f) {
    SparseColumn& c = out->sparse[static_cast<size_t>(f)];
    if (s.multi[static_cast<size_t>(f)]) {
      c.offsets.resize(static_cast<size_t>(rows + 1));
      RECTRAIN_RETURN_IF_ERROR(streams.Plain(reinterpret_cast<char*>(c.offsets.data()), (rows + 1) * 4));
      bool ok = c.offsets[0] == 0;
      for (int64_t r = 0; r < rows && ok; ++r) ok = c.offsets[r + 1] >= c.offsets[r];
      if (!ok) return Corrupt(path_, where + ": offsets of field " + s.sparse_names[f] + " are not ascending from 0");
      RECTRAIN_RETURN_IF_ERROR(streams.Ids(&c.ids, c.offsets[rows]));
    } else {
      c.offsets.clear();
      RECTRAIN_RETURN_IF_ERROR(streams.Ids(&c.ids, rows));
    }
  }
  if (s.has_group) {
    RECTRAIN_RETURN_IF_ERROR(streams.Ids(&out->group_keys, rows));
  } else {
    out->group_keys.clear();
  }
  if (streams.pos() != ref.bytes) {
    return Corrupt(path_, where + ": " + std::to_string(ref.bytes - streams.pos()) + " bytes after the last stream");
  }
  return OkStatus();
}

}  // namespace rectrain::data::internal

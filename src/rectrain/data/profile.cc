#include "rectrain/data/profile.h"

#include "rectrain/data/internal/idx_reader.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "rectrain/base/random.h"
#include "rectrain/data/cache.h"
#include "rectrain/data/internal/text_parser.h"
#include "rectrain/data/transform.h"
#include "rectrain/io/file.h"
#include "rectrain/io/fs/file_system.h"
#include "rectrain/io/parquet/parquet_file.h"

namespace rectrain::data {
namespace {

constexpr int kHllBits = 12;
constexpr int kHllRegisters = 1 << kHllBits;

// One column's running profile plus its HyperLogLog registers.
struct ColumnAcc {
  ColumnProfile p;
  std::vector<uint8_t> hll = std::vector<uint8_t>(kHllRegisters, 0);

  void AddHash(uint64_t h) {
    const uint32_t idx = static_cast<uint32_t>(h >> (64 - kHllBits));
    const uint64_t rest = (h << kHllBits) | (uint64_t{1} << (kHllBits - 1));
    const uint8_t rank = static_cast<uint8_t>(std::countl_zero(rest) + 1);
    if (rank > hll[idx]) hll[idx] = rank;
  }
  void AddNumber(double v) {
    if (!std::isfinite(v)) return;
    if (p.numeric == 0) {
      p.min = p.max = v;
    } else {
      p.min = std::min(p.min, v);
      p.max = std::max(p.max, v);
    }
    p.sum += v;
    ++p.numeric;
  }
  // A non-null value given as text.
  void AddText(std::string_view s) {
    ++p.non_null;
    AddHash(HashBytes(s, 0));
    double v = 0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec == std::errc() && r.ptr == s.data() + s.size()) AddNumber(v);
  }
  void Merge(const ColumnAcc& o) {
    if (o.p.numeric > 0) {
      if (p.numeric == 0) {
        p.min = o.p.min;
        p.max = o.p.max;
      } else {
        p.min = std::min(p.min, o.p.min);
        p.max = std::max(p.max, o.p.max);
      }
    }
    p.rows += o.p.rows;
    p.non_null += o.p.non_null;
    p.numeric += o.p.numeric;
    p.sum += o.p.sum;
    for (int i = 0; i < kHllRegisters; ++i) hll[i] = std::max(hll[i], o.hll[i]);
  }
  double Estimate() const {
    const double m = kHllRegisters;
    double sum = 0;
    int zeros = 0;
    for (uint8_t r : hll) {
      sum += std::ldexp(1.0, -r);
      zeros += r == 0;
    }
    const double e = 0.7213 / (1 + 1.079 / m) * m * m / sum;
    if (e <= 2.5 * m && zeros > 0) return m * std::log(m / zeros);  // linear counting
    return e;
  }
};

struct FileResult {
  FileProfile file;
  std::vector<std::string> names;
  std::vector<ColumnAcc> cols;
  int64_t labeled = 0, positive = 0;
};

struct LabelSpec {
  std::string column;
  bool has_transform = false;
  FeatureTransform transform;
  void Add(std::optional<double> v, FileResult* r) const {
    if (!v || !std::isfinite(*v)) return;
    double x = *v;
    if (has_transform) x = ApplyNumericSteps(transform, 0, transform.steps.size(), x, {});
    ++r->labeled;
    r->positive += x == 1.0;
  }
};

std::optional<double> ParseNumber(std::string_view s) {
  double v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// Splits `line` at `delim`; a field may be quoted ("a,b", "" for a quote). Returns false for
// a malformed quoted field.
bool SplitFields(std::string_view line, char delim, std::vector<std::string>* fields) {
  fields->clear();
  size_t i = 0;
  while (true) {
    std::string f;
    if (i < line.size() && line[i] == '"') {
      ++i;
      while (true) {
        if (i >= line.size()) return false;
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            f.push_back('"');
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        f.push_back(line[i++]);
      }
      if (i < line.size() && line[i] != delim) return false;
    } else {
      const size_t end = line.find(delim, i);
      f.assign(line.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i));
      i = end == std::string_view::npos ? line.size() : end;
    }
    fields->push_back(std::move(f));
    if (i >= line.size()) return true;
    ++i;  // the delimiter
  }
}

// Whether a text profile stops here: `cap` rows (good + bad) read and more follow.
bool AtCap(const io::LineReader& in, const FileResult& r, int64_t cap) {
  if (cap <= 0 || r.file.rows + r.file.bad_rows < cap) return false;
  return !in.AtEnd();
}

Status ProfileText(const std::string& path, DataFormat format, const SchemaConfig& schema,
                   const LabelSpec& label, int64_t cap, FileResult* r) {
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<io::LineReader> reader, io::LineReader::Open(path));
  io::LineReader& in = *reader;
  const char delim = format == DataFormat::kCsv ? (schema.delimiter == '\t' ? ',' : schema.delimiter) : '\t';
  std::string line;
  std::vector<std::string> fields;
  if (format == DataFormat::kCriteo) {
    r->names.push_back("label");
    for (int i = 1; i <= schema.criteo_dense; ++i) r->names.push_back("I" + std::to_string(i));
    for (int i = 1; i <= schema.criteo_sparse; ++i) r->names.push_back("C" + std::to_string(i));
  } else if (schema.header) {
    if (!in.Next(&line)) {
      RECTRAIN_RETURN_IF_ERROR(in.status());
      return InvalidArgumentError(path + " is empty: it has no rows");
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!SplitFields(line, delim, &fields)) return InvalidArgumentError(path + ":1: malformed header");
    r->names = fields;
  } else {
    if (schema.columns.empty()) {
      return InvalidArgumentError(std::string(FormatName(format)) + " without a header needs the column names (data.columns / --columns)");
    }
    r->names = schema.columns;
  }
  int label_col = -1;
  for (size_t i = 0; i < r->names.size(); ++i) {
    if (r->names[i] == label.column) label_col = static_cast<int>(i);
  }
  r->cols.resize(r->names.size());
  for (size_t i = 0; i < r->names.size(); ++i) r->cols[i].p.name = r->names[i];
  while (in.Next(&line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (AtCap(in, *r, cap)) {
      r->file.truncated = true;
      break;
    }
    if (!SplitFields(line, delim, &fields) || fields.size() != r->names.size()) {
      ++r->file.bad_rows;
      continue;
    }
    ++r->file.rows;
    for (size_t i = 0; i < fields.size(); ++i) {
      ColumnAcc& c = r->cols[i];
      ++c.p.rows;
      if (!fields[i].empty()) c.AddText(fields[i]);
    }
    if (label_col >= 0) label.Add(ParseNumber(fields[label_col]), r);
  }
  RECTRAIN_RETURN_IF_ERROR(in.status());
  return OkStatus();
}

// libsvm / libffm: the columns of the read plan (label, declared dense keys, categorical fields or
// the libsvm bag); a list column is non-null when the row has a pair for it, and its min / max /
// mean / distinct are over the indices. A line the reader would reject as malformed (a bad pair,
// an undeclared libffm field, a weight other than 1) counts as a bad row.
Status ProfilePairs(const std::string& path, const SchemaConfig& schema, const LabelSpec& label,
                    int64_t cap, FileResult* r) {
  DataConfig config;
  config.schema = schema;
  if (label.has_transform) config.transforms[label.column] = label.transform.text;
  Result<internal::ParsePlan> plan = internal::BuildParsePlan(config, {});
  if (!plan.ok()) return plan.status().WithContext("profile of " + path);
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<io::LineReader> reader, io::LineReader::Open(path));
  io::LineReader& in = *reader;
  for (const internal::ColumnPlan& c : plan->columns) r->names.push_back(c.name);
  r->cols.resize(r->names.size());
  for (size_t i = 0; i < r->names.size(); ++i) r->cols[i].p.name = r->names[i];
  internal::PairFields fields;
  internal::BadRow bad;
  std::string line;
  while (in.Next(&line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (AtCap(in, *r, cap)) {
      r->file.truncated = true;
      break;
    }
    if (!internal::SplitPairLine(*plan, line, &fields, &bad)) {
      ++r->file.bad_rows;
      continue;
    }
    ++r->file.rows;
    for (size_t i = 0; i < plan->columns.size(); ++i) {
      ColumnAcc& c = r->cols[i];
      ++c.p.rows;
      const int slot = plan->columns[i].slot;
      if (slot < 0) continue;
      if (plan->columns[i].is_list) {
        const std::vector<internal::TextField>& list = fields.lists[slot];
        if (list.empty()) continue;
        const int64_t before = c.p.non_null;
        for (const internal::TextField& t : list) c.AddText(std::string_view(t.begin, t.end - t.begin));
        c.p.non_null = before + 1;
        continue;
      }
      const internal::TextField& t = fields.values[slot];
      if (t.begin == nullptr || t.begin == t.end) continue;
      const std::string_view text(t.begin, t.end - t.begin);
      c.AddText(text);
      if (static_cast<int>(i) == plan->label_column) label.Add(ParseNumber(text), r);
    }
  }
  RECTRAIN_RETURN_IF_ERROR(in.status());
  return OkStatus();
}

// The text of a Parquet value (for hashing) and its number, if any.
void AddParquetSlot(const io::parquet::ColumnData& d, int64_t s, ColumnAcc* c, std::optional<double>* num) {
  char buf[64];
  auto add_num = [&](double v, std::string_view text) {
    ++c->p.non_null;
    c->AddHash(HashBytes(text, 0));
    c->AddNumber(v);
    *num = v;
  };
  auto add_int = [&](int64_t v) {
    const auto r = std::to_chars(buf, buf + sizeof(buf), v);
    add_num(static_cast<double>(v), std::string_view(buf, r.ptr - buf));
  };
  auto add_double = [&](double v) {
    const auto r = std::to_chars(buf, buf + sizeof(buf), v);
    add_num(v, std::string_view(buf, r.ptr - buf));
  };
  switch (d.kind) {
    case io::parquet::ValueKind::kBool: add_num(d.bools[s], d.bools[s] ? "true" : "false"); break;
    case io::parquet::ValueKind::kInt32: add_int(d.int32s[s]); break;
    case io::parquet::ValueKind::kInt64: add_int(d.int64s[s]); break;
    case io::parquet::ValueKind::kFloat: add_double(d.floats[s]); break;
    case io::parquet::ValueKind::kDouble: add_double(d.doubles[s]); break;
    case io::parquet::ValueKind::kBinary: {
      const std::string_view t = d.StringAt(s);
      c->AddText(t);
      *num = ParseNumber(t);
      break;
    }
  }
}

Status ProfileParquet(const std::string& path, const LabelSpec& label, int64_t cap, FileResult* r) {
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<io::parquet::ParquetFile> file, io::parquet::ParquetFile::Open(path));
  std::vector<int> cols;
  for (int i = 0; i < file->num_columns(); ++i) {
    const io::parquet::ColumnSchema& s = file->schema()[i];
    if (!s.unsupported_reason.empty()) continue;  // listed nowhere: not readable
    cols.push_back(i);
    r->names.push_back(s.name);
  }
  r->cols.resize(cols.size());
  for (size_t i = 0; i < cols.size(); ++i) r->cols[i].p.name = r->names[i];
  std::vector<std::optional<double>> labels;
  for (int rg = 0; rg < file->num_row_groups(); ++rg) {
    if (cap > 0 && r->file.rows >= cap) {  // whole row groups until the cap
      r->file.truncated = true;
      break;
    }
    const int64_t n = file->row_group_num_rows(rg);
    r->file.rows += n;
    for (int col : cols) {  // on an object store, fetch the row group's chunks in parallel
      const auto [offset, bytes] = file->ColumnChunkRange(rg, col);
      file->Prefetch(offset, bytes);
    }
    for (size_t ci = 0; ci < cols.size(); ++ci) {
      RECTRAIN_ASSIGN_OR_RETURN(io::parquet::ColumnData d, file->ReadColumn(rg, cols[ci]));
      ColumnAcc& c = r->cols[ci];
      const bool is_label = r->names[ci] == label.column && !d.is_list;
      if (is_label) labels.assign(static_cast<size_t>(n), std::nullopt);
      for (int64_t row = 0; row < d.num_rows; ++row) {
        ++c.p.rows;
        std::optional<double> num;
        if (d.is_list) {
          const int64_t b = d.list_offsets[row], e = d.list_offsets[row + 1];
          if (d.IsNullList(row) || b == e) continue;
          const int64_t before = c.p.non_null;
          for (int64_t s = b; s < e; ++s) {
            if (!d.IsNull(s)) AddParquetSlot(d, s, &c, &num);
          }
          c.p.non_null = before + 1;  // the row has a value (a non-empty list)
          continue;
        }
        if (d.IsNull(row)) continue;
        AddParquetSlot(d, row, &c, &num);
        if (is_label && row < n) labels[row] = num;
      }
    }
    for (const auto& v : labels) label.Add(v, r);
    labels.clear();
  }
  return OkStatus();
}

// A binary sample cache (docs/formats/cache.md): its rows are already transformed, so the columns
// are the label, the dense features and the sparse fields as training sees them (a dense value
// is filled, a single-valued field always has an id: only an empty multi-valued list is null),
// and the label is counted as stored (no transform applied again). Read in file order up to cap
// rows (whole batches of block rows: the count is exact).
// The rows of a reader of decoded batches (a sample cache, IDX images): already transformed.
Status ProfileBatches(std::unique_ptr<BatchReader> reader, const LabelSpec& label, int64_t cap, FileResult* r);

Status ProfileCache(const std::string& path, const LabelSpec& label, int64_t cap, FileResult* r) {
  ReadOptions o;
  o.num_threads = 1;
  o.batch_size = 16384;
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<BatchReader> reader, OpenCacheReader({path}, o));
  return ProfileBatches(std::move(reader), label, cap, r);
}

Status ProfileIdx(const std::string& path, const LabelSpec& label, int64_t cap, FileResult* r) {
  DataConfig c;
  c.files = {path};
  c.schema.format = DataFormat::kIdx;
  ReadOptions o;
  o.batch_size = 16384;
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<BatchReader> reader, internal::OpenIdxReader(c, o));
  return ProfileBatches(std::move(reader), label, cap, r);
}

Status ProfileBatches(std::unique_ptr<BatchReader> reader, const LabelSpec& label, int64_t cap, FileResult* r) {
  const std::vector<std::string>& dense = reader->dense_names();
  const std::vector<std::string>& sparse = reader->sparse_names();
  r->names.push_back(label.column.empty() ? std::string("label") : label.column);
  r->names.insert(r->names.end(), dense.begin(), dense.end());
  r->names.insert(r->names.end(), sparse.begin(), sparse.end());
  r->cols.resize(r->names.size());
  for (size_t i = 0; i < r->names.size(); ++i) r->cols[i].p.name = r->names[i];
  const size_t nd = dense.size();
  while (true) {
    RECTRAIN_ASSIGN_OR_RETURN(std::optional<Batch> b, reader->Next());
    if (!b) break;
    int64_t n = b->size;
    if (cap > 0 && r->file.rows + n >= cap) {
      if (r->file.rows + n > cap) r->file.truncated = true;
      n = cap - r->file.rows;
    }
    for (int64_t row = 0; row < n; ++row) {
      const float y = b->labels[static_cast<size_t>(row)];
      ColumnAcc& lc = r->cols[0];
      ++lc.p.rows;
      ++lc.p.non_null;
      lc.AddHash(HashBytes(std::string_view(reinterpret_cast<const char*>(&y), sizeof(y)), 0));
      lc.AddNumber(y);
      if (std::isfinite(y)) {
        ++r->labeled;
        r->positive += y == 1.0f;
      }
      for (size_t d = 0; d < nd; ++d) {
        const float v = b->dense[static_cast<size_t>(row) * nd + d];
        ColumnAcc& c = r->cols[1 + d];
        ++c.p.rows;
        ++c.p.non_null;
        c.AddHash(HashBytes(std::string_view(reinterpret_cast<const char*>(&v), sizeof(v)), 0));
        c.AddNumber(v);
      }
      for (size_t f = 0; f < sparse.size(); ++f) {
        const SparseColumn& col = b->sparse[f];
        ColumnAcc& c = r->cols[1 + nd + f];
        ++c.p.rows;
        const int64_t begin = col.RowBegin(row), end = col.RowEnd(row);
        if (begin == end) continue;
        ++c.p.non_null;
        for (int64_t k = begin; k < end; ++k) {
          const uint64_t id = col.ids[static_cast<size_t>(k)];
          c.AddHash(HashBytes(std::string_view(reinterpret_cast<const char*>(&id), sizeof(id)), 0));
        }
      }
    }
    r->file.rows += n;
    if (r->file.truncated) break;  // at the cap: one more batch tells whether rows are left
  }
  return OkStatus();
}

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

// The format the files are profiled as: *.rtc files are sample caches whatever data.format says
// (as OpenBatchReader reads them); auto is IDX by magic, Parquet by suffix, else criteo.
DataFormat ProfiledFormat(DataFormat format, const std::vector<std::string>& files) {
  const bool cache = !files.empty() && std::all_of(files.begin(), files.end(), [](const std::string& f) {
    return f.size() >= 4 && f.compare(f.size() - 4, 4, ".rtc") == 0;
  });
  if (cache || format == DataFormat::kCache) return DataFormat::kCache;
  if (format != DataFormat::kAuto) return format;
  if (internal::LooksLikeIdx(files)) return DataFormat::kIdx;
  const bool parquet = std::all_of(files.begin(), files.end(), [](const std::string& f) {
    return f.size() >= 8 && f.compare(f.size() - 8, 8, ".parquet") == 0;
  });
  return parquet ? DataFormat::kParquet : DataFormat::kCriteo;
}

Result<LabelSpec> ProfiledLabel(DataFormat format, const SchemaConfig& schema,
                                const std::map<std::string, std::string>& transforms) {
  LabelSpec label;
  const bool fixed = format == DataFormat::kCriteo || format == DataFormat::kIdx ||
                     (format == DataFormat::kCache && schema.label.empty());
  label.column = fixed ? "label" : schema.label;
  if (format == DataFormat::kCache || format == DataFormat::kIdx) return label;  // stored transformed
  if (auto it = transforms.find(label.column); it != transforms.end()) {
    Result<FeatureTransform> t = ParseTransform(it->second);
    if (!t.ok()) return t.status().WithContext("features.transforms." + label.column);
    label.transform = std::move(t).value();
    label.has_transform = true;
  }
  return label;
}

Status ProfileOneFile(const std::string& path, DataFormat format, const SchemaConfig& schema, const LabelSpec& label,
                      int64_t cap, FileResult* r) {
  r->file.path = path;
  switch (format) {
    case DataFormat::kParquet: return ProfileParquet(path, label, cap, r);
    case DataFormat::kCache: return ProfileCache(path, label, cap, r);
    case DataFormat::kIdx: return ProfileIdx(path, label, cap, r);
    case DataFormat::kLibsvm:
    case DataFormat::kLibffm: {
      SchemaConfig s = schema;
      s.format = format;
      return ProfilePairs(path, s, label, cap, r);
    }
    default: return ProfileText(path, format, schema, label, cap, r);
  }
}

// Runs profile(i) for every file on `threads` threads, calling progress(done, total) from this
// thread as files finish.
void ForEachFile(int64_t total, int threads, const std::function<void(int64_t)>& profile,
                 const std::function<void(int64_t, int64_t)>& progress) {
  std::atomic<int64_t> next{0};
  std::mutex mu;
  std::condition_variable cv;
  int64_t done = 0;
  auto work = [&] {
    for (int64_t i = next.fetch_add(1); i < total; i = next.fetch_add(1)) {
      profile(i);
      std::lock_guard<std::mutex> lock(mu);
      ++done;
      cv.notify_one();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(work);
  {
    std::unique_lock<std::mutex> lock(mu);
    int64_t reported = 0;
    while (reported < total) {
      cv.wait(lock, [&] { return done > reported; });
      reported = done;
      if (progress) {
        lock.unlock();
        progress(reported, total);
        lock.lock();
      }
    }
  }
  for (auto& t : pool) t.join();
}

Result<DataProfile> MergeFileResults(const std::vector<std::string>& files, std::vector<FileResult>& results,
                                     const std::vector<Status>& statuses, const std::string& label) {
  DataProfile out;
  out.label = label;
  std::vector<ColumnAcc> merged;
  for (size_t i = 0; i < files.size(); ++i) {
    RECTRAIN_RETURN_IF_ERROR(statuses[i]);
    FileResult& r = results[i];
    if (i == 0) {
      merged = r.cols;
    } else {
      if (r.names != results[0].names) {
        return InvalidArgumentError(files[i] + ": its columns differ from those of " + files[0]);
      }
      for (size_t c = 0; c < merged.size(); ++c) merged[c].Merge(r.cols[c]);
    }
    out.rows += r.file.rows;
    out.truncated |= r.file.truncated;
    out.labeled_rows += r.labeled;
    out.positive_rows += r.positive;
    out.files.push_back(r.file);
  }
  bool found_label = false;
  for (ColumnAcc& c : merged) {
    c.p.distinct = std::min<double>(std::round(c.Estimate()), static_cast<double>(c.p.non_null));
    found_label |= c.p.name == label;
    out.columns.push_back(c.p);
  }
  if (!found_label) out.label.clear();
  return out;
}

}  // namespace

Result<DataProfile> ProfileFiles(const std::vector<std::string>& patterns, const SchemaConfig& schema,
                                 const std::map<std::string, std::string>& transforms,
                                 int num_threads,
                                 const std::function<void(int64_t, int64_t)>& progress,
                                 int64_t max_rows) {
  RECTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> files, io::ExpandPaths(patterns));
  const int64_t total = static_cast<int64_t>(files.size());
  // max_rows is shared evenly by the files, so the rows profiled do not depend on thread timing.
  const int64_t cap = max_rows <= 0 || files.empty() ? 0 : std::max<int64_t>(1, (max_rows + total - 1) / total);
  const DataFormat format = ProfiledFormat(schema.format, files);
  RECTRAIN_ASSIGN_OR_RETURN(const LabelSpec label, ProfiledLabel(format, schema, transforms));
  std::vector<FileResult> results(files.size());
  std::vector<Status> statuses(files.size());
  // Objects in a store mostly wait on the network: 16 at a time at least.
  const bool remote = !files.empty() && io::IsRemotePath(files[0]);
  const int threads = static_cast<int>(
      std::clamp<int64_t>(remote ? std::max(num_threads, 16) : num_threads, 1, std::max<int64_t>(total, 1)));
  ForEachFile(total, threads, [&](int64_t i) {
    statuses[i] = ProfileOneFile(files[i], format, schema, label, cap, &results[i]);
  }, progress);
  return MergeFileResults(files, results, statuses, label.column);
}

std::vector<std::string> CheckProfile(const DataProfile& p, const DataChecks& checks) {
  std::vector<std::string> v;
  if (checks.min_rows > 0 && p.rows < checks.min_rows && !p.truncated) {
    v.push_back("rows: " + std::to_string(p.rows) + " is below checks.min_rows = " +
                std::to_string(checks.min_rows));
  }
  if (checks.max_bad_rows >= 0) {
    for (const FileProfile& f : p.files) {
      if (f.bad_rows > checks.max_bad_rows) {
        v.push_back(f.path + ": " + std::to_string(f.bad_rows) +
                    " rows with a wrong field count exceed checks.max_bad_rows = " +
                    std::to_string(checks.max_bad_rows));
      }
    }
  }
  if (!checks.allow_constant_label && !p.label.empty() && p.labeled_rows > 0 &&
      (p.positive_rows == 0 || p.positive_rows == p.labeled_rows)) {
    v.push_back("label: constant: all " + std::to_string(p.labeled_rows) + " labeled rows" +
                (p.truncated ? " profiled" : "") + " are " + (p.positive_rows == 0 ? "0" : "1") +
                " (label " + p.label + "); a model cannot learn from one class (check the label "
                "column and its transform, or set checks.allow_constant_label: true)");
  }
  if (checks.has_label_rate) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.4f", p.LabelRate());
    if (p.label.empty()) {
      v.push_back("label rate: the files have no label column (checks.label_rate)");
    } else if (p.labeled_rows == 0) {
      v.push_back("label rate: no row has a numeric label in column " + p.label + " (checks.label_rate)");
    } else if (p.LabelRate() < checks.label_rate_min || p.LabelRate() > checks.label_rate_max) {
      v.push_back(std::string("label rate: ") + buf + " is outside checks.label_rate [" +
                  Num(checks.label_rate_min) + ", " + Num(checks.label_rate_max) + "]");
    }
  }
  auto null_line = [&](const ColumnProfile& c, const std::string& key, double limit) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.4f", c.NullRatio());
    v.push_back(c.name + ": null ratio " + buf + " exceeds checks.max_null_ratio." + key + " = " +
                Num(limit));
  };
  const auto star = checks.max_null_ratio.find("*");
  for (const ColumnProfile& c : p.columns) {
    auto it = checks.max_null_ratio.find(c.name);
    if (it != checks.max_null_ratio.end()) {
      if (c.NullRatio() > it->second) null_line(c, it->first, it->second);
    } else if (star != checks.max_null_ratio.end() && c.NullRatio() > star->second) {
      null_line(c, "*", star->second);
    }
  }
  for (const auto& entry : checks.max_null_ratio) {
    const std::string& name = entry.first;  // not a structured binding: captured below (clang 14)
    if (name == "*") continue;
    const bool known = std::any_of(p.columns.begin(), p.columns.end(),
                                   [&](const ColumnProfile& c) { return c.name == name; });
    if (!known) {
      std::string cols;
      for (const ColumnProfile& c : p.columns) cols += (cols.empty() ? "" : ", ") + c.name;
      v.push_back("checks.max_null_ratio." + name + ": no such column (columns: " + cols + ")");
    }
  }
  return v;
}

std::string FormatProfileTable(const DataProfile& p) {
  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof(buf), "%-50s %12s %10s\n", "file", "rows", "bad_rows");
  out += buf;
  for (const FileProfile& f : p.files) {
    std::snprintf(buf, sizeof(buf), "%-50s %12lld %10lld\n", f.path.c_str(),
                  static_cast<long long>(f.rows), static_cast<long long>(f.bad_rows));
    out += buf;
  }
  std::snprintf(buf, sizeof(buf), "\n%-20s %10s %10s %10s %12s %12s %12s %10s\n", "column", "rows",
                "non_null", "null_ratio", "min", "max", "mean", "distinct~");
  out += buf;
  for (const ColumnProfile& c : p.columns) {
    const bool num = c.numeric > 0;
    std::snprintf(buf, sizeof(buf), "%-20s %10lld %10lld %10.4f %12s %12s %12s %10.0f\n",
                  c.name.c_str(), static_cast<long long>(c.rows), static_cast<long long>(c.non_null),
                  c.NullRatio(), num ? Num(c.min).c_str() : "-", num ? Num(c.max).c_str() : "-",
                  num ? Num(c.Mean()).c_str() : "-", c.distinct);
    out += buf;
  }
  if (!p.label.empty()) {
    std::snprintf(buf, sizeof(buf), "\nrows %lld, label %s: rate %.4f (%lld of %lld labeled rows)\n",
                  static_cast<long long>(p.rows), p.label.c_str(), p.LabelRate(),
                  static_cast<long long>(p.positive_rows), static_cast<long long>(p.labeled_rows));
  } else {
    std::snprintf(buf, sizeof(buf), "\nrows %lld (no label column)\n", static_cast<long long>(p.rows));
  }
  out += buf;
  if (p.truncated) out += "(profiled the first rows of each file only: checks.max_rows)\n";
  return out;
}

std::string FormatProfileJson(const DataProfile& p, const std::vector<std::string>* violations) {
  nlohmann::ordered_json j;
  j["rows"] = p.rows;
  if (p.truncated) j["truncated"] = true;  // only the first rows of some file (max_rows)
  j["label"] = p.label;
  j["label_rate"] = p.LabelRate();
  j["labeled_rows"] = p.labeled_rows;
  j["positive_rows"] = p.positive_rows;
  j["files"] = nlohmann::ordered_json::array();
  for (const FileProfile& f : p.files) {
    j["files"].push_back({{"path", f.path}, {"rows", f.rows}, {"bad_rows", f.bad_rows}});
    if (f.truncated) j["files"].back()["truncated"] = true;
  }
  j["columns"] = nlohmann::ordered_json::array();
  for (const ColumnProfile& c : p.columns) {
    nlohmann::ordered_json o = {{"name", c.name},          {"rows", c.rows},
                                {"non_null", c.non_null},  {"null_ratio", c.NullRatio()},
                                {"numeric", c.numeric}};
    if (c.numeric > 0) {
      o["min"] = c.min;
      o["max"] = c.max;
      o["mean"] = c.Mean();
    } else {
      o["min"] = o["max"] = o["mean"] = nullptr;
    }
    o["distinct"] = c.distinct;
    j["columns"].push_back(std::move(o));
  }
  if (violations != nullptr) j["violations"] = *violations;
  // Column names and paths come from the data: invalid UTF-8 is replaced (U+FFFD), not thrown.
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace rectrain::data

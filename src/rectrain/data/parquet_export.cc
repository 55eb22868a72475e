#include "rectrain/data/parquet_export.h"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "rectrain/base/random.h"
#include "rectrain/base/stopwatch.h"
#include "rectrain/data/errors.h"
#include "rectrain/data/internal/opener.h"
#include "rectrain/data/internal/parquet_source.h"
#include "rectrain/data/internal/raw_columns.h"
#include "rectrain/data/internal/text_parser.h"
#include "rectrain/io/file.h"

namespace rectrain::data {
namespace {

using internal::ParsePlan;
using internal::RawColumn;
using internal::RowOrigin;
using io::parquet::ColumnData;
using io::parquet::ParquetFile;
using io::parquet::ParquetWriter;

constexpr int64_t kMaxLineBytes = int64_t{64} << 20;  // as the reader
constexpr int64_t kReadBlock = int64_t{4} << 20;
constexpr int kMaxParts = 100000;  // part-NNNNN: five digits keep the names in row order

// An io/ writer as the Parquet writer's sink.
class FileSink final : public io::parquet::ByteSink {
 public:
  explicit FileSink(std::unique_ptr<io::AtomicFileWriter> file) : file_(std::move(file)) {}
  Status Append(std::string_view bytes) override { return file_->Append(bytes); }
  Status Commit() { return file_->Commit(); }

 private:
  std::unique_ptr<io::AtomicFileWriter> file_;
};

// Row groups into one file, or into parts of at most `target` bytes (a part holds at least one
// row group).
class PartWriter {
 public:
  PartWriter(std::string out, int64_t target, const io::parquet::ParquetWriteOptions& options)
      : out_(std::move(out)), target_(target), options_(options) {}

  Status Add(const std::vector<io::parquet::WriteColumn>& schema, const std::vector<ColumnData>& columns) {
    if (writer_ == nullptr) {
      RECTRAIN_RETURN_IF_ERROR(OpenPart(schema));
    }
    RECTRAIN_ASSIGN_OR_RETURN(io::parquet::EncodedRowGroup group, writer_->Encode(columns));
    if (target_ > 0 && writer_->num_row_groups() > 0 && writer_->bytes_written() + group.bytes() > target_) {
      RECTRAIN_RETURN_IF_ERROR(ClosePart());
      RECTRAIN_RETURN_IF_ERROR(OpenPart(schema));
    }
    ++row_groups_;
    return writer_->Append(std::move(group));
  }

  Status Close() {
    RECTRAIN_RETURN_IF_ERROR(writer_ == nullptr ? OkStatus() : ClosePart());
    closed_ = true;
    return OkStatus();
  }

  // A conversion that fails leaves no part behind: the parts completed so far are removed (the
  // open one is a temporary file that its writer removes).
  ~PartWriter() {
    if (closed_) return;
    for (const std::string& f : committed_) {
      std::error_code ec;
      std::filesystem::remove(f, ec);
    }
  }

  const std::vector<std::string>& files() const { return files_; }
  int64_t bytes() const { return bytes_; }
  int64_t row_groups() const { return row_groups_; }
  // Per column, the data page encodings used in any part.
  const std::vector<std::vector<std::string>>& encodings() const { return encodings_; }

 private:
  Status OpenPart(const std::vector<io::parquet::WriteColumn>& schema) {
    std::string path = out_;
    if (target_ > 0) {
      if (files_.size() >= kMaxParts) {
        return InvalidArgumentError("more than " + std::to_string(kMaxParts) + " parts in " + out_ +
                                    "; raise --target-size");
      }
      char name[32];
      std::snprintf(name, sizeof(name), "/part-%05d.parquet", static_cast<int>(files_.size()));
      path += name;
    }
    RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<io::AtomicFileWriter> file, io::AtomicFileWriter::Create(path));
    sink_ = std::make_unique<FileSink>(std::move(file));
    RECTRAIN_ASSIGN_OR_RETURN(writer_, ParquetWriter::Create(schema, options_, sink_.get()));
    files_.push_back(std::move(path));
    return OkStatus();
  }

  Status ClosePart() {
    RECTRAIN_RETURN_IF_ERROR(writer_->Close());
    RECTRAIN_RETURN_IF_ERROR(sink_->Commit());
    committed_.push_back(files_.back());
    bytes_ += writer_->bytes_written();
    const auto enc = writer_->data_page_encodings();
    encodings_.resize(enc.size());
    for (size_t i = 0; i < enc.size(); ++i) {
      for (const std::string& e : enc[i]) {
        if (std::find(encodings_[i].begin(), encodings_[i].end(), e) == encodings_[i].end()) encodings_[i].push_back(e);
      }
    }
    writer_.reset();
    sink_.reset();
    return OkStatus();
  }

  const std::string out_;
  const int64_t target_;
  const io::parquet::ParquetWriteOptions options_;
  std::unique_ptr<FileSink> sink_;
  std::unique_ptr<ParquetWriter> writer_;
  std::vector<std::string> files_;
  std::vector<std::string> committed_;
  bool closed_ = false;
  int64_t bytes_ = 0;
  int64_t row_groups_ = 0;
  std::vector<std::vector<std::string>> encodings_;
};

// The first line of `path` (without '\n' and a trailing '\r').
Result<std::string> FirstLine(const io::RandomAccessFile& f) {
  std::string line;
  std::vector<char> buf(64 << 10);
  for (int64_t offset = 0; offset < f.size() && static_cast<int64_t>(line.size()) <= kMaxLineBytes;) {
    RECTRAIN_ASSIGN_OR_RETURN(int64_t n, f.ReadAt(offset, static_cast<int64_t>(buf.size()), buf.data()));
    if (n == 0) break;
    const void* nl = std::memchr(buf.data(), '\n', static_cast<size_t>(n));
    line.append(buf.data(), nl ? static_cast<const char*>(nl) - buf.data() : n);
    if (nl) break;
    offset += n;
  }
  if (static_cast<int64_t>(line.size()) > kMaxLineBytes) return DataLossError(errors::LineTooLong(f.path(), 1, kMaxLineBytes));
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

// Reads the inputs on the calling thread and encodes on a second one: a full row group is handed
// over (double buffering) and parsing goes on while the encoder types, encodes, compresses and
// writes it.
class Exporter {
 public:
  Exporter(const DataConfig& config, const ParquetExportOptions& options, std::string out)
      : config_(config), options_(options), out_(std::move(out)), parts_(out_, options.target_part_bytes, options.write) {}

  ~Exporter() {
    StopEncoder();
    if (rejects_ != nullptr) std::fclose(rejects_);
  }

  Result<ParquetExportInfo> Run();

 private:
  Status Prepare();
  Status ReadText(int file);
  Status ReadParquet(int file);
  // Compaction without a config: every row of every row group, nothing to validate.
  Status CopyRowGroups(int file, const ParquetFile& pq, const std::vector<int>& leaves);
  // A row the reader rejects: fails (strict, or past max_bad_rows) or counts it.
  Status Reject(const internal::BadRow& bad, int file, int64_t line);
  Status RowAdded() { return raw_->rows() >= options_.row_group_rows || raw_->bytes() >= options_.row_group_bytes ? Handoff() : OkStatus(); }
  // Hands raw_ to the encoder once it is idle; returns the encoder's first error.
  Status Handoff();
  // Waits until the encoder is idle; its first error.
  Status WaitEncoder();
  void EncoderLoop();
  // The encoder's work: types, encodes and writes pending_.
  Status Encode();
  void StopEncoder();
  void FillReadBack(ParquetExportInfo* info) const;

  const DataConfig& config_;
  const ParquetExportOptions& options_;
  const std::string out_;
  std::vector<std::string> paths_;
  DataFormat format_ = DataFormat::kCriteo;
  std::vector<std::string> header_columns_;
  std::vector<bool> list_columns_;
  std::string header_line_;
  ParsePlan plan_;
  // Parquet input without declared features: the columns are copied as they are (no plan).
  bool copy_only_ = false;
  std::vector<RawColumn> columns_;
  std::vector<std::string> notes_;
  std::unique_ptr<internal::RawRowGroup> raw_;  // being filled by the reading thread
  // Encoder-thread state (pending_ and the members below it until parts_) while has_work_.
  std::unique_ptr<internal::RawRowGroup> pending_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool has_work_ = false;  // guarded by mu_
  bool stop_ = false;      // guarded by mu_
  Status encode_status_;   // guarded by mu_
  std::thread encoder_;
  std::vector<std::optional<io::parquet::PhysicalType>> types_;
  std::vector<io::parquet::WriteColumn> schema_;
  std::vector<ColumnData> typed_;
  PartWriter parts_;
  int64_t rows_ = 0;
  int64_t rejected_ = 0;
  int64_t input_bytes_ = 0;
  std::FILE* rejects_ = nullptr;
  std::unique_ptr<ParquetFile> first_parquet_;
};

Status Exporter::Prepare() {
  if (options_.row_group_rows < 1) return InvalidArgumentError("--row-group-rows must be >= 1");
  if (options_.row_group_bytes < 1) return InvalidArgumentError("row_group_bytes must be >= 1");
  if (options_.target_part_bytes < 0) return InvalidArgumentError("--target-size must be >= 0");
  if (config_.max_bad_rows < 0) return InvalidArgumentError("data.max_bad_rows must be >= 0");
  RECTRAIN_ASSIGN_OR_RETURN(paths_, io::ExpandPaths(config_.files));
  RECTRAIN_ASSIGN_OR_RETURN(format_, internal::ResolveFormat(config_.schema.format, paths_));
  if (format_ == DataFormat::kCache || format_ == DataFormat::kIdx) {
    return InvalidArgumentError("--to parquet reads sample files (criteo, csv, tsv, libsvm, libffm, parquet), not format " + std::string(FormatName(format_)));
  }
  DataConfig c = config_;
  c.schema.format = format_;
  const bool header = (format_ == DataFormat::kCsv || format_ == DataFormat::kTsv) && c.schema.header;
  if (format_ == DataFormat::kParquet) {
    RECTRAIN_ASSIGN_OR_RETURN(first_parquet_, ParquetFile::Open(paths_[0]));
    for (const io::parquet::ColumnSchema& s : first_parquet_->schema()) {
      if (!header_columns_.empty() && header_columns_.back() == s.name) continue;  // struct leaves
      header_columns_.push_back(s.name);
      list_columns_.push_back(s.is_list);
    }
  } else if (header) {
    RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<io::RandomAccessFile> f, io::RandomAccessFile::Open(paths_[0]));
    RECTRAIN_ASSIGN_OR_RETURN(header_line_, FirstLine(*f));
    const char delim = format_ == DataFormat::kTsv ? '\t' : (c.schema.delimiter == '\t' ? ',' : c.schema.delimiter);
    header_columns_ = internal::SplitHeader(header_line_, delim, true);
  }
  copy_only_ = format_ == DataFormat::kParquet && c.schema.dense.empty() && c.schema.sparse.empty();
  if (copy_only_) {
    columns_ = internal::ParquetRawColumns(*first_parquet_, header_columns_, &notes_);
    if (columns_.empty()) return InvalidArgumentError(paths_[0] + " has no column the Parquet writer can hold");
  } else {
    Result<ParsePlan> plan = internal::BuildParsePlan(c, header_columns_, list_columns_);
    if (!plan.ok()) return plan.status().WithContext(header || first_parquet_ ? "schema of " + paths_[0] : "the config");
    plan_ = std::move(plan).value();
    columns_ = internal::PlanRawColumns(&plan_, first_parquet_.get(), &notes_);
    // Filters and downsampling apply when the Parquet files are read, not here (their columns are
    // written as they are).
    plan_.filters.clear();
    plan_.downsample = false;
  }
  raw_ = std::make_unique<internal::RawRowGroup>(&columns_);
  pending_ = std::make_unique<internal::RawRowGroup>(&columns_);
  if (options_.target_part_bytes > 0) {
    std::error_code ec;
    std::filesystem::create_directories(out_, ec);
    Result<std::vector<std::string>> old = io::ExpandPaths({out_ + "/part-*.parquet"});
    if (old.ok() && !old->empty()) {
      return InvalidArgumentError(out_ + " already holds " + std::to_string(old->size()) + " part files (" +
                                  (*old)[0] + ", ...); remove them or choose another --out");
    }
  }
  if (!config_.rejects_file.empty()) {
    rejects_ = std::fopen(config_.rejects_file.c_str(), "w");
    if (rejects_ == nullptr) return ErrnoToStatus(errno, "cannot create data.rejects_file " + config_.rejects_file);
  }
  return OkStatus();
}

Status Exporter::Reject(const internal::BadRow& bad, int file, int64_t line) {
  const std::string msg = internal::FormatBadRow(plan_, bad, paths_[file], line);
  if (config_.max_bad_rows <= 0) return InvalidArgumentError(errors::StrictBadRow(msg));
  ++rejected_;
  if (rejects_ != nullptr) {
    const std::string rec = paths_[file] + "\t" + std::to_string(line) + "\t" + msg + "\t" + bad.raw_line + "\n";
    if (std::fwrite(rec.data(), 1, rec.size(), rejects_) != rec.size() || std::fflush(rejects_) != 0) {
      return UnavailableError("cannot write the rejects file " + config_.rejects_file);
    }
  }
  if (rejected_ > config_.max_bad_rows) {
    return InvalidArgumentError(errors::TooManyBadRows(rejected_, config_.max_bad_rows, config_.rejects_file, msg));
  }
  return OkStatus();
}

Status Exporter::ReadText(int file) {
  const std::string& path = paths_[file];
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<io::RandomAccessFile> f, io::RandomAccessFile::Open(path));
  if (f->size() == 0) return InvalidArgumentError(errors::EmptyFile(path, false));
  input_bytes_ += f->size();
  internal::LineParser parser(&plan_);
  internal::RowBlock block;
  const bool keep_raw = rejects_ != nullptr;
  std::string buf;
  int64_t offset = 0, line = 0;
  bool eof = false;
  size_t pos = 0;
  while (true) {
    const size_t nl = buf.find('\n', pos);
    if (nl == std::string::npos && !eof) {
      buf.erase(0, pos);
      pos = 0;
      if (static_cast<int64_t>(buf.size()) > kMaxLineBytes) return DataLossError(errors::LineTooLong(path, line + 1, kMaxLineBytes));
      const size_t had = buf.size();
      buf.resize(had + kReadBlock);
      RECTRAIN_ASSIGN_OR_RETURN(int64_t n, f->ReadAt(offset, kReadBlock, buf.data() + had));
      buf.resize(had + static_cast<size_t>(n));
      offset += n;
      eof = n == 0 || offset >= f->size();
      continue;
    }
    if (nl == std::string::npos && pos >= buf.size()) break;  // a trailing '\n' starts no line
    const size_t end = nl == std::string::npos ? buf.size() : nl;
    const std::string_view text(buf.data() + pos, end - pos);
    pos = nl == std::string::npos ? buf.size() : nl + 1;
    ++line;
    if (static_cast<int64_t>(text.size()) > kMaxLineBytes) return DataLossError(errors::LineTooLong(path, line, kMaxLineBytes));
    if (line == 1 && plan_.header) {
      std::string h(text);
      if (!h.empty() && h.back() == '\r') h.pop_back();
      if (h != header_line_) {
        return InvalidArgumentError("the header of " + path + " (\"" + errors::Snippet(h) + "\") differs from the header of " +
                                    paths_[0] + " (\"" + errors::Snippet(header_line_) + "\"); all files must share one header");
      }
      continue;
    }
    if (block.rows >= 4096) block.Reset();
    if (!parser.ParseLine(text, line, keep_raw, &block)) {
      RECTRAIN_RETURN_IF_ERROR(Reject(block.bad.back(), file, line));
      block.bad.clear();
      continue;
    }
    if (plan_.pairs) {
      raw_->AddPairs(parser.pairs(), RowOrigin{file, line});
    } else {
      raw_->AddText(parser.fields(), RowOrigin{file, line});
    }
    RECTRAIN_RETURN_IF_ERROR(RowAdded());
  }
  if (line <= (plan_.header ? 1 : 0)) return InvalidArgumentError(errors::EmptyFile(path, plan_.header));
  return OkStatus();
}

Status Exporter::ReadParquet(int file) {
  const std::string& path = paths_[file];
  std::unique_ptr<ParquetFile> pq;
  if (file == 0) {
    pq = std::move(first_parquet_);
  } else {
    RECTRAIN_ASSIGN_OR_RETURN(pq, ParquetFile::Open(path));
  }
  if (pq->num_rows() == 0) return InvalidArgumentError(errors::EmptyFile(path, false));
  input_bytes_ += pq->file_size();
  std::vector<int> leaves;  // per slot
  if (copy_only_) {
    for (const RawColumn& c : columns_) {
      const Result<int> leaf = pq->FindColumn(c.name);
      if (!leaf.ok()) {
        return InvalidArgumentError(path + " has no column \"" + c.name + "\" (" + paths_[0] +
                                    " has it; every file must have the columns of the first)");
      }
      leaves.push_back(*leaf);
    }
  } else {
    RECTRAIN_ASSIGN_OR_RETURN(leaves, internal::MapParquetColumns(plan_, *pq));
  }
  for (const RawColumn& c : columns_) {
    const io::parquet::ColumnSchema& s = pq->schema()[leaves[c.slot]];
    const io::parquet::PhysicalType t =
        s.physical_type == io::parquet::PhysicalType::kFixedLenByteArray ? io::parquet::PhysicalType::kByteArray : s.physical_type;
    if (t != c.source.type) {
      return InvalidArgumentError(path + ": column \"" + c.name + "\" is " + std::string(PhysicalTypeName(s.physical_type)) +
                                  " here but " + std::string(PhysicalTypeName(c.source.type)) + " in " + paths_[0] +
                                  "; every file must give a column one type");
    }
  }
  if (copy_only_) return CopyRowGroups(file, *pq, leaves);
  internal::RowGroupDecoder decoder(&plan_);
  internal::RowBlock block;
  int64_t before = 0;
  for (int rg = 0; rg < pq->num_row_groups(); ++rg) {
    const int64_t rows = pq->row_group_num_rows(rg);
    RECTRAIN_RETURN_IF_ERROR(decoder.DecodeRowGroup(*pq, leaves, rg));
    block.Reset();
    decoder.EvalRows(0, rows, 0, before, config_.max_bad_rows, /*keep_raw=*/false, &block);
    for (const internal::BadRow& bad : block.bad) RECTRAIN_RETURN_IF_ERROR(Reject(bad, file, before + bad.rel_line));
    for (int64_t k = 0; k < block.rows; ++k) {
      const int64_t row = block.rel_line[k] - 1;
      raw_->AddParquet(decoder.columns(), row, RowOrigin{file, before + row + 1});
      RECTRAIN_RETURN_IF_ERROR(RowAdded());
    }
    before += rows;
  }
  return OkStatus();
}

Status Exporter::CopyRowGroups(int file, const ParquetFile& pq, const std::vector<int>& leaves) {
  io::parquet::ColumnChunkReader reader(&pq);
  std::vector<ColumnData> data(columns_.size());
  int64_t before = 0;
  for (int rg = 0; rg < pq.num_row_groups(); ++rg) {
    const int64_t rows = pq.row_group_num_rows(rg);
    for (size_t i = 0; i < columns_.size(); ++i) {
      RECTRAIN_RETURN_IF_ERROR(reader.Read(rg, leaves[i], &data[i]));
      if (data[i].num_rows != rows) {
        return DataLossError(paths_[file] + ": column '" + columns_[i].name + "' (row group " + std::to_string(rg) +
                             ") has " + std::to_string(data[i].num_rows) + " rows, the row group " + std::to_string(rows));
      }
    }
    for (int64_t row = 0; row < rows;) {
      const int64_t n = std::max<int64_t>(1, std::min(rows - row, options_.row_group_rows - raw_->rows()));
      raw_->AddParquetRows(data, row, row + n, RowOrigin{file, before + row + 1});
      row += n;
      RECTRAIN_RETURN_IF_ERROR(RowAdded());
    }
    before += rows;
  }
  return OkStatus();
}

Status Exporter::Handoff() {
  if (raw_->rows() == 0) return OkStatus();
  if (!encoder_.joinable()) encoder_ = std::thread([this] { EncoderLoop(); });
  rows_ += raw_->rows();
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !has_work_; });
    if (!encode_status_.ok()) return encode_status_;
    std::swap(raw_, pending_);  // pending_ was emptied by the encoder's Finish
    has_work_ = true;
  }
  cv_.notify_all();
  return OkStatus();
}

Status Exporter::WaitEncoder() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !has_work_; });
  return encode_status_;
}

void Exporter::EncoderLoop() {
  while (true) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return has_work_ || stop_; });
    if (!has_work_) return;
    const bool failed = !encode_status_.ok();
    lock.unlock();
    Status s = failed ? OkStatus() : Encode();
    lock.lock();
    if (!s.ok() && encode_status_.ok()) encode_status_ = std::move(s);
    has_work_ = false;
    lock.unlock();
    cv_.notify_all();
  }
}

void Exporter::StopEncoder() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (encoder_.joinable()) encoder_.join();
}

Status Exporter::Encode() {
  RECTRAIN_RETURN_IF_ERROR(pending_->Finish(options_.double_numbers, paths_, &types_, &typed_));
  if (schema_.empty()) {
    schema_ = internal::WriteColumnsOf(columns_, types_);
    // A Parquet input column may be nullable in another file than the first.
    for (io::parquet::WriteColumn& w : schema_) w.optional = w.element_optional = true;
  }
  return parts_.Add(schema_, typed_);
}

void Exporter::FillReadBack(ParquetExportInfo* info) const {
  auto quote = [](const std::string& s) {
    std::string q = "\"";
    for (const char ch : s) q += (ch == '"' || ch == '\\') ? std::string("\\") + ch : std::string(1, ch);
    return q + "\"";
  };
  auto list = [&](const std::vector<std::string>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + quote(v[i]);
    return s + "]";
  };
  DataConfig& d = info->read_back;
  d = config_;
  d.files = options_.target_part_bytes > 0 ? std::vector<std::string>{out_ + "/part-*.parquet"} : info->files;
  info->yaml = "data:\n  train: " + quote(d.files[0]) + "\n  format: parquet\n";
  d.schema.format = DataFormat::kParquet;
  if (copy_only_) return;  // the input's own schema reads the copy
  d.schema = SchemaConfig{};
  d.schema.format = DataFormat::kParquet;
  d.schema.label = plan_.columns[plan_.label_column].name;
  d.schema.dense = plan_.dense_names;
  d.schema.sparse = plan_.sparse_names;
  info->yaml += "  label: " + quote(d.schema.label) + "\n  dense: " + list(d.schema.dense) + "\n  sparse: " +
                list(d.schema.sparse) + "\n";
  if (plan_.has_group) {
    d.schema.group_key = plan_.columns[plan_.group_column].name;
    info->yaml += "  group_key: " + quote(d.schema.group_key) + "\n";
  }
}

Result<ParquetExportInfo> Exporter::Run() {
  Stopwatch sw;
  RECTRAIN_RETURN_IF_ERROR(Prepare());
  for (int i = 0; i < static_cast<int>(paths_.size()); ++i) {
    Status s = format_ == DataFormat::kParquet ? ReadParquet(i) : ReadText(i);
    if (!s.ok()) return s;
  }
  RECTRAIN_RETURN_IF_ERROR(Handoff());
  RECTRAIN_RETURN_IF_ERROR(WaitEncoder());
  StopEncoder();
  if (rows_ == 0) {
    return InvalidArgumentError("the input has no rows (every row was rejected); nothing to write to " + out_);
  }
  RECTRAIN_RETURN_IF_ERROR(parts_.Close());
  ParquetExportInfo info;
  info.files = parts_.files();
  info.rows = rows_;
  info.bytes = parts_.bytes();
  info.row_groups = parts_.row_groups();
  info.rows_rejected = rejected_;
  info.input_bytes = input_bytes_;
  info.notes = notes_;
  for (size_t i = 0; i < schema_.size(); ++i) {
    const io::parquet::WriteColumn& w = schema_[i];
    std::string type = w.type == io::parquet::PhysicalType::kByteArray ? (w.utf8 ? "STRING" : "BINARY")
                                                                       : std::string(PhysicalTypeName(w.type));
    if (w.is_list) type = "LIST<" + type + ">";
    std::string enc;
    if (i < parts_.encodings().size()) {
      for (const std::string& e : parts_.encodings()[i]) enc += (enc.empty() ? "" : ", ") + e;
    }
    info.columns.push_back(w.name + " " + type + " (" + enc + ")");
  }
  FillReadBack(&info);
  info.seconds = sw.Seconds();
  return info;
}

}  // namespace

Result<ParquetExportInfo> ExportParquet(const DataConfig& config, const ParquetExportOptions& options,
                                        const std::string& out) {
  if (out.empty()) return InvalidArgumentError("no output path given for the Parquet export");
  Exporter e(config, options, out);
  return e.Run();
}

}  // namespace rectrain::data

#include "rectrain/io/file.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

#include "rectrain/base/random.h"
#include "rectrain/io/fs/file_system.h"
#include "rectrain/io/fs/local_file_system.h"
#include "rectrain/io/s3/s3_file_system.h"

namespace rectrain::io {
namespace {

bool HasGlobChars(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

// The schemes registered besides the local file system. Read on every path lookup, written by
// RegisterFileSystem (tests, and the built-in object stores on first use).
struct Registry {
  std::mutex mu;
  std::map<std::string, FileSystem*, std::less<>> by_scheme;
};
Registry& TheRegistry() {
  static Registry* r = new Registry();  // never destroyed: lookups may run during exit
  return *r;
}

// "s3" for "s3://bucket/key"; empty for a local path.
std::string_view SchemeOf(std::string_view path) {
  const size_t p = path.find("://");
  if (p == std::string_view::npos || p == 0) return {};
  for (char c : path.substr(0, p)) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.')) return {};
  }
  return path.substr(0, p);
}

}  // namespace

Status CheckRegularFile(const FileStat& st, std::string_view what) {
  if (st.type == FileType::kDirectory) {
    return InvalidArgumentError(st.path + " is a directory" + std::string(what) +
                                "; list files, or use a glob such as " + st.path + "/*.tsv");
  }
  if (st.type != FileType::kFile) {
    return InvalidArgumentError(st.path + " is not a regular file" + std::string(what));
  }
  return OkStatus();
}

FileSystem& FileSystemFor(std::string_view path) {
  static LocalFileSystem* local = new LocalFileSystem();
  const std::string_view scheme = SchemeOf(path);
  if (scheme.empty()) return *local;
  {
    Registry& r = TheRegistry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.by_scheme.find(scheme);
    if (it != r.by_scheme.end()) return *it->second;
  }
  if (scheme == "s3") return *s3::S3FileSystem::Default();
  return *local;  // an unknown scheme reads as a local name, and fails as "no such file"
}

bool IsRemotePath(std::string_view path) { return FileSystemFor(path).remote(); }

RemoteIoStats RemoteIoTotals() {
  std::vector<const FileSystem*> used;
  {
    Registry& r = TheRegistry();
    std::lock_guard<std::mutex> lock(r.mu);
    for (const auto& [scheme, fs] : r.by_scheme) used.push_back(fs);
  }
  if (s3::S3FileSystem* s3 = s3::S3FileSystem::DefaultIfUsed()) used.push_back(s3);
  RemoteIoStats total;
  for (const FileSystem* fs : used) {
    const RemoteIoStats s = fs->io_stats();
    total.requests += s.requests;
    total.retries += s.retries;
    total.bytes_read += s.bytes_read;
    total.bytes_written += s.bytes_written;
    for (const auto& [reason, n] : s.retry_reasons) total.retry_reasons[reason] += n;
  }
  return total;
}

std::string RemoteIoStats::ToString() const {
  auto mib = [](int64_t b) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.1f MiB", static_cast<double>(b) / (1 << 20));
    return std::string(buf);
  };
  std::string out = std::to_string(requests) + " requests, " + std::to_string(retries) + " retries";
  if (!retry_reasons.empty()) {
    out += " (";
    bool first = true;
    for (const auto& [reason, n] : retry_reasons) {
      out += (first ? "" : ", ") + reason + " x" + std::to_string(n);
      first = false;
    }
    out += ")";
  }
  return out + ", " + mib(bytes_read) + " read, " + mib(bytes_written) + " written";
}

void RegisterFileSystem(std::string scheme, FileSystem* fs) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.by_scheme[std::move(scheme)] = fs;
}

std::string JoinPath(std::string_view dir, std::string_view name) {
  std::string out(dir);
  if (!out.empty() && out.back() != '/') out += '/';
  while (!name.empty() && name.front() == '/') name.remove_prefix(1);
  out += name;
  return out;
}

Result<std::vector<ExpandedFile>> ExpandPathsWithSizes(const std::vector<std::string>& patterns) {
  if (patterns.empty()) {
    return InvalidArgumentError("no input files: data.files is empty; set it to paths or globs");
  }
  std::vector<ExpandedFile> out;
  for (const std::string& pattern : patterns) {
    if (pattern.empty()) return InvalidArgumentError("data.files contains an empty path");
    FileSystem& fs = FileSystemFor(pattern);
    const bool prefix = fs.remote() && pattern.back() == '/';
    if (!HasGlobChars(pattern) && !prefix) {
      RECTRAIN_ASSIGN_OR_RETURN(FileStat st, fs.Stat(pattern));
      RECTRAIN_RETURN_IF_ERROR(CheckRegularFile(st, ""));
      out.push_back({pattern, st.size});
      continue;
    }
    if (prefix) {  // every object below it
      Result<std::vector<DirEntry>> below = fs.List(pattern, /*recursive=*/true);
      if (!below.ok() && below.status().code() != StatusCode::kNotFound) return below.status();
      if (!below.ok() || below->empty()) return NotFoundError("no object under the prefix \"" + pattern + "\"");
      for (const DirEntry& e : *below) out.push_back({JoinPath(pattern, e.name), e.size});
      continue;
    }
    RECTRAIN_ASSIGN_OR_RETURN(std::vector<FileStat> matches, fs.Glob(pattern));
    if (matches.empty()) return NotFoundError("no file matches the pattern \"" + pattern + "\"");
    for (const FileStat& m : matches) {
      RECTRAIN_RETURN_IF_ERROR(CheckRegularFile(m, " (matched by \"" + pattern + "\")"));
      out.push_back({m.path, m.size});
    }
  }
  std::sort(out.begin(), out.end(), [](const ExpandedFile& a, const ExpandedFile& b) { return a.path < b.path; });
  out.erase(std::unique(out.begin(), out.end(), [](const ExpandedFile& a, const ExpandedFile& b) { return a.path == b.path; }),
            out.end());
  return out;
}

Result<std::vector<std::string>> ExpandPaths(const std::vector<std::string>& patterns) {
  RECTRAIN_ASSIGN_OR_RETURN(std::vector<ExpandedFile> files, ExpandPathsWithSizes(patterns));
  std::vector<std::string> out;
  out.reserve(files.size());
  for (ExpandedFile& f : files) out.push_back(std::move(f.path));
  return out;
}

Result<std::unique_ptr<RandomAccessFile>> RandomAccessFile::Open(const std::string& path) {
  return FileSystemFor(path).OpenForRead(path);
}

Result<std::unique_ptr<AtomicFileWriter>> AtomicFileWriter::Create(const std::string& path) {
  return FileSystemFor(path).CreateAtomic(path);
}

Status ParallelIo(int64_t n, int max_threads, const std::function<Status(int64_t)>& fn) {
  std::vector<Status> results(static_cast<size_t>(std::max<int64_t>(n, 0)));
  std::atomic<int64_t> next{0};
  auto work = [&] {
    for (int64_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) results[static_cast<size_t>(i)] = fn(i);
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < std::min<int64_t>(max_threads, n); ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  for (Status& s : results) {
    if (!s.ok()) return s;
  }
  return OkStatus();
}

Result<std::unique_ptr<LineReader>> LineReader::Open(const std::string& path) {
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> f, RandomAccessFile::Open(path));
  return std::unique_ptr<LineReader>(new LineReader(std::move(f)));
}

bool LineReader::Fill() {
  constexpr int64_t kBlock = 1 << 20;
  if (offset_ >= file_->size()) return false;
  const int64_t n = std::min(kBlock, file_->size() - offset_);
  block_.resize(static_cast<size_t>(n));
  Result<int64_t> got = file_->ReadAt(offset_, n, block_.data());
  if (!got.ok() || *got != n) {
    status_ = got.ok() ? DataLossError(file_->path() + " ended at byte " + std::to_string(offset_ + *got) +
                                       " but had " + std::to_string(file_->size()) + " bytes when opened")
                       : got.status();
    return false;
  }
  offset_ += n;
  pos_ = 0;
  end_ = static_cast<size_t>(n);
  if (offset_ < file_->size()) file_->Prefetch(offset_, std::min(kBlock, file_->size() - offset_));
  return true;
}

bool LineReader::Next(std::string* line) {
  line->clear();
  bool any = false;
  for (;;) {
    if (pos_ == end_ && !Fill()) return any && status_.ok();
    any = true;
    const char* start = block_.data() + pos_;
    const void* nl = std::memchr(start, '\n', end_ - pos_);
    if (nl != nullptr) {
      const size_t k = static_cast<size_t>(static_cast<const char*>(nl) - start);
      line->append(start, k);
      pos_ += k + 1;
      return true;
    }
    line->append(start, end_ - pos_);
    pos_ = end_;
  }
}

Status WriteFileAtomically(const std::string& path, std::string_view bytes) {
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> w, AtomicFileWriter::Create(path));
  RECTRAIN_RETURN_IF_ERROR(w->Append(bytes));
  return w->Commit();
}

Result<std::string> ReadFileToString(const std::string& path) {
  RECTRAIN_ASSIGN_OR_RETURN(auto file, RandomAccessFile::Open(path));
  std::string s(static_cast<size_t>(file->size()), '\0');
  RECTRAIN_ASSIGN_OR_RETURN(int64_t n, file->ReadAt(0, file->size(), s.data()));
  s.resize(static_cast<size_t>(n));
  return s;
}

std::string FileFingerprint::ToString() const {
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%lld:%lld:%016llx", static_cast<long long>(size),
                static_cast<long long>(mtime_ns), static_cast<unsigned long long>(content_hash));
  return buf;
}

Result<FileFingerprint> Fingerprint(const std::string& path) {
  FileSystem& fs = FileSystemFor(path);
  RECTRAIN_ASSIGN_OR_RETURN(FileStat st, fs.Stat(path));
  RECTRAIN_RETURN_IF_ERROR(CheckRegularFile(st, ""));
  FileFingerprint fp;
  fp.size = st.size;
  fp.mtime_ns = st.mtime_ns;
  if (fs.remote()) {
    // The ETag names the object's content version; reading data would cost a request per file.
    fp.content_hash = HashBytes(st.version, 0x66707269ULL);
    return fp;
  }
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> f, fs.OpenForRead(path));
  fp.size = f->size();
  constexpr int64_t kPart = 64 << 10;
  std::string buf(static_cast<size_t>(std::min<int64_t>(fp.size, 2 * kPart)), '\0');
  if (fp.size <= 2 * kPart) {
    RECTRAIN_ASSIGN_OR_RETURN(int64_t n, f->ReadAt(0, fp.size, buf.data()));
    buf.resize(static_cast<size_t>(n));
  } else {
    RECTRAIN_ASSIGN_OR_RETURN(int64_t a, f->ReadAt(0, kPart, buf.data()));
    RECTRAIN_ASSIGN_OR_RETURN(int64_t b, f->ReadAt(fp.size - kPart, kPart, buf.data() + kPart));
    buf.resize(static_cast<size_t>(kPart + b));
    if (a != kPart) buf.resize(static_cast<size_t>(a));
  }
  fp.content_hash = HashBytes(buf, 0x66707269ULL);
  return fp;
}

Result<std::vector<FileFingerprint>> FingerprintAll(const std::vector<std::string>& paths) {
  std::vector<FileFingerprint> out(paths.size());
  const bool remote = std::any_of(paths.begin(), paths.end(), [](const std::string& p) { return IsRemotePath(p); });
  RECTRAIN_RETURN_IF_ERROR(ParallelIo(static_cast<int64_t>(paths.size()), remote ? 16 : 1, [&](int64_t i) -> Status {
    RECTRAIN_ASSIGN_OR_RETURN(out[static_cast<size_t>(i)], Fingerprint(paths[static_cast<size_t>(i)]));
    return OkStatus();
  }));
  return out;
}

Status CopyFile(const std::string& src, const std::string& dst) {
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> in, RandomAccessFile::Open(src));
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> out, AtomicFileWriter::Create(dst));
  constexpr int64_t kPiece = int64_t{8} << 20;
  std::string buf(static_cast<size_t>(std::min(kPiece, std::max<int64_t>(in->size(), 1))), '\0');
  for (int64_t off = 0; off < in->size();) {
    const int64_t want = std::min<int64_t>(static_cast<int64_t>(buf.size()), in->size() - off);
    RECTRAIN_ASSIGN_OR_RETURN(int64_t got, in->ReadAt(off, want, buf.data()));
    if (got != want) {
      return DataLossError(src + " changed while it was copied: end of file at byte " + std::to_string(off + got) +
                           " of " + std::to_string(in->size()));
    }
    RECTRAIN_RETURN_IF_ERROR(out->Append(std::string_view(buf.data(), static_cast<size_t>(got))));
    off += got;
  }
  return out->Commit();
}

Status CopyTree(const std::string& src_dir, const std::string& dst_dir, std::string_view last) {
  FileSystem& src = FileSystemFor(src_dir);
  FileSystem& dst = FileSystemFor(dst_dir);
  RECTRAIN_ASSIGN_OR_RETURN(std::vector<DirEntry> files, src.List(src_dir, /*recursive=*/true));
  std::vector<std::string> made;  // local destination directories created so far
  const auto last_it = std::find_if(files.begin(), files.end(), [&](const DirEntry& e) { return e.name == last; });
  if (!last.empty() && last_it == files.end()) {
    return NotFoundError(JoinPath(src_dir, last) + " is missing: it must be written last, so the copy cannot complete");
  }
  if (last_it != files.end()) std::rotate(last_it, last_it + 1, files.end());  // to the end
  for (const DirEntry& e : files) {
    const std::string to = JoinPath(dst_dir, e.name);
    if (!dst.remote()) {
      const std::string parent = to.substr(0, to.rfind('/'));
      if (std::find(made.begin(), made.end(), parent) == made.end()) {
        RECTRAIN_RETURN_IF_ERROR(dst.MakeDirs(parent));
        made.push_back(parent);
      }
    }
    RECTRAIN_RETURN_IF_ERROR(CopyFile(JoinPath(src_dir, e.name), to));
  }
  return OkStatus();
}

}  // namespace rectrain::io

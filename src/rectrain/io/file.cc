#include "rectrain/io/file.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "rectrain/base/random.h"

namespace rectrain::io {
namespace {

bool HasGlobChars(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

Status CheckRegularFile(const std::string& path, std::string_view what) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      return NotFoundError("no such file: " + path + std::string(what));
    }
    return ErrnoToStatus(errno, "cannot stat " + path);
  }
  if (S_ISDIR(st.st_mode)) {
    return InvalidArgumentError(path + " is a directory" + std::string(what) +
                                "; list files, or use a glob such as " + path + "/*.tsv");
  }
  if (!S_ISREG(st.st_mode)) {
    return InvalidArgumentError(path + " is not a regular file" + std::string(what));
  }
  return OkStatus();
}

}  // namespace

Result<std::vector<std::string>> ExpandPaths(const std::vector<std::string>& patterns) {
  if (patterns.empty()) {
    return InvalidArgumentError("no input files: data.files is empty; set it to paths or globs");
  }
  std::vector<std::string> out;
  for (const std::string& pattern : patterns) {
    if (pattern.empty()) return InvalidArgumentError("data.files contains an empty path");
    if (!HasGlobChars(pattern)) {
      RECTRAIN_RETURN_IF_ERROR(CheckRegularFile(pattern, ""));
      out.push_back(pattern);
      continue;
    }
    glob_t g;
    std::memset(&g, 0, sizeof(g));
    int rc = ::glob(pattern.c_str(), GLOB_ERR, nullptr, &g);
    if (rc == GLOB_NOMATCH) {
      ::globfree(&g);
      return NotFoundError("no file matches the pattern \"" + pattern + "\"");
    }
    if (rc != 0) {
      ::globfree(&g);
      return UnavailableError("cannot expand the pattern \"" + pattern + "\" (glob error " +
                              std::to_string(rc) + ")");
    }
    std::vector<std::string> matches(g.gl_pathv, g.gl_pathv + g.gl_pathc);
    ::globfree(&g);
    for (const std::string& m : matches) {
      RECTRAIN_RETURN_IF_ERROR(
          CheckRegularFile(m, " (matched by \"" + pattern + "\")"));
      out.push_back(m);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Result<std::unique_ptr<RandomAccessFile>> RandomAccessFile::Open(const std::string& path) {
  RECTRAIN_RETURN_IF_ERROR(CheckRegularFile(path, ""));
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "cannot open " + path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    Status s = ErrnoToStatus(errno, "cannot stat " + path);
    ::close(fd);
    return s;
  }
  return std::unique_ptr<RandomAccessFile>(new RandomAccessFile(path, fd, st.st_size));
}

RandomAccessFile::~RandomAccessFile() { ::close(fd_); }

Result<int64_t> RandomAccessFile::ReadAt(int64_t offset, int64_t n, char* dst) const {
  int64_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd_, dst + done, static_cast<size_t>(n - done), offset + done);
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, "cannot read " + path_ + " at byte " + std::to_string(offset + done));
    }
    if (r == 0) break;  // end of file
    done += r;
  }
  return done;
}

Result<std::unique_ptr<AtomicFileWriter>> AtomicFileWriter::Create(const std::string& path) {
  if (path.empty()) return InvalidArgumentError("empty output path");
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoToStatus(errno, "cannot create " + tmp + " (for " + path + ")");
  auto w = std::unique_ptr<AtomicFileWriter>(new AtomicFileWriter(path, tmp, fd));
  w->buffer_.reserve(1 << 20);
  return w;
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_path_.c_str());
}

Status AtomicFileWriter::Flush() {
  size_t done = 0;
  while (done < buffer_.size()) {
    ssize_t w = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, "cannot write " + tmp_path_ + " (for " + path_ + ")");
    }
    done += static_cast<size_t>(w);
  }
  buffer_.clear();
  return OkStatus();
}

Status AtomicFileWriter::Append(std::string_view bytes) {
  if (fd_ < 0) return FailedPreconditionError("write to " + path_ + " after Commit()");
  bytes_written_ += static_cast<int64_t>(bytes.size());
  if (buffer_.size() + bytes.size() > (1 << 20)) {
    RECTRAIN_RETURN_IF_ERROR(Flush());
  }
  if (bytes.size() >= (1 << 20)) {
    buffer_.assign(bytes.data(), bytes.size());
    return Flush();
  }
  buffer_.append(bytes.data(), bytes.size());
  return OkStatus();
}

Status AtomicFileWriter::Commit() {
  if (fd_ < 0) return FailedPreconditionError("Commit() called twice for " + path_);
  RECTRAIN_RETURN_IF_ERROR(Flush());
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) return ErrnoToStatus(errno, "cannot close " + tmp_path_);
  if (::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    return ErrnoToStatus(errno, "cannot rename " + tmp_path_ + " to " + path_);
  }
  committed_ = true;
  return OkStatus();
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
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> f, RandomAccessFile::Open(path));
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoToStatus(errno, "cannot stat " + path);
  FileFingerprint fp;
  fp.size = f->size();
  fp.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
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

}  // namespace rectrain::io

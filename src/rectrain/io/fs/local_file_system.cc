#include "rectrain/io/fs/local_file_system.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace rectrain::io {
namespace {

namespace stdfs = std::filesystem;

class LocalFile final : public RandomAccessFile {
 public:
  LocalFile(std::string path, int fd, int64_t size) : RandomAccessFile(std::move(path), size), fd_(fd) {}
  ~LocalFile() override { ::close(fd_); }

  Result<int64_t> ReadAt(int64_t offset, int64_t n, char* dst) const override {
    int64_t done = 0;
    while (done < n) {
      ssize_t r = ::pread(fd_, dst + done, static_cast<size_t>(n - done), offset + done);
      if (r < 0) {
        if (errno == EINTR) continue;
        return ErrnoToStatus(errno, "cannot read " + path() + " at byte " + std::to_string(offset + done));
      }
      if (r == 0) break;  // end of file
      done += r;
    }
    return done;
  }

 private:
  int fd_;
};

constexpr size_t kWriteBuffer = 1 << 20;

class LocalAtomicWriter final : public AtomicFileWriter {
 public:
  LocalAtomicWriter(std::string path, std::string tmp_path, int fd)
      : path_(std::move(path)), tmp_path_(std::move(tmp_path)), fd_(fd) {
    buffer_.reserve(kWriteBuffer);
  }
  ~LocalAtomicWriter() override {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(tmp_path_.c_str());
  }

  Status Append(std::string_view bytes) override {
    if (fd_ < 0) return FailedPreconditionError("write to " + path_ + " after Commit()");
    bytes_written_ += static_cast<int64_t>(bytes.size());
    if (buffer_.size() + bytes.size() > kWriteBuffer) {
      RECTRAIN_RETURN_IF_ERROR(Flush());
    }
    if (bytes.size() >= kWriteBuffer) {
      buffer_.assign(bytes.data(), bytes.size());
      return Flush();
    }
    buffer_.append(bytes.data(), bytes.size());
    return OkStatus();
  }

  Status Commit() override {
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

 private:
  Status Flush() {
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

  std::string path_;
  std::string tmp_path_;
  int fd_;
  std::string buffer_;
  bool committed_ = false;
};

FileStat FromStat(const std::string& path, const struct stat& st) {
  FileStat out;
  out.path = path;
  out.type = S_ISDIR(st.st_mode) ? FileType::kDirectory : S_ISREG(st.st_mode) ? FileType::kFile : FileType::kOther;
  out.size = st.st_size;
  out.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return out;
}

}  // namespace

Result<std::unique_ptr<RandomAccessFile>> LocalFileSystem::OpenForRead(const std::string& path) {
  // stat before open: opening a FIFO for reading would block.
  RECTRAIN_ASSIGN_OR_RETURN(FileStat st, Stat(path));
  RECTRAIN_RETURN_IF_ERROR(CheckRegularFile(st, ""));
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "cannot open " + path);
  struct stat fst;
  if (::fstat(fd, &fst) != 0) {
    Status s = ErrnoToStatus(errno, "cannot stat " + path);
    ::close(fd);
    return s;
  }
  return std::unique_ptr<RandomAccessFile>(new LocalFile(path, fd, fst.st_size));
}

Result<std::unique_ptr<AtomicFileWriter>> LocalFileSystem::CreateAtomic(const std::string& path) {
  if (path.empty()) return InvalidArgumentError("empty output path");
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoToStatus(errno, "cannot create " + tmp + " (for " + path + ")");
  return std::unique_ptr<AtomicFileWriter>(new LocalAtomicWriter(path, tmp, fd));
}

Result<FileStat> LocalFileSystem::Stat(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return NotFoundError("no such file: " + path);
    return ErrnoToStatus(errno, "cannot stat " + path);
  }
  return FromStat(path, st);
}

Result<std::vector<FileStat>> LocalFileSystem::Glob(const std::string& pattern) {
  glob_t g;
  std::memset(&g, 0, sizeof(g));
  int rc = ::glob(pattern.c_str(), GLOB_ERR, nullptr, &g);
  if (rc == GLOB_NOMATCH) {
    ::globfree(&g);
    return std::vector<FileStat>();
  }
  if (rc != 0) {
    ::globfree(&g);
    return UnavailableError("cannot expand the pattern \"" + pattern + "\" (glob error " + std::to_string(rc) + ")");
  }
  std::vector<std::string> matches(g.gl_pathv, g.gl_pathv + g.gl_pathc);
  ::globfree(&g);
  std::vector<FileStat> out;
  for (const std::string& m : matches) {
    RECTRAIN_ASSIGN_OR_RETURN(FileStat st, Stat(m));
    out.push_back(std::move(st));
  }
  return out;
}

Result<std::vector<DirEntry>> LocalFileSystem::List(const std::string& dir, bool recursive) {
  std::error_code ec;
  if (!stdfs::is_directory(dir, ec)) return NotFoundError("no such directory: " + dir);
  std::vector<DirEntry> out;
  auto add = [&](const stdfs::directory_entry& e) {
    DirEntry d;
    d.name = stdfs::relative(e.path(), dir, ec).generic_string();
    d.is_dir = e.is_directory(ec);
    if (!d.is_dir) d.size = static_cast<int64_t>(e.file_size(ec));
    if (recursive && d.is_dir) return;
    out.push_back(std::move(d));
  };
  if (recursive) {
    for (auto it = stdfs::recursive_directory_iterator(dir, ec); !ec && it != stdfs::recursive_directory_iterator();
         it.increment(ec)) {
      add(*it);
    }
  } else {
    for (auto it = stdfs::directory_iterator(dir, ec); !ec && it != stdfs::directory_iterator(); it.increment(ec)) {
      add(*it);
    }
  }
  if (ec) return UnavailableError("cannot list " + dir + ": " + ec.message());
  std::sort(out.begin(), out.end(), [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  return out;
}

Status LocalFileSystem::RemoveAll(const std::string& path) {
  std::error_code ec;
  stdfs::remove_all(path, ec);
  if (ec) return UnavailableError("cannot remove " + path + ": " + ec.message());
  return OkStatus();
}

Status LocalFileSystem::MakeDirs(const std::string& dir) {
  std::error_code ec;
  stdfs::create_directories(dir, ec);
  if (ec) return UnavailableError("cannot create the directory " + dir + ": " + ec.message());
  return OkStatus();
}

}  // namespace rectrain::io

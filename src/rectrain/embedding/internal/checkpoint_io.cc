#include "rectrain/embedding/internal/checkpoint_io.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace rectrain::embedding::internal {
namespace {

constexpr size_t kBufferBytes = size_t{1} << 20;

uint32_t Crc(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const Bytef*>(data);
  while (n > 0) {
    const uInt chunk = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    crc = static_cast<uint32_t>(crc32(crc, p, chunk));
    p += chunk;
    n -= chunk;
  }
  return crc;
}

std::atomic<uint64_t> tmp_counter{0};

}  // namespace

Result<std::unique_ptr<CheckpointWriter>> CheckpointWriter::Open(const std::string& path) {
  const std::string tmp = path + ".tmp-" + std::to_string(getpid()) + "-" +
                          std::to_string(tmp_counter.fetch_add(1));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoToStatus(errno, "cannot create checkpoint file " + tmp);
  return std::unique_ptr<CheckpointWriter>(new CheckpointWriter(path, tmp, fd));
}

CheckpointWriter::CheckpointWriter(std::string path, std::string tmp_path, int fd)
    : path_(std::move(path)), tmp_path_(std::move(tmp_path)), fd_(fd), crc_(Crc(0, nullptr, 0)),
      buffer_(kBufferBytes) {}

CheckpointWriter::~CheckpointWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_path_.c_str());
}

void CheckpointWriter::Write(const void* data, size_t n) {
  crc_ = Crc(crc_, data, n);
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    if (used_ == buffer_.size()) Flush();
    const size_t take = std::min(n, buffer_.size() - used_);
    std::memcpy(buffer_.data() + used_, p, take);
    used_ += take;
    p += take;
    n -= take;
  }
}

void CheckpointWriter::WriteCrc() {
  const uint32_t crc = crc_;
  Write(&crc, sizeof(crc));
  crc_ = Crc(0, nullptr, 0);
}

void CheckpointWriter::Flush() {
  size_t off = 0;
  while (off < used_ && error_.ok()) {
    const ssize_t w = ::write(fd_, buffer_.data() + off, used_ - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      error_ = ErrnoToStatus(errno, "cannot write checkpoint file " + tmp_path_);
      break;
    }
    off += static_cast<size_t>(w);
  }
  used_ = 0;
}

Status CheckpointWriter::Commit() {
  Flush();
  RECTRAIN_RETURN_IF_ERROR(error_);
  if (::fsync(fd_) != 0) return ErrnoToStatus(errno, "cannot fsync checkpoint file " + tmp_path_);
  if (::close(fd_) != 0) {
    fd_ = -1;
    return ErrnoToStatus(errno, "cannot close checkpoint file " + tmp_path_);
  }
  fd_ = -1;
  if (::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    return ErrnoToStatus(errno, "cannot rename " + tmp_path_ + " to " + path_);
  }
  committed_ = true;
  // Make the rename durable.
  const size_t slash = path_.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path_.substr(0, slash + 1);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return OkStatus();
}

Result<std::unique_ptr<CheckpointReader>> CheckpointReader::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "cannot open embedding checkpoint " + path);
  auto r = std::unique_ptr<CheckpointReader>(new CheckpointReader(path, fd));
  r->crc_ = Crc(0, nullptr, 0);
  return r;
}

CheckpointReader::~CheckpointReader() {
  if (fd_ >= 0) ::close(fd_);
}

Result<size_t> CheckpointReader::Fill() {
  if (begin_ < end_) return end_ - begin_;
  begin_ = end_ = 0;
  for (;;) {
    const ssize_t r = ::read(fd_, buffer_.data(), buffer_.size());
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, "cannot read embedding checkpoint " + path_);
    }
    end_ = static_cast<size_t>(r);
    return end_;
  }
}

Status CheckpointReader::Read(void* data, size_t n, const char* what) {
  char* p = static_cast<char*>(data);
  size_t left = n;
  while (left > 0) {
    RECTRAIN_ASSIGN_OR_RETURN(const size_t avail, Fill());
    if (avail == 0) {
      return DataLossError("embedding checkpoint " + path_ + " is truncated at byte " +
                           std::to_string(offset_) + " while reading " + what + " (" +
                           std::to_string(left) + " more bytes expected)");
    }
    const size_t take = std::min(left, avail);
    std::memcpy(p, buffer_.data() + begin_, take);
    begin_ += take;
    offset_ += static_cast<int64_t>(take);
    p += take;
    left -= take;
  }
  crc_ = Crc(crc_, data, n);
  return OkStatus();
}

Status CheckpointReader::CheckCrc(const char* what) {
  const uint32_t expected = crc_;
  const int64_t at = offset_;
  uint32_t stored = 0;
  RECTRAIN_RETURN_IF_ERROR(Read(&stored, sizeof(stored), what));
  if (stored != expected) {
    return DataLossError("embedding checkpoint " + path_ + " is corrupt: checksum mismatch in " +
                         what + " ending at byte " + std::to_string(at));
  }
  crc_ = Crc(0, nullptr, 0);
  return OkStatus();
}

Status CheckpointReader::ExpectEnd() {
  RECTRAIN_ASSIGN_OR_RETURN(const size_t avail, Fill());
  if (avail != 0) {
    return DataLossError("embedding checkpoint " + path_ + " has unexpected trailing bytes at " +
                         std::to_string(offset_));
  }
  return OkStatus();
}

}  // namespace rectrain::embedding::internal

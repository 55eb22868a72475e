// rectrain/io/file.h: the few file-system operations the data pipeline needs, with Status errors
// that name the path: expanding paths/globs, positional reads (pread) of a file shared by many
// threads, and an atomic writer (temp file + rename) for outputs such as generated datasets.
//
// Thread safety: RandomAccessFile::ReadAt is safe to call concurrently (pread on one fd).
// AtomicFileWriter is used by one thread at a time. The free functions are reentrant.
//
// Example:
//   RECTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> paths, io::ExpandPaths({"data/*.tsv"}));
//   RECTRAIN_ASSIGN_OR_RETURN(auto file, io::RandomAccessFile::Open(paths[0]));
//   RECTRAIN_ASSIGN_OR_RETURN(int64_t n, file->ReadAt(0, buffer.size(), buffer.data()));
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rectrain/base/result.h"

namespace rectrain::io {

// Expands every entry of `patterns` (a path, or a glob with * ? [..]) into regular files, then
// sorts the union and removes duplicates. Errors (each names the offending entry):
//   InvalidArgument  `patterns` is empty, or an entry names a directory (also one a glob matched);
//   NotFound         a plain path does not exist, or a glob matches nothing.
Result<std::vector<std::string>> ExpandPaths(const std::vector<std::string>& patterns);

// A read-only file opened once and read with pread from any thread.
class RandomAccessFile {
 public:
  // NotFound if missing, InvalidArgument for a directory or a non-regular file.
  static Result<std::unique_ptr<RandomAccessFile>> Open(const std::string& path);
  ~RandomAccessFile();
  RandomAccessFile(const RandomAccessFile&) = delete;
  RandomAccessFile& operator=(const RandomAccessFile&) = delete;

  // Reads up to `n` bytes at `offset` into dst, retrying short reads and EINTR. Returns the
  // number of bytes read, which is less than n only at end of file. I/O errors name the path.
  Result<int64_t> ReadAt(int64_t offset, int64_t n, char* dst) const;

  int64_t size() const { return size_; }  // size when opened
  const std::string& path() const { return path_; }

 private:
  RandomAccessFile(std::string path, int fd, int64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  std::string path_;
  int fd_;
  int64_t size_;
};

// Writes `path` atomically: data goes to "<path>.tmp.<pid>" and Commit() renames it over `path`.
// If the writer is destroyed without a successful Commit(), the temp file is removed, so a
// crashed or failed write never leaves a half-written `path`. Appends are buffered.
class AtomicFileWriter {
 public:
  // Fails (naming the path) if the directory does not exist or is not writable.
  static Result<std::unique_ptr<AtomicFileWriter>> Create(const std::string& path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  Status Append(std::string_view bytes);
  // Flushes, closes and renames onto the final path. Call at most once.
  Status Commit();
  int64_t bytes_written() const { return bytes_written_; }

 private:
  AtomicFileWriter(std::string path, std::string tmp_path, int fd)
      : path_(std::move(path)), tmp_path_(std::move(tmp_path)), fd_(fd) {}
  Status Flush();
  std::string path_;
  std::string tmp_path_;
  int fd_;
  std::string buffer_;
  int64_t bytes_written_ = 0;
  bool committed_ = false;
};

// Reads a whole (small) file into a string. NotFound / InvalidArgument as for Open.
Result<std::string> ReadFileToString(const std::string& path);
// Writes `bytes` as the whole of `path` through an AtomicFileWriter (all or nothing).
Status WriteFileAtomically(const std::string& path, std::string_view bytes);

// Identifies a file's version cheaply: its size, modification time and a hash of its first and
// last 64 KiB. Caches derived from a file (statistics, the binary sample cache) store it and are
// rebuilt when it changes. NotFound / InvalidArgument as for RandomAccessFile::Open.
struct FileFingerprint {
  int64_t size = 0;
  int64_t mtime_ns = 0;
  uint64_t content_hash = 0;  // HashBytes(head 64 KiB + tail 64 KiB)
  // "size:mtime_ns:hash" (hex hash); equal strings mean the same fingerprint.
  std::string ToString() const;
};
Result<FileFingerprint> Fingerprint(const std::string& path);

}  // namespace rectrain::io

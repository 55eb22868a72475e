// rectrain/io/file.h: the file operations every module uses, on any storage behind the
// FileSystem seam (io/fs/file_system.h): a local path, or an object-store URI such as
// "s3://bucket/key" (docs/storage.md). Each call picks the file system from the path's scheme,
// so a reader or writer given "s3://..." works unchanged. Errors are Status values that name the
// path: expanding paths/globs, positional reads of a file shared by many threads, an atomic
// writer (local: temp file + rename; object store: one PUT or a multipart upload completed on
// Commit), and a cheap fingerprint of a file's version.
//
// Thread safety: RandomAccessFile::ReadAt and Prefetch are safe to call concurrently.
// AtomicFileWriter is used by one thread at a time. The free functions are reentrant.
//
// Example:
//   RECTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> paths, io::ExpandPaths({"data/*.tsv"}));
//   RECTRAIN_ASSIGN_OR_RETURN(auto file, io::RandomAccessFile::Open(paths[0]));
//   RECTRAIN_ASSIGN_OR_RETURN(int64_t n, file->ReadAt(0, buffer.size(), buffer.data()));
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rectrain/base/result.h"

namespace rectrain::io {

// Expands every entry of `patterns` (a path, or a glob with * ? [..]) into regular files, then
// sorts the union and removes duplicates. On an object store a pattern may also be a prefix
// ending in '/' ("s3://bucket/day=1/"), which means every object under it. Errors (each names
// the offending entry):
//   InvalidArgument  `patterns` is empty, or an entry names a directory (also one a glob matched);
//   NotFound         a plain path does not exist, or a glob (or prefix) matches nothing.
Result<std::vector<std::string>> ExpandPaths(const std::vector<std::string>& patterns);

// ExpandPaths with each file's size (from the store's listing where a glob or prefix was listed,
// else from a stat). Same errors.
struct ExpandedFile {
  std::string path;
  int64_t size = 0;
};
Result<std::vector<ExpandedFile>> ExpandPathsWithSizes(const std::vector<std::string>& patterns);

// A read-only file opened once and read positionally from any thread.
class RandomAccessFile {
 public:
  // NotFound if missing, InvalidArgument for a directory or a non-regular file.
  static Result<std::unique_ptr<RandomAccessFile>> Open(const std::string& path);
  virtual ~RandomAccessFile() = default;
  RandomAccessFile(const RandomAccessFile&) = delete;
  RandomAccessFile& operator=(const RandomAccessFile&) = delete;

  // Reads up to `n` bytes at `offset` into dst, retrying short reads (and, on an object store,
  // transient failures). Returns the number of bytes read, which is less than n only at end of
  // file. Errors name the path (an object store's also the operation and the last HTTP status);
  // DataLoss when the file changed since it was opened (object store: a new ETag).
  virtual Result<int64_t> ReadAt(int64_t offset, int64_t n, char* dst) const = 0;

  // A hint that [offset, offset + n) will be read soon by one ReadAt starting at `offset`: an
  // object store starts fetching it in the background (bounded in memory; a hint over the bound
  // is dropped), a local file ignores it. Never fails; errors surface in the ReadAt.
  virtual void Prefetch(int64_t offset, int64_t n) const {}

  // True when ReadAt goes over a network (the caller may then plan read-ahead with Prefetch).
  virtual bool remote() const { return false; }
  // ReadAt calls so far that waited on the network (a remote file: not served by Open's first
  // bytes or by a finished Prefetch). A reader grows its read-ahead while this grows.
  virtual int64_t waits() const { return 0; }

  int64_t size() const { return size_; }  // size when opened
  const std::string& path() const { return path_; }

 protected:
  RandomAccessFile(std::string path, int64_t size) : path_(std::move(path)), size_(size) {}

 private:
  std::string path_;
  int64_t size_;
};

// Writes `path` atomically: nothing appears under `path` until Commit() succeeds, and a writer
// destroyed without a successful Commit() leaves nothing behind (a local temp file
// "<path>.tmp.<pid>" is removed; an object store's multipart upload is aborted). Appends are
// buffered.
class AtomicFileWriter {
 public:
  // Fails (naming the path) if the directory does not exist or is not writable (local), or the
  // URI is malformed (object store).
  static Result<std::unique_ptr<AtomicFileWriter>> Create(const std::string& path);
  virtual ~AtomicFileWriter() = default;
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  virtual Status Append(std::string_view bytes) = 0;
  // Flushes and publishes the file under its final path. Call at most once.
  virtual Status Commit() = 0;
  int64_t bytes_written() const { return bytes_written_; }

 protected:
  AtomicFileWriter() = default;
  int64_t bytes_written_ = 0;
};

// Runs fn(0) .. fn(n - 1) on up to `max_threads` threads (itself included) and returns the error
// of the lowest index that failed, or OK. For I/O that waits on a network: opening 10,000 objects
// one after another costs 10,000 round trips; 16 at a time, a sixteenth of that.
Status ParallelIo(int64_t n, int max_threads, const std::function<Status(int64_t)>& fn);

// Reads a file line by line through RandomAccessFile, in 1 MiB blocks (on an object store the
// next block is prefetched while the current one is consumed). Not thread-safe.
class LineReader {
 public:
  // Errors as for RandomAccessFile::Open.
  static Result<std::unique_ptr<LineReader>> Open(const std::string& path);
  // The next line, without its '\n', into *line; false at the end of the file or on an error
  // (then status() says which).
  bool Next(std::string* line);
  // True when every byte has been returned.
  bool AtEnd() const { return pos_ == end_ && offset_ >= file_->size(); }
  const Status& status() const { return status_; }

 private:
  explicit LineReader(std::unique_ptr<RandomAccessFile> file) : file_(std::move(file)) {}
  bool Fill();
  std::unique_ptr<RandomAccessFile> file_;
  std::string block_;
  size_t pos_ = 0, end_ = 0;
  int64_t offset_ = 0;  // file offset after block_
  Status status_;
};

// Reads a whole (small) file into a string. NotFound / InvalidArgument as for Open.
Result<std::string> ReadFileToString(const std::string& path);
// Writes `bytes` as the whole of `path` through an AtomicFileWriter (all or nothing).
Status WriteFileAtomically(const std::string& path, std::string_view bytes);

// Identifies a file's version cheaply. Local: its size, modification time and a hash of its
// first and last 64 KiB. Object store: its size, Last-Modified time and a hash of its ETag (the
// store's content version), so no data is read. Caches derived from a file (statistics, the
// binary sample cache) store it and are rebuilt when it changes. NotFound / InvalidArgument as
// for RandomAccessFile::Open.
struct FileFingerprint {
  int64_t size = 0;
  int64_t mtime_ns = 0;
  uint64_t content_hash = 0;
  // "size:mtime_ns:hash" (hex hash); equal strings mean the same fingerprint.
  std::string ToString() const;
};
Result<FileFingerprint> Fingerprint(const std::string& path);
// Fingerprint of each path, in order (objects in a store 16 at a time).
Result<std::vector<FileFingerprint>> FingerprintAll(const std::vector<std::string>& paths);

}  // namespace rectrain::io

// rectrain/io/fs/file_system.h: the storage seam. Every file rectrain reads or writes goes
// through a FileSystem chosen by the path's scheme: a plain path is the local file system
// (posix), "s3://bucket/key" an S3-compatible object store (io/s3/), and tests may register
// more (an in-memory store, a faulty one). HDFS or WebHDFS would be one more implementation.
//
// Paths are strings in the file system's own form ("dir/a.tsv", "s3://bucket/dir/a.tsv");
// names returned by List are relative to the listed directory, with '/' separators. On an
// object store a "directory" is a key prefix ending in '/': it exists while an object is under
// it, and MakeDirs is a no-op.
//
// Thread safety: implementations are safe to call from any number of threads.
//
// Example (a directory copied to a bucket, the manifest last so readers never see it partial):
//   RECTRAIN_RETURN_IF_ERROR(io::CopyTree("models/7", "s3://bucket/models/7", "manifest.json"));
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/io/file.h"

namespace rectrain::io {

enum class FileType { kFile, kDirectory, kOther };

struct FileStat {
  std::string path;      // as given (Stat) or as found (Glob)
  FileType type = FileType::kFile;
  int64_t size = 0;      // regular files
  int64_t mtime_ns = 0;  // modification time (object store: Last-Modified)
  std::string version;   // object store: the ETag; local: empty
};

struct DirEntry {
  std::string name;  // relative to the listed directory ("tables/a.bin" when recursive)
  bool is_dir = false;
  int64_t size = 0;
};

// Traffic of a remote file system since the process started (reports: "412 requests, 7 retries
// (HTTP 503 x4, connection reset x3), 1.2 GiB read").
struct RemoteIoStats {
  int64_t requests = 0;  // attempts sent, retries included
  int64_t retries = 0;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  std::map<std::string, int64_t> retry_reasons;  // "HTTP 503", "SlowDown", "connection reset", ...
  // One line such as the example above.
  std::string ToString() const;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  virtual Result<std::unique_ptr<RandomAccessFile>> OpenForRead(const std::string& path) = 0;
  virtual Result<std::unique_ptr<AtomicFileWriter>> CreateAtomic(const std::string& path) = 0;
  // NotFound when nothing exists at `path` (neither a file nor a directory).
  virtual Result<FileStat> Stat(const std::string& path) = 0;
  // Everything `pattern` (a glob: * ? [..]) matches, files and directories, sorted by path; an
  // empty vector when nothing matches.
  virtual Result<std::vector<FileStat>> Glob(const std::string& pattern) = 0;
  // The entries of directory `dir`: its files and subdirectories, or (recursive) every file
  // below it. Sorted by name. NotFound when `dir` does not exist.
  virtual Result<std::vector<DirEntry>> List(const std::string& dir, bool recursive) = 0;
  // Removes a file or a whole directory tree; OK when nothing is there.
  virtual Status RemoveAll(const std::string& path) = 0;
  // Creates `dir` and its parents (no-op on an object store).
  virtual Status MakeDirs(const std::string& dir) = 0;
  // True when files live behind a network (no rename, no mmap: callers stage locally).
  virtual bool remote() const = 0;
  virtual RemoteIoStats io_stats() const { return {}; }
};

// OK for a regular file; InvalidArgument naming st.path (followed by `what`, such as
// " (matched by \"*.tsv\")") for a directory or any other kind of file.
Status CheckRegularFile(const FileStat& st, std::string_view what);

// The file system serving `path`: local unless the path starts with a registered scheme
// ("s3://"). The returned reference lives as long as the process.
FileSystem& FileSystemFor(std::string_view path);

// True when `path` names an object in a remote store (a scheme other than the local one).
bool IsRemotePath(std::string_view path);

// The sum of io_stats() over the remote file systems this process has used (all zero when none).
RemoteIoStats RemoteIoTotals();

// Registers `fs` for paths starting with "<scheme>://" (tests: an in-memory or faulty store).
// Replaces an earlier registration of the scheme; `fs` must outlive every use. Registering "s3"
// overrides the built-in store (tests point it at their own server).
void RegisterFileSystem(std::string scheme, FileSystem* fs);

// Joins a directory and a relative name with one '/' ("s3://b/x" + "y" -> "s3://b/x/y").
std::string JoinPath(std::string_view dir, std::string_view name);

// Copies every file under `src_dir` to `dst_dir` (any two file systems), each file atomically,
// and `last` (a relative name; empty: none) after all others, so that a reader that waits for
// `last` never sees a partial copy. Files already at the destination are replaced. Fails with
// the first error, naming the file.
Status CopyTree(const std::string& src_dir, const std::string& dst_dir, std::string_view last = {});

// Copies one file (any two file systems), atomically at the destination.
Status CopyFile(const std::string& src, const std::string& dst);

}  // namespace rectrain::io

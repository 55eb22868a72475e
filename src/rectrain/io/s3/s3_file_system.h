// rectrain/io/s3/s3_file_system.h: the FileSystem of "s3://bucket/key" paths, over S3Client.
//
// Reading: Open fetches the object's first 64 KiB in one ranged GET (which also gives its size
// and ETag; a small object arrives whole). ReadAt serves a range from that head, from a
// prefetched range, or with ranged GETs (a large read is split into parts fetched in parallel).
// Prefetch(offset, n) starts a background GET into memory, bounded by a byte budget shared by
// the file system (a hint over it is dropped). Every GET after the open carries the ETag seen
// at open (If-Match, and checked on the response): a changed object is DataLoss.
// Writing: AtomicFileWriter buffers; a file up to one part (8 MiB) is one PUT on Commit, a larger
// one a multipart upload (parts uploaded as they fill, completed on Commit, aborted when the
// writer is destroyed without Commit). Either way the object appears whole or not at all.
// Listing: ListObjectsV2 with pagination; "directories" are key prefixes ending in '/'. Globs
// (* ? [..]) match keys with fnmatch(FNM_PATHNAME): '*' does not cross a '/'.
//
// Thread safety: every method may be called from any number of threads.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "rectrain/io/fs/file_system.h"
#include "rectrain/io/s3/s3_client.h"

namespace rectrain::io::s3 {

struct S3FileSystemOptions {
  int fetch_threads = 8;                              // background GETs and parallel parts
  int64_t prefetch_budget_bytes = int64_t{256} << 20;  // prefetched bytes held at once
  int64_t part_bytes = int64_t{8} << 20;              // multipart part size; parallel read part
  int64_t head_bytes = int64_t{64} << 10;             // read at open
};

// Runs tasks on a fixed set of threads (started on first use).
class TaskPool {
 public:
  explicit TaskPool(int threads) : threads_(threads) {}
  ~TaskPool();
  void Submit(std::function<void()> task);

 private:
  void Loop();
  const int threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  std::vector<std::thread> workers_;         // guarded by mu_
  bool stop_ = false;                        // guarded by mu_
};

class S3FileSystem final : public FileSystem {
 public:
  S3FileSystem(S3Config config, S3FileSystemOptions options = {});
  // A file system whose every operation fails with `error` (a configuration that did not resolve).
  explicit S3FileSystem(Status error);

  // The process's store for "s3://", configured from the environment on first use.
  static S3FileSystem* Default();
  // Default() if something already asked for it, else null (reports of traffic).
  static S3FileSystem* DefaultIfUsed();

  Result<std::unique_ptr<RandomAccessFile>> OpenForRead(const std::string& path) override;
  Result<std::unique_ptr<AtomicFileWriter>> CreateAtomic(const std::string& path) override;
  Result<FileStat> Stat(const std::string& path) override;
  Result<std::vector<FileStat>> Glob(const std::string& pattern) override;
  Result<std::vector<DirEntry>> List(const std::string& dir, bool recursive) override;
  Status RemoveAll(const std::string& path) override;
  Status MakeDirs(const std::string& dir) override { return config_error_; }
  bool remote() const override { return true; }
  RemoteIoStats io_stats() const override;

  S3Client& client() { return *client_; }
  const S3FileSystemOptions& options() const { return options_; }
  TaskPool& pool() { return pool_; }
  // Reserves `n` bytes of the prefetch budget; false when it would go over.
  bool ReservePrefetch(int64_t n);
  void ReleasePrefetch(int64_t n);

 private:
  Status config_error_;
  std::unique_ptr<S3Client> client_;
  S3FileSystemOptions options_;
  TaskPool pool_;
  std::atomic<int64_t> prefetched_bytes_{0};
};

}  // namespace rectrain::io::s3

// rectrain/io/fs/memory_file_system.h: a FileSystem held in memory, for tests. It behaves like
// an object store (remote() is true, directories are key prefixes, a written file appears whole
// on Commit), and a fault hook lets a test fail any operation on any path, the way
// leveldb's fault-injection Env does.
//
// Register it under a scheme to reach it through ordinary paths:
//   io::MemoryFileSystem mem;
//   io::RegisterFileSystem("mem", &mem);
//   mem.set_fault([](std::string_view op, const std::string& path) {
//     return op == "write" && path.ends_with("meta.json") ? UnavailableError("injected") : OkStatus();
//   });
//
// Thread safety: every method may be called from any thread (one mutex); set_fault must not race
// with calls.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "rectrain/io/fs/file_system.h"

namespace rectrain::io {

class MemoryFileSystem final : public FileSystem {
 public:
  // op is "open", "read", "write" (Commit), "stat", "list" or "remove"; a non-OK Status fails it.
  using FaultHook = std::function<Status(std::string_view op, const std::string& path)>;

  Result<std::unique_ptr<RandomAccessFile>> OpenForRead(const std::string& path) override;
  Result<std::unique_ptr<AtomicFileWriter>> CreateAtomic(const std::string& path) override;
  Result<FileStat> Stat(const std::string& path) override;
  Result<std::vector<FileStat>> Glob(const std::string& pattern) override;
  Result<std::vector<DirEntry>> List(const std::string& dir, bool recursive) override;
  Status RemoveAll(const std::string& path) override;
  Status MakeDirs(const std::string& dir) override { return OkStatus(); }
  bool remote() const override { return true; }

  void set_fault(FaultHook hook) { fault_ = std::move(hook); }
  // Direct access for fixtures and checks (no fault hook).
  void Put(const std::string& path, std::string bytes);
  std::vector<std::string> Paths() const;
  // Commit() calls so far, by path, in order (tests check what became visible when).
  std::vector<std::string> commit_order() const;
  // Runs the fault hook for `op` on `path` (its files call it on each read).
  Status Fault(std::string_view op, const std::string& path) const;

 private:
  friend class MemoryWriter;
  void Publish(const std::string& path, std::string bytes);

  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const std::string>> files_;  // guarded by mu_
  std::vector<std::string> commits_;  // guarded by mu_
  FaultHook fault_;
};

}  // namespace rectrain::io

// rectrain/io/fs/local_file_system.h: the FileSystem of plain paths (posix): pread on one fd,
// atomic writes by temp file + rename, glob(3).
//
// Thread safety: stateless; every method may be called from any thread.
#pragma once

#include "rectrain/io/fs/file_system.h"

namespace rectrain::io {

class LocalFileSystem final : public FileSystem {
 public:
  Result<std::unique_ptr<RandomAccessFile>> OpenForRead(const std::string& path) override;
  Result<std::unique_ptr<AtomicFileWriter>> CreateAtomic(const std::string& path) override;
  Result<FileStat> Stat(const std::string& path) override;
  Result<std::vector<FileStat>> Glob(const std::string& pattern) override;
  Result<std::vector<DirEntry>> List(const std::string& dir, bool recursive) override;
  Status RemoveAll(const std::string& path) override;
  Status MakeDirs(const std::string& dir) override;
  bool remote() const override { return false; }
};

}  // namespace rectrain::io

// rectrain/embedding/internal/checkpoint_io.h: private. Buffered binary file writer/reader with
// running CRC-32 (zlib polynomial) for the embedding checkpoint (docs/formats/checkpoint-embedding.md).
// The writer writes to a temporary file beside `path` and renames it over `path` on Commit(), so
// a crash never leaves a half-written checkpoint under the final name. The reader reports
// truncation as DataLoss with the byte offset and what it was reading.
// Thread safety: none (one object per thread).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/base/status.h"

namespace rectrain::embedding::internal {

class CheckpointWriter {
 public:
  static Result<std::unique_ptr<CheckpointWriter>> Open(const std::string& path);
  ~CheckpointWriter();  // removes the temporary file unless committed

  void Write(const void* data, size_t n);
  template <typename T>
  void Put(const T& v) {
    Write(&v, sizeof(T));
  }
  // Writes the CRC of everything written since the previous WriteCrc (or Open), then restarts it.
  void WriteCrc();
  // Flushes, fsyncs and renames the temporary file to the final path.
  [[nodiscard]] Status Commit();

 private:
  CheckpointWriter(std::string path, std::string tmp_path, int fd);
  void Flush();

  std::string path_;
  std::string tmp_path_;
  int fd_;
  bool committed_ = false;
  Status error_;  // first write error, reported by Commit
  uint32_t crc_;
  std::vector<char> buffer_;
  size_t used_ = 0;
};

class CheckpointReader {
 public:
  // NotFound if `path` does not exist.
  static Result<std::unique_ptr<CheckpointReader>> Open(const std::string& path);
  ~CheckpointReader();

  // Reads exactly n bytes or returns DataLoss ("truncated ... while reading <what>").
  [[nodiscard]] Status Read(void* data, size_t n, const char* what);
  template <typename T>
  [[nodiscard]] Status Get(T* v, const char* what) {
    return Read(v, sizeof(T), what);
  }
  // Reads the stored CRC and compares it with the CRC of the bytes read since the previous
  // check (or Open). DataLoss on mismatch.
  [[nodiscard]] Status CheckCrc(const char* what);
  // DataLoss if any byte is left.
  [[nodiscard]] Status ExpectEnd();
  int64_t offset() const { return offset_; }
  const std::string& path() const { return path_; }

 private:
  CheckpointReader(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  // Fills the buffer; returns bytes available (0 at end of file) or an error.
  Result<size_t> Fill();

  std::string path_;
  int fd_;
  uint32_t crc_ = 0;
  int64_t offset_ = 0;  // bytes consumed
  std::vector<char> buffer_ = std::vector<char>(size_t{1} << 20);
  size_t begin_ = 0;
  size_t end_ = 0;
};

}  // namespace rectrain::embedding::internal

#include "rectrain/io/fs/memory_file_system.h"

#include <fnmatch.h>

#include <algorithm>
#include <cstring>

namespace rectrain::io {
namespace {

class MemoryFile final : public RandomAccessFile {
 public:
  MemoryFile(std::string path, std::shared_ptr<const std::string> bytes, const MemoryFileSystem* fs)
      : RandomAccessFile(std::move(path), static_cast<int64_t>(bytes->size())), bytes_(std::move(bytes)), fs_(fs) {}

  Result<int64_t> ReadAt(int64_t offset, int64_t n, char* dst) const override;
  bool remote() const override { return true; }

 private:
  std::shared_ptr<const std::string> bytes_;  // the version opened: later writes do not show
  const MemoryFileSystem* fs_;
};

std::string DirPrefix(const std::string& dir) { return dir.empty() || dir.back() == '/' ? dir : dir + "/"; }

}  // namespace

class MemoryWriter final : public AtomicFileWriter {
 public:
  MemoryWriter(std::string path, MemoryFileSystem* fs) : path_(std::move(path)), fs_(fs) {}
  Status Append(std::string_view bytes) override {
    if (committed_) return FailedPreconditionError("write to " + path_ + " after Commit()");
    data_.append(bytes);
    bytes_written_ += static_cast<int64_t>(bytes.size());
    return OkStatus();
  }
  Status Commit() override {
    if (committed_) return FailedPreconditionError("Commit() called twice for " + path_);
    RECTRAIN_RETURN_IF_ERROR(fs_->Fault("write", path_));
    committed_ = true;
    fs_->Publish(path_, std::move(data_));
    return OkStatus();
  }

 private:
  std::string path_;
  MemoryFileSystem* fs_;
  std::string data_;
  bool committed_ = false;
};

Result<int64_t> MemoryFile::ReadAt(int64_t offset, int64_t n, char* dst) const {
  RECTRAIN_RETURN_IF_ERROR(fs_->Fault("read", path()));
  if (offset >= size()) return int64_t{0};
  const int64_t got = std::min(n, size() - offset);
  std::memcpy(dst, bytes_->data() + offset, static_cast<size_t>(got));
  return got;
}

Status MemoryFileSystem::Fault(std::string_view op, const std::string& path) const {
  return fault_ ? fault_(op, path) : OkStatus();
}

void MemoryFileSystem::Publish(const std::string& path, std::string bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  files_[path] = std::make_shared<const std::string>(std::move(bytes));
  commits_.push_back(path);
}

void MemoryFileSystem::Put(const std::string& path, std::string bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  files_[path] = std::make_shared<const std::string>(std::move(bytes));
}

std::vector<std::string> MemoryFileSystem::Paths() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [path, bytes] : files_) out.push_back(path);
  return out;
}

std::vector<std::string> MemoryFileSystem::commit_order() const {
  std::lock_guard<std::mutex> lock(mu_);
  return commits_;
}

Result<std::unique_ptr<RandomAccessFile>> MemoryFileSystem::OpenForRead(const std::string& path) {
  RECTRAIN_RETURN_IF_ERROR(Fault("open", path));
  RECTRAIN_ASSIGN_OR_RETURN(FileStat st, Stat(path));
  RECTRAIN_RETURN_IF_ERROR(CheckRegularFile(st, ""));
  std::lock_guard<std::mutex> lock(mu_);
  return std::unique_ptr<RandomAccessFile>(new MemoryFile(path, files_.at(path), this));
}

Result<std::unique_ptr<AtomicFileWriter>> MemoryFileSystem::CreateAtomic(const std::string& path) {
  if (path.empty() || path.back() == '/') return InvalidArgumentError("not a file name: \"" + path + "\"");
  return std::unique_ptr<AtomicFileWriter>(new MemoryWriter(path, this));
}

Result<FileStat> MemoryFileSystem::Stat(const std::string& path) {
  RECTRAIN_RETURN_IF_ERROR(Fault("stat", path));
  std::lock_guard<std::mutex> lock(mu_);
  FileStat st;
  st.path = path;
  if (auto it = files_.find(path); it != files_.end()) {
    st.size = static_cast<int64_t>(it->second->size());
    st.version = std::to_string(reinterpret_cast<uintptr_t>(it->second.get()));
    return st;
  }
  const std::string prefix = DirPrefix(path);
  auto it = files_.lower_bound(prefix);
  if (it != files_.end() && it->first.compare(0, prefix.size(), prefix) == 0) {
    st.type = FileType::kDirectory;
    return st;
  }
  return NotFoundError("no such file: " + path);
}

Result<std::vector<FileStat>> MemoryFileSystem::Glob(const std::string& pattern) {
  RECTRAIN_RETURN_IF_ERROR(Fault("list", pattern));
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<FileStat> out;
  for (const auto& [path, bytes] : files_) {
    if (::fnmatch(pattern.c_str(), path.c_str(), FNM_PATHNAME) != 0) continue;
    FileStat st;
    st.path = path;
    st.size = static_cast<int64_t>(bytes->size());
    out.push_back(std::move(st));
  }
  return out;
}

Result<std::vector<DirEntry>> MemoryFileSystem::List(const std::string& dir, bool recursive) {
  RECTRAIN_RETURN_IF_ERROR(Fault("list", dir));
  std::lock_guard<std::mutex> lock(mu_);
  const std::string prefix = DirPrefix(dir);
  std::vector<DirEntry> out;
  for (auto it = files_.lower_bound(prefix); it != files_.end() && it->first.compare(0, prefix.size(), prefix) == 0;
       ++it) {
    std::string name = it->first.substr(prefix.size());
    const size_t slash = name.find('/');
    if (!recursive && slash != std::string::npos) {
      name.resize(slash);
      if (out.empty() || out.back().name != name) out.push_back(DirEntry{name, true, 0});
      continue;
    }
    out.push_back(DirEntry{std::move(name), false, static_cast<int64_t>(it->second->size())});
  }
  if (out.empty()) return NotFoundError("no such directory: " + dir);
  std::sort(out.begin(), out.end(), [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  return out;
}

Status MemoryFileSystem::RemoveAll(const std::string& path) {
  RECTRAIN_RETURN_IF_ERROR(Fault("remove", path));
  std::lock_guard<std::mutex> lock(mu_);
  files_.erase(path);
  const std::string prefix = DirPrefix(path);
  auto it = files_.lower_bound(prefix);
  while (it != files_.end() && it->first.compare(0, prefix.size(), prefix) == 0) it = files_.erase(it);
  return OkStatus();
}

}  // namespace rectrain::io

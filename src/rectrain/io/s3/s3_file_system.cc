#include "rectrain/io/s3/s3_file_system.h"

#include <fnmatch.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "rectrain/io/s3/sigv4.h"

namespace rectrain::io::s3 {
namespace {

// A range being fetched (or fetched) in the background for a later ReadAt.
struct Pending {
  int64_t offset = 0;
  int64_t n = 0;
  std::string data;
  Status status;
  bool done = false;
  std::mutex mu;
  std::condition_variable cv;
  void Finish(Status s) {
    std::lock_guard<std::mutex> lock(mu);
    status = std::move(s);
    done = true;
    cv.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [this] { return done; });
  }
};

class S3File final : public RandomAccessFile {
 public:
  S3File(std::string path, S3FileSystem* fs, std::string bucket, std::string key, ObjectInfo info, std::string head)
      : RandomAccessFile(std::move(path), info.size),
        fs_(fs),
        bucket_(std::move(bucket)),
        key_(std::move(key)),
        etag_(std::move(info.etag)),
        head_(std::move(head)) {}

  ~S3File() override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [offset, p] : pending_) fs_->ReleasePrefetch(p->n);
  }

  bool remote() const override { return true; }
  int64_t waits() const override { return waits_.load(std::memory_order_relaxed); }

  void Prefetch(int64_t offset, int64_t n) const override {
    if (offset < 0 || n <= 0 || offset >= size()) return;
    n = std::min(n, size() - offset);
    if (offset + n <= static_cast<int64_t>(head_.size())) return;
    auto p = std::make_shared<Pending>();
    p->offset = offset;
    p->n = n;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (pending_.count(offset) != 0) return;
      if (!fs_->ReservePrefetch(n)) return;  // over the budget: the ReadAt will fetch it itself
      pending_[offset] = p;
    }
    p->data.resize(static_cast<size_t>(n));
    fs_->pool().Submit([fs = fs_, bucket = bucket_, key = key_, etag = etag_, p] {
      Result<int64_t> got = fs->client().GetRange(bucket, key, p->offset, p->n, p->data.data(), etag, nullptr);
      Status s = got.status();
      if (got.ok() && *got != p->n) {
        s = DataLossError("s3://" + bucket + "/" + key + " ended at byte " + std::to_string(p->offset + *got) +
                          " while its size was " + std::to_string(p->offset + p->n) + " or more when opened");
      }
      p->Finish(std::move(s));
    });
  }

  Result<int64_t> ReadAt(int64_t offset, int64_t n, char* dst) const override {
    if (offset >= size() || n <= 0) return int64_t{0};
    n = std::min(n, size() - offset);
    if (offset + n <= static_cast<int64_t>(head_.size())) {
      std::memcpy(dst, head_.data() + offset, static_cast<size_t>(n));
      return n;
    }
    std::shared_ptr<Pending> p = TakePending(offset, n);
    if (p) {
      std::unique_lock<std::mutex> lock(p->mu);
      if (!p->done) waits_.fetch_add(1, std::memory_order_relaxed);
      p->cv.wait(lock, [&] { return p->done; });
      if (!p->status.ok()) return p->status;
      std::memcpy(dst, p->data.data() + (offset - p->offset), static_cast<size_t>(n));
      return n;
    }
    waits_.fetch_add(1, std::memory_order_relaxed);
    return Fetch(offset, n, dst);
  }

 private:
  // The pending range holding [offset, offset + n), if any; it is forgotten (its budget released)
  // when this read reaches its end, the way every planned read consumes its range once.
  std::shared_ptr<Pending> TakePending(int64_t offset, int64_t n) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.upper_bound(offset);
    if (it == pending_.begin()) return nullptr;
    --it;
    std::shared_ptr<Pending> p = it->second;
    if (offset + n > p->offset + p->n) return nullptr;
    if (offset + n == p->offset + p->n) {
      pending_.erase(it);
      fs_->ReleasePrefetch(p->n);
    }
    return p;
  }

  // Ranged GETs, in parallel parts for a large read.
  Result<int64_t> Fetch(int64_t offset, int64_t n, char* dst) const {
    const int64_t part = fs_->options().part_bytes;
    if (n <= 2 * part) {
      RECTRAIN_ASSIGN_OR_RETURN(int64_t got, fs_->client().GetRange(bucket_, key_, offset, n, dst, etag_, nullptr));
      return ShortCheck(offset, n, got);
    }
    const int64_t parts = (n + part - 1) / part;
    std::vector<std::shared_ptr<Pending>> jobs;
    for (int64_t i = 0; i < parts; ++i) {
      auto p = std::make_shared<Pending>();
      p->offset = offset + i * part;
      p->n = std::min(part, n - i * part);
      jobs.push_back(p);
      fs_->pool().Submit([this, p, dst, offset] {
        Result<int64_t> got = fs_->client().GetRange(bucket_, key_, p->offset, p->n, dst + (p->offset - offset), etag_, nullptr);
        p->Finish(got.ok() ? ShortCheck(p->offset, p->n, *got).status() : got.status());
      });
    }
    Status first;
    for (const auto& p : jobs) {
      p->Wait();
      if (first.ok() && !p->status.ok()) first = p->status;
    }
    if (!first.ok()) return first;
    return n;
  }

  Result<int64_t> ShortCheck(int64_t offset, int64_t n, int64_t got) const {
    if (got == n) return got;
    return DataLossError(path() + " ended at byte " + std::to_string(offset + got) + " but had " +
                         std::to_string(size()) + " bytes when opened");
  }

  S3FileSystem* fs_;
  const std::string bucket_, key_, etag_;
  const std::string head_;  // the object's first bytes, read at open
  mutable std::mutex mu_;
  mutable std::map<int64_t, std::shared_ptr<Pending>> pending_;  // by offset, guarded by mu_
  mutable std::atomic<int64_t> waits_{0};
};

EVP_MD_CTX* NewMd5() {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (ctx != nullptr && EVP_DigestInit_ex(ctx, EVP_md5(), nullptr) != 1) {
    EVP_MD_CTX_free(ctx);
    return nullptr;
  }
  return ctx;
}

class S3Writer final : public AtomicFileWriter {
 public:
  S3Writer(S3FileSystem* fs, std::string bucket, std::string key)
      : fs_(fs), bucket_(std::move(bucket)), key_(std::move(key)) {}
  ~S3Writer() override {
    if (!upload_id_.empty() && !committed_) {
      // Best effort: a store that keeps the parts (or does not implement abort) only holds
      // invisible bytes; the object itself never appears.
      fs_->client().AbortMultipartUpload(bucket_, key_, upload_id_).IgnoreError();
    }
  }

  Status Append(std::string_view bytes) override {
    if (committed_) return FailedPreconditionError("write to s3://" + bucket_ + "/" + key_ + " after Commit()");
    buffer_.append(bytes);
    bytes_written_ += static_cast<int64_t>(bytes.size());
    const size_t part = static_cast<size_t>(fs_->options().part_bytes);
    size_t used = 0;
    while (buffer_.size() - used >= part + 1) {  // keep at least one byte for the last part
      RECTRAIN_RETURN_IF_ERROR(UploadPart(std::string_view(buffer_).substr(used, part)));
      used += part;
    }
    if (used > 0) buffer_.erase(0, used);
    return OkStatus();
  }

  Status Commit() override {
    if (committed_) return FailedPreconditionError("Commit() called twice for s3://" + bucket_ + "/" + key_);
    if (upload_id_.empty()) {
      RECTRAIN_RETURN_IF_ERROR(fs_->client().Put(bucket_, key_, buffer_));
    } else {
      if (!buffer_.empty()) {
        RECTRAIN_RETURN_IF_ERROR(UploadPart(buffer_));
      }
      RECTRAIN_RETURN_IF_ERROR(fs_->client().CompleteMultipartUpload(bucket_, key_, upload_id_, etags_,
                                                                     {bytes_written_, Md5Hex()}));
    }
    committed_ = true;
    buffer_.clear();
    return OkStatus();
  }

 private:
  Status UploadPart(std::string_view bytes) {
    if (upload_id_.empty()) {
      RECTRAIN_ASSIGN_OR_RETURN(upload_id_, fs_->client().CreateMultipartUpload(bucket_, key_));
    }
    RECTRAIN_ASSIGN_OR_RETURN(std::string etag, fs_->client().UploadPart(bucket_, key_, upload_id_,
                                                                         static_cast<int>(etags_.size()) + 1, bytes));
    etags_.push_back(std::move(etag));
    if (md5_ != nullptr) EVP_DigestUpdate(md5_.get(), bytes.data(), bytes.size());
    return OkStatus();
  }

  // The MD5 of every part uploaded (hex); empty if OpenSSL failed to start it.
  std::string Md5Hex() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (md5_ == nullptr || EVP_DigestFinal_ex(md5_.get(), md, &n) != 1) return "";
    return Hex(md, n);
  }

  S3FileSystem* fs_;
  std::string bucket_, key_;
  std::string buffer_;
  std::string upload_id_;
  std::vector<std::string> etags_;
  // MD5 of the parts' bytes: CompleteMultipartUpload checks with it an upload whose answer was lost.
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> md5_{NewMd5(), &EVP_MD_CTX_free};
  bool committed_ = false;
};

std::string DirPrefix(const std::string& key) { return key.empty() || key.back() == '/' ? key : key + "/"; }

}  // namespace

TaskPool::~TaskPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void TaskPool::Submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (workers_.empty()) {
      for (int i = 0; i < threads_; ++i) workers_.emplace_back([this] { Loop(); });
    }
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void TaskPool::Loop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

namespace {
std::atomic<S3FileSystem*> g_default{nullptr};
}  // namespace

S3FileSystem::S3FileSystem(S3Config config, S3FileSystemOptions options)
    : client_(std::make_unique<S3Client>(std::move(config))), options_(options), pool_(options.fetch_threads) {}

S3FileSystem::S3FileSystem(Status error) : config_error_(std::move(error)), pool_(1) {
  RECTRAIN_CHECK(!config_error_.ok());
}

S3FileSystem* S3FileSystem::Default() {
  static S3FileSystem* fs = [] {
    Result<S3Config> config = ResolveS3Config(ProcessEnv());
    // Never destroyed: files and background fetches may outlive static destructors at exit.
    S3FileSystem* made = config.ok() ? new S3FileSystem(*config)
                                     : new S3FileSystem(config.status().WithContext("S3 configuration"));
    g_default.store(made);
    return made;
  }();
  return fs;
}

S3FileSystem* S3FileSystem::DefaultIfUsed() { return g_default.load(); }

bool S3FileSystem::ReservePrefetch(int64_t n) {
  int64_t now = prefetched_bytes_.load();
  while (now + n <= options_.prefetch_budget_bytes) {
    if (prefetched_bytes_.compare_exchange_weak(now, now + n)) return true;
  }
  return false;
}

void S3FileSystem::ReleasePrefetch(int64_t n) { prefetched_bytes_.fetch_sub(n); }

RemoteIoStats S3FileSystem::io_stats() const { return client_ ? client_->stats() : RemoteIoStats(); }

Result<std::unique_ptr<RandomAccessFile>> S3FileSystem::OpenForRead(const std::string& path) {
  RECTRAIN_RETURN_IF_ERROR(config_error_);
  RECTRAIN_ASSIGN_OR_RETURN(auto bk, ParseS3Uri(path));
  auto& [bucket, key] = bk;
  if (key.empty() || key.back() == '/') {
    return InvalidArgumentError(path + " is a directory; list files, or use a glob such as " + DirPrefix(path) + "*.tsv");
  }
  std::string head(static_cast<size_t>(options_.head_bytes), '\0');
  ObjectInfo info;
  Result<int64_t> got = client_->GetRange(bucket, key, 0, options_.head_bytes, head.data(), "", &info);
  if (!got.ok()) {
    if (got.status().code() == StatusCode::kNotFound) {
      RECTRAIN_ASSIGN_OR_RETURN(FileStat st, Stat(path));  // a directory, or a clean "no such file"
      RECTRAIN_RETURN_IF_ERROR(CheckRegularFile(st, ""));
    }
    return got.status();
  }
  if (*got == 0) {  // an empty object answers 416 to any range
    RECTRAIN_ASSIGN_OR_RETURN(info, client_->Head(bucket, key));
  }
  head.resize(static_cast<size_t>(*got));
  return std::unique_ptr<RandomAccessFile>(new S3File(path, this, bucket, key, std::move(info), std::move(head)));
}

Result<std::unique_ptr<AtomicFileWriter>> S3FileSystem::CreateAtomic(const std::string& path) {
  RECTRAIN_RETURN_IF_ERROR(config_error_);
  RECTRAIN_ASSIGN_OR_RETURN(auto bk, ParseS3Uri(path));
  if (bk.second.empty() || bk.second.back() == '/') {
    return InvalidArgumentError("cannot write " + path + ": it names a directory, not an object");
  }
  return std::unique_ptr<AtomicFileWriter>(new S3Writer(this, bk.first, bk.second));
}

Result<FileStat> S3FileSystem::Stat(const std::string& path) {
  RECTRAIN_RETURN_IF_ERROR(config_error_);
  RECTRAIN_ASSIGN_OR_RETURN(auto bk, ParseS3Uri(path));
  const auto& [bucket, key] = bk;
  FileStat st;
  st.path = path;
  if (!key.empty() && key.back() != '/') {
    Result<ObjectInfo> info = client_->Head(bucket, key);
    if (info.ok()) {
      st.size = info->size;
      st.mtime_ns = info->mtime_ns;
      st.version = info->etag;
      return st;
    }
    if (info.status().code() != StatusCode::kNotFound) return info.status();
  }
  RECTRAIN_ASSIGN_OR_RETURN(std::vector<ListEntry> below, client_->List(bucket, DirPrefix(key), "", 1, 1));
  if (below.empty() && !key.empty()) return NotFoundError("no such file: " + path);
  st.type = FileType::kDirectory;
  return st;
}

Result<std::vector<FileStat>> S3FileSystem::Glob(const std::string& pattern) {
  RECTRAIN_RETURN_IF_ERROR(config_error_);
  RECTRAIN_ASSIGN_OR_RETURN(auto bk, ParseS3Uri(pattern));
  // Named references, not a structured binding: the lambda below captures them, which C++20
  // allows for bindings only from clang 16 on (the fuzz build uses Debian's clang 14).
  const std::string& bucket = bk.first;
  const std::string& key_pattern = bk.second;
  const size_t wild = key_pattern.find_first_of("*?[");
  const std::string literal = key_pattern.substr(0, wild);
  const std::string prefix = literal.substr(0, literal.rfind('/') + 1);  // whole path components
  // One level only (a delimiter listing) when no '/' follows the first wildcard.
  const bool one_level = key_pattern.find('/', prefix.size()) == std::string::npos;
  RECTRAIN_ASSIGN_OR_RETURN(std::vector<ListEntry> entries, client_->List(bucket, prefix, one_level ? "/" : ""));
  const std::string base = "s3://" + bucket + "/";
  std::map<std::string, FileStat> found;
  auto consider = [&](const std::string& key, const ListEntry* e) {
    if (::fnmatch(key_pattern.c_str(), key.c_str(), FNM_PATHNAME) != 0) return;
    FileStat st;
    st.path = base + key;
    if (e == nullptr) {
      st.type = FileType::kDirectory;
    } else {
      st.size = e->size;
      st.mtime_ns = e->mtime_ns;
      st.version = e->etag;
    }
    found.emplace(st.path, std::move(st));
  };
  for (const ListEntry& e : entries) {
    if (e.is_prefix) {
      consider(e.key.substr(0, e.key.size() - 1), nullptr);
      continue;
    }
    if (!e.key.empty() && e.key.back() == '/') continue;  // a "directory marker" object
    consider(e.key, &e);
    // Directories on the way (a pattern such as s3://b/day=* matching "day=1/" must say so).
    for (size_t slash = e.key.find('/', prefix.size()); slash != std::string::npos; slash = e.key.find('/', slash + 1)) {
      consider(e.key.substr(0, slash), nullptr);
    }
  }
  std::vector<FileStat> out;
  for (auto& [path, st] : found) out.push_back(std::move(st));
  return out;
}

Result<std::vector<DirEntry>> S3FileSystem::List(const std::string& dir, bool recursive) {
  RECTRAIN_RETURN_IF_ERROR(config_error_);
  RECTRAIN_ASSIGN_OR_RETURN(auto bk, ParseS3Uri(dir));
  const std::string prefix = DirPrefix(bk.second);
  RECTRAIN_ASSIGN_OR_RETURN(std::vector<ListEntry> entries, client_->List(bk.first, prefix, recursive ? "" : "/"));
  std::vector<DirEntry> out;
  for (const ListEntry& e : entries) {
    std::string name = e.key.substr(prefix.size());
    if (name.empty()) continue;  // the directory's own marker
    if (e.is_prefix) {
      name.pop_back();
      out.push_back(DirEntry{std::move(name), true, 0});
    } else if (name.back() != '/') {
      out.push_back(DirEntry{std::move(name), false, e.size});
    }
  }
  if (out.empty()) return NotFoundError("no such directory: " + dir);
  std::sort(out.begin(), out.end(), [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  return out;
}

Status S3FileSystem::RemoveAll(const std::string& path) {
  RECTRAIN_RETURN_IF_ERROR(config_error_);
  RECTRAIN_ASSIGN_OR_RETURN(auto bk, ParseS3Uri(path));
  const auto& [bucket, key] = bk;
  if (key.empty()) return InvalidArgumentError("refusing to remove a whole bucket (" + path + ")");
  if (key.back() != '/') {
    RECTRAIN_RETURN_IF_ERROR(client_->Delete(bucket, key));
  }
  RECTRAIN_ASSIGN_OR_RETURN(std::vector<ListEntry> below, client_->List(bucket, DirPrefix(key), ""));
  for (const ListEntry& e : below) RECTRAIN_RETURN_IF_ERROR(client_->Delete(bucket, e.key));
  return OkStatus();
}

}  // namespace rectrain::io::s3

// rectrain/serve/publish.cc: see publish.h.
#include "rectrain/serve/publish.h"

#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <unordered_set>
#include <utility>

#include "rectrain/base/stopwatch.h"
#include "rectrain/checkpoint/dense_file.h"
#include "rectrain/io/file.h"
#include "rectrain/io/fs/file_system.h"
#include "rectrain/serve/delta.h"
#include "rectrain/serve/model_mirror.h"
#include "rectrain/serve/internal/manifest_json.h"
#include "rectrain/serve/snapshot.h"

namespace rectrain::serve {
namespace fs = std::filesystem;

std::vector<std::pair<int64_t, std::string>> ListVersions(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!IsVersionName(name)) continue;
    if (!fs::exists(e.path() / "manifest.json", ec)) continue;
    out.emplace_back(std::stoll(name), e.path().string());
  }
  std::sort(out.rbegin(), out.rend());
  return out;
}

Result<VersionChain> ResolveVersion(const std::string& versions_dir, int64_t version, int64_t current_version,
                                    uint64_t current_xxh64) {
  VersionChain chain;
  std::string dir = (fs::path(versions_dir) / std::to_string(version)).string();
  while (true) {
    RECTRAIN_ASSIGN_OR_RETURN(const std::string text, io::ReadFileToString(dir + "/manifest.json"));
    chain.dirs.push_back(dir);
    if (!IsDeltaManifest(text)) break;  // a full export (or not one: its loader says why)
    RECTRAIN_ASSIGN_OR_RETURN(const DeltaManifest dm, DeltaManifestFromJson(text, dir + "/manifest.json"));
    ++chain.deltas_since_full;
    if (dm.base_version == current_version && dm.base_manifest_xxh64 == current_xxh64) {
      chain.from_current = true;
      break;
    }
    const std::string base = (fs::path(versions_dir) / std::to_string(dm.base_version)).string();
    const std::string why = dir + " is a delta of version " + std::to_string(dm.base_version) + " (manifest xxh64 " +
                            internal::Hex(dm.base_manifest_xxh64) + ") but ";
    Result<PackageFile> base_manifest = DescribeFile(base, "manifest.json");
    if (!base_manifest.ok()) {
      return FailedPreconditionError(why + base + " cannot be read (" + base_manifest.status().ToString() +
                                     "); publish a full export");
    }
    if (base_manifest->xxh64 != dm.base_manifest_xxh64) {
      return FailedPreconditionError(why + base + "/manifest.json has xxh64 " + internal::Hex(base_manifest->xxh64) +
                                     ": the delta was made against another version " + std::to_string(dm.base_version) +
                                     "; publish a full export");
    }
    if (dm.base_version >= dm.version) {
      return DataLossError(dir + " names version " + std::to_string(dm.base_version) + " as its base, not an older one");
    }
    dir = base;
  }
  std::reverse(chain.dirs.begin(), chain.dirs.end());
  return chain;
}

Result<std::unique_ptr<Predictor>> LoadChain(const VersionChain& chain, const PredictorOptions& options,
                                             const Predictor* current) {
  std::unique_ptr<Predictor> p;
  size_t i = 0;
  if (!chain.from_current) {
    RECTRAIN_ASSIGN_OR_RETURN(p, Predictor::Load(chain.dirs[0], options));
    i = 1;
  }
  for (; i < chain.dirs.size(); ++i) {
    const Predictor& base = p ? *p : *current;
    RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<Predictor> next, base.ApplyDelta(chain.dirs[i]));
    p = std::move(next);
  }
  return p;
}

Result<std::unique_ptr<Predictor>> LoadModelDir(const std::string& dir, const PredictorOptions& options) {
  Result<std::string> text = io::ReadFileToString(dir + "/manifest.json");
  if (!text.ok() || !IsDeltaManifest(*text)) return Predictor::Load(dir, options);
  const fs::path path = fs::path(dir).lexically_normal();
  const std::string name = path.filename().string();
  if (!IsVersionName(name)) {
    return InvalidArgumentError(dir + " is a serving delta outside a versions directory (name it by its version, beside "
                                "the versions it applies to)");
  }
  RECTRAIN_ASSIGN_OR_RETURN(const VersionChain chain, ResolveVersion(path.parent_path().string(), std::stoll(name)));
  return LoadChain(chain, options);
}

namespace {

// The changes of one table between the model (`snap`) and `served`: the snapshot's rows (at
// least min_count updates) whose encoding differs from served's or that served lacks, and the
// ids served has that the model has not (complete: every one the snapshot lacks; incremental:
// its removed ids, and its rows below min_count). Ids ascending, so that the file does not
// depend on the table's shard layout (or a gathered snapshot's rank order).
TableDelta DiffTable(const SnapshotTable& snap, bool complete, const ServedTable& served, int64_t min_count) {
  TableDelta d;
  d.dim = served.dim();
  d.type = served.type();
  const size_t rb = static_cast<size_t>(RowBytes(d.type, d.dim));
  const size_t dim = static_cast<size_t>(snap.dim);
  std::vector<size_t> order(snap.ids.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return snap.ids[a] < snap.ids[b]; });
  std::vector<uint8_t> enc(rb);
  std::unordered_set<uint64_t> present;
  if (complete) present.reserve(order.size());
  for (size_t i : order) {
    const uint64_t id = snap.ids[i];
    const uint8_t* old = served.Find(id);
    if (static_cast<int64_t>(snap.updates[i]) < min_count) {
      if (!complete && old != nullptr) d.removed.push_back(id);
      continue;
    }
    if (complete) present.insert(id);
    EncodeRow(d.type, snap.rows.data() + i * dim, d.dim, enc.data());
    if (old != nullptr && std::memcmp(old, enc.data(), rb) == 0) continue;
    d.ids.push_back(id);
    d.rows.insert(d.rows.end(), enc.begin(), enc.end());
  }
  if (complete) {
    served.ForEachRow([&](uint64_t id, const uint8_t*) {
      if (!present.contains(id)) d.removed.push_back(id);
    });
  } else {
    for (uint64_t id : snap.removed) {
      if (served.Find(id) != nullptr) d.removed.push_back(id);
    }
  }
  std::sort(d.removed.begin(), d.removed.end());
  d.removed.erase(std::unique(d.removed.begin(), d.removed.end()), d.removed.end());
  d.oov.resize(rb);
  EncodeRow(d.type, snap.oov.data(), d.dim, d.oov.data());
  return d;
}

}  // namespace

Result<PublishReport> WriteDelta(const ModelSnapshot& source, const Predictor& base, int64_t base_version,
                                 const std::string& out_dir, int64_t version) {
  Stopwatch sw;
  RECTRAIN_RETURN_IF_ERROR(CheckSnapshot(source));
  if (source.tables.size() != base.num_tables()) {
    return InvalidArgumentError("the model has " + std::to_string(source.tables.size()) + " tables, version " +
                                std::to_string(base_version) + " " + std::to_string(base.num_tables()) +
                                " (publish a full export)");
  }
  PublishReport report{.version = version, .full = false, .base_version = base_version};
  DeltaManifest m;
  m.version = version;
  m.base_version = base_version;
  m.base_manifest_xxh64 = base.manifest_xxh64();
  m.created = UtcNow();
  m.trained_steps = source.description.trained_steps;
  m.source_run = source.description.source_run;
  m.events = source.description.events;
  const fs::path out = fs::path(out_dir).lexically_normal();
  std::vector<std::string> removed_stale;
  RECTRAIN_ASSIGN_OR_RETURN(const std::string tmp, BeginExportDir(out, &removed_stale));
  const std::vector<optim::ParamRef> params = DenseParamRefs(source);
  auto write = [&]() -> Status {
    RECTRAIN_RETURN_IF_ERROR(checkpoint::WriteDenseFile(tmp + "/dense.bin", params, {}));
    RECTRAIN_ASSIGN_OR_RETURN(m.dense, DescribeFile(tmp, "dense.bin"));
    report.bytes += m.dense.bytes;
    for (size_t t = 0; t < source.tables.size(); ++t) {
      const ServedTable& served = base.table(t);
      const std::string& name = source.tables[t].name;
      if (name != served.config().name || source.tables[t].dim != served.dim()) {
        return InvalidArgumentError("table " + std::to_string(t) + " is '" + name + "' (dim " +
                                    std::to_string(source.tables[t].dim) + ") in the model but '" +
                                    served.config().name + "' (dim " + std::to_string(served.dim()) + ") in version " +
                                    std::to_string(base_version) + " (publish a full export)");
      }
      const TableDelta d = DiffTable(source.tables[t], source.complete, served, base.manifest().min_count);
      DeltaTableEntry e{.name = name, .dim = d.dim, .type = d.type};
      e.changed = static_cast<int64_t>(d.ids.size());
      e.removed = static_cast<int64_t>(d.removed.size());
      RECTRAIN_ASSIGN_OR_RETURN(const std::unique_ptr<ServedTable> after, served.WithDelta(d));
      e.rows = after->rows();
      const std::string rel = "tables/" + name + ".delta";
      RECTRAIN_RETURN_IF_ERROR(WriteTableDeltaFile(tmp + "/" + rel, d));
      RECTRAIN_ASSIGN_OR_RETURN(e.file, DescribeFile(tmp, rel));
      report.bytes += e.file.bytes;
      report.changed_rows += e.changed;
      report.removed_ids += e.removed;
      report.rows += e.rows - 1;
      m.tables.push_back(std::move(e));
    }
    RECTRAIN_RETURN_IF_ERROR(io::WriteFileAtomically(tmp + "/manifest.json", DeltaManifestToJson(m)));
    return CommitExportDir(tmp, out);
  };
  if (Status st = write(); !st.ok()) {
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
    return st;
  }
  report.seconds = sw.Seconds();
  return report;
}

Result<std::unique_ptr<Publisher>> Publisher::Open(const PublishOptions& options) {
  if (options.versions_dir.empty()) return InvalidArgumentError("a versions directory is required (--to MODELS)");
  if (options.full_every < 0) return InvalidArgumentError("full_every must be >= 0");
  std::unique_ptr<Publisher> p(new Publisher(options));
  p->local_ = options.versions_dir;
  if (io::IsRemotePath(options.versions_dir)) {
    RECTRAIN_RETURN_IF_ERROR(p->OpenRemote());
  }
  const auto versions = ListVersions(p->local_);
  if (versions.empty()) return p;
  p->newest_ = versions.front().first;
  Result<VersionChain> chain = ResolveVersion(p->local_, p->newest_);
  if (!chain.ok()) return p;  // the next publish is a full export
  Result<std::unique_ptr<Predictor>> view = LoadChain(*chain, options.view);
  if (!view.ok()) return p;
  p->view_ = std::move(view).value();
  p->view_version_ = p->newest_;
  p->deltas_since_full_ = chain->deltas_since_full;
  return p;
}

Publisher::~Publisher() {
  if (!owns_staging_) return;
  std::error_code ignored;
  fs::remove_all(local_, ignored);
}

Status Publisher::OpenRemote() {
  remote_ = options_.versions_dir;
  std::error_code ec;
  if (options_.staging_dir.empty()) {
    std::string tmpl = (fs::temp_directory_path(ec) / "rectrain-publish-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) return ErrnoToStatus(errno, "cannot create a staging directory " + tmpl);
    local_ = tmpl;
    owns_staging_ = true;
  } else {
    local_ = options_.staging_dir;
    fs::create_directories(local_, ec);
    if (ec) return ErrnoToStatus(ec.value(), "cannot create the staging directory " + local_);
    // The store is the truth: versions staged by an earlier publisher may be gone from it.
    for (const auto& e : fs::directory_iterator(local_, ec)) {
      const std::string name = e.path().filename().string();
      if (IsVersionName(name) || name.find(".tmp-") != std::string::npos) fs::remove_all(e.path(), ec);
    }
  }
  ModelMirror mirror(remote_, local_, /*keep=*/1);
  if (Result<bool> synced = mirror.Sync(); !synced.ok()) {
    const StatusCode code = synced.status().code();
    // Unreachable now: no view, so the first publish that reaches the store is a full export.
    if (code == StatusCode::kUnavailable || code == StatusCode::kDeadlineExceeded) return OkStatus();
    return synced.status().WithContext("while reading the published versions in " + remote_);
  }
  return OkStatus();
}

Result<bool> Publisher::ViewListed(const std::vector<std::pair<int64_t, std::string>>& local_versions) const {
  if (!view_) return false;
  if (remote_.empty()) {
    return std::any_of(local_versions.begin(), local_versions.end(), [&](const auto& v) { return v.first == view_version_; });
  }
  const std::string manifest = io::JoinPath(io::JoinPath(remote_, std::to_string(view_version_)), "manifest.json");
  Result<io::FileStat> st = io::FileSystemFor(remote_).Stat(manifest);
  if (st.ok()) return true;
  if (st.status().code() == StatusCode::kNotFound) return false;
  return st.status();
}

Status Publisher::Upload(int64_t version) const {
  const std::string to = io::JoinPath(remote_, std::to_string(version));
  RECTRAIN_RETURN_IF_ERROR(io::CopyTree((fs::path(local_) / std::to_string(version)).string(), to, "manifest.json"))
      << "while uploading version " << version << " to " << to;
  return OkStatus();
}

void Publisher::PruneStaging(bool keep_oldest, int64_t newest) const {
  std::error_code ec;
  const auto versions = ListVersions(local_);  // newest first
  for (const auto& [v, dir] : versions) {
    if (v != newest && !(keep_oldest && v == versions.back().first)) fs::remove_all(dir, ec);
  }
}

bool Publisher::WantsCompleteSnapshot() const {
  return !view_ || options_.full_first || (options_.full_every > 0 && deltas_since_full_ >= options_.full_every) ||
         view_version_ != newest_;
}

Result<PublishReport> Publisher::Publish(const ModelSource& source) {
  RECTRAIN_ASSIGN_OR_RETURN(const ModelSnapshot snapshot, TakeSnapshot(source, /*complete=*/true));
  return Publish(snapshot);
}

Result<PublishReport> Publisher::Publish(const ModelSnapshot& source) {
  Stopwatch sw;
  // Numbers only grow, also past versions that others put in the directory meanwhile.
  const auto versions = ListVersions(local_);
  if (!versions.empty()) newest_ = std::max(newest_, versions.front().first);
  if (!remote_.empty()) {
    RECTRAIN_ASSIGN_OR_RETURN(const int64_t published, NewestRemoteVersion(remote_));
    newest_ = std::max(newest_, published);
  }
  const int64_t version = newest_ + 1;
  const std::string out = (fs::path(local_) / std::to_string(version)).string();
  // A view whose version left the directory (removed, the directory recreated) is no base a
  // server can find: publish a full export.
  RECTRAIN_ASSIGN_OR_RETURN(const bool view_listed, ViewListed(versions));
  const bool full = !view_listed || view_version_ != newest_ || options_.full_first ||
                    (options_.full_every > 0 && deltas_since_full_ >= options_.full_every);
  if (full && !source.complete) {
    return FailedPreconditionError("version " + std::to_string(version) + " of " + options_.versions_dir +
                                   " must be a full export (" +
                                   (view_listed ? "full_every deltas since the last one" : "no view, or its version is gone") +
                                   ") but the snapshot holds only the rows changed since the previous publish; the next "
                                   "publish takes a complete one");
  }
  options_.full_first = false;
  PublishReport report;
  if (full) {
    ExportOptions eo{.out_dir = out, .version = version, .min_count = options_.min_count, .row_type = options_.row_type};
    RECTRAIN_ASSIGN_OR_RETURN(ExportReport er, ExportSnapshot(source, eo));
    report = PublishReport{.version = version, .full = true, .changed_rows = er.rows_kept, .rows = er.rows_kept,
                           .bytes = er.bytes};
  } else {
    RECTRAIN_ASSIGN_OR_RETURN(report, WriteDelta(source, *view_, view_version_, out, version));
  }
  if (!remote_.empty()) {
    if (Status up = Upload(version); !up.ok()) {
      std::error_code ignored;
      fs::remove_all(out, ignored);  // not published: the view stays the last version uploaded
      return up;
    }
  }
  if (full) {
    RECTRAIN_ASSIGN_OR_RETURN(view_, Predictor::Load(out, options_.view));
    deltas_since_full_ = 0;
    if (!remote_.empty()) PruneStaging(/*keep_oldest=*/false, version);
  } else {
    RECTRAIN_ASSIGN_OR_RETURN(view_, view_->ApplyDelta(out));
    ++deltas_since_full_;
    if (!remote_.empty()) PruneStaging(/*keep_oldest=*/true, version);
  }
  view_version_ = newest_ = version;
  report.seconds = sw.Seconds();
  return report;
}

}  // namespace rectrain::serve

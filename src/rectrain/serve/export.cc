// rectrain/serve/export.cc: see export.h.
#include "rectrain/serve/export.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <functional>
#include <limits>

#include "rectrain/base/stopwatch.h"
#include "rectrain/checkpoint/dense_file.h"
#include "rectrain/io/file.h"
#include "rectrain/io/fs/file_system.h"
#include "rectrain/serve/snapshot.h"

namespace rectrain::serve {
namespace fs = std::filesystem;

std::string UtcNow() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

namespace {

int64_t VersionFromName(const std::string& dir) {
  const std::string name = fs::path(dir).lexically_normal().filename().string();
  return IsVersionName(name) ? std::stoll(name) : 1;
}

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

constexpr std::string_view kTmpMarker = ".tmp-";

// Whether a process of this host with that pid runs (EPERM: it does, as another user's).
bool ProcessRuns(int64_t pid) {
  if (pid <= 0 || pid > std::numeric_limits<pid_t>::max()) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

}  // namespace

Result<std::string> BeginExportDir(const fs::path& out, std::vector<std::string>* removed_stale) {
  // Written beside the final directory, then renamed onto it: a watcher never sees half a model.
  std::error_code ec;
  if (!out.parent_path().empty()) fs::create_directories(out.parent_path(), ec);
  *removed_stale = RemoveStaleExportDirs(out.parent_path().string());
  const std::string tmp = ExportTempDir(out.string());
  fs::remove_all(tmp, ec);
  if (!fs::create_directories(tmp + "/tables", ec)) return ErrnoToStatus(ec.value(), "cannot create " + tmp + "/tables");
  return tmp;
}

Status CommitExportDir(const std::string& tmp, const fs::path& out) {
  std::error_code ec;
  fs::rename(tmp, out, ec);
  if (ec) return ErrnoToStatus(ec.value(), "cannot rename " + tmp + " to " + out.string());
  return OkStatus();
}

std::string ExportTempDir(const std::string& out_dir) {
  return fs::path(out_dir).lexically_normal().string() + std::string(kTmpMarker) + HostName() + "-" +
         std::to_string(::getpid());
}

std::vector<std::string> RemoveStaleExportDirs(const std::string& parent) {
  std::vector<std::string> removed;
  const std::string host = HostName();
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(parent.empty() ? "." : parent, ec)) {
    const std::string name = e.path().filename().string();
    const size_t at = name.find(kTmpMarker);
    if (at == std::string::npos || at == 0) continue;
    // "<name>.tmp-<host>-<pid>", or "<name>.tmp-<pid>" as earlier builds wrote it (on this host).
    const std::string tail = name.substr(at + kTmpMarker.size());
    const size_t dash = tail.rfind('-');
    const std::string pid_text = dash == std::string::npos ? tail : tail.substr(dash + 1);
    const std::string its_host = dash == std::string::npos ? host : tail.substr(0, dash);
    if (pid_text.empty() || pid_text.size() > 10 || its_host != host ||
        !std::all_of(pid_text.begin(), pid_text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;  // another machine's export (a shared file system) is not ours to judge
    }
    if (ProcessRuns(std::stoll(pid_text)) || !e.is_directory(ec)) continue;
    std::error_code rm;
    fs::remove_all(e.path(), rm);
    if (!rm) removed.push_back(e.path().string());
  }
  return removed;
}

Status CheckExportOptions(const ExportOptions& o) {
  std::error_code ec;
  if (o.out_dir.empty()) return InvalidArgumentError("--out DIR is required");
  // An object store: the package is staged in a local temporary directory, then uploaded with
  // manifest.json last (a watcher of the prefix never sees half a model).
  const bool remote = io::IsRemotePath(o.out_dir);
  const bool exists = remote ? io::FileSystemFor(o.out_dir).Stat(o.out_dir).ok() : fs::exists(o.out_dir, ec);
  if (exists && !o.overwrite) {
    return AlreadyExistsError(o.out_dir + " already exists (choose a new version directory, or pass --force)");
  }
  if (o.min_count < 0) return InvalidArgumentError("--min-count must be >= 0");
  return OkStatus();
}

namespace {

// The directory the package is written in before it is committed: beside `out` (a stale one of
// an interrupted export is removed), or for an object store in the local temporary directory
// (no stale scan there: other programs' files live in it).
Result<std::string> StageExportDir(const fs::path& out, bool remote, ExportReport* report) {
  if (!remote) return BeginExportDir(out, &report->removed_stale);
  std::error_code ec;
  std::string tmp = ExportTempDir((fs::temp_directory_path(ec) / "rectrain-export").string());
  fs::remove_all(tmp, ec);
  if (!fs::create_directories(tmp + "/tables", ec)) return ErrnoToStatus(ec.value(), "cannot create " + tmp + "/tables");
  return tmp;
}

// Table `t` of the model being exported (storage owned by the callee, valid until the next call).
using TableRowsFn = std::function<Result<const SnapshotTable*>(size_t t)>;

// Writes the rows of `table` updated at least o.min_count times (and its OOV row) to
// dir/tables/NAME.rows, in id order so the file is the same whatever the table's shard layout
// was; its entry (without size and checksum) goes to report->manifest.
Status WriteExportTable(const SnapshotTable& table, const ExportOptions& o, const std::string& dir,
                        ExportReport* report) {
  const size_t dim = static_cast<size_t>(table.dim);
  std::vector<size_t> order;
  order.reserve(table.ids.size());
  for (size_t i = 0; i < table.ids.size(); ++i) {
    if (static_cast<int64_t>(table.updates[i]) >= o.min_count) order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return table.ids[a] < table.ids[b]; });
  std::vector<uint64_t> sorted_ids(order.size());
  std::vector<float> sorted_w(order.size() * dim);
  for (size_t i = 0; i < order.size(); ++i) {
    sorted_ids[i] = table.ids[order[i]];
    std::copy_n(table.rows.begin() + static_cast<std::ptrdiff_t>(order[i] * dim), dim,
                sorted_w.begin() + static_cast<std::ptrdiff_t>(i * dim));
  }
  PackageTable pt;
  pt.name = table.name;
  pt.dim = table.dim;
  pt.type = o.row_type;
  pt.rows = static_cast<int64_t>(sorted_ids.size()) + 1;
  pt.dropped = static_cast<int64_t>(table.ids.size() - order.size());
  pt.file.path = "tables/" + pt.name + ".rows";
  RECTRAIN_RETURN_IF_ERROR(WriteTableFile(dir + "/" + pt.file.path, table.dim, o.row_type, sorted_ids, sorted_w, table.oov));
  report->manifest.tables.push_back(std::move(pt));
  report->rows_kept += static_cast<int64_t>(sorted_ids.size());
  report->rows_dropped += static_cast<int64_t>(table.ids.size() - order.size());
  return OkStatus();
}

// The files' sizes and checksums, from the files as written, then manifest.json.
Status WriteExportManifest(const std::string& dir, ExportReport* report) {
  Manifest& m = report->manifest;
  auto describe = [&](PackageFile* f, const std::string& rel) -> Status {
    RECTRAIN_ASSIGN_OR_RETURN(*f, DescribeFile(dir, rel));
    report->bytes += f->bytes;
    return OkStatus();
  };
  RECTRAIN_RETURN_IF_ERROR(describe(&m.config, "config.yaml"));
  RECTRAIN_RETURN_IF_ERROR(describe(&m.dense, "dense.bin"));
  for (auto& pt : m.tables) RECTRAIN_RETURN_IF_ERROR(describe(&pt.file, pt.file.path));
  return io::WriteFileAtomically(dir + "/manifest.json", ManifestToJson(m));
}

// Moves the staged package to o.out_dir: renamed into place, or uploaded to an object store with
// manifest.json last (a watcher of the prefix never sees half a model).
Status CommitStagedExport(const std::string& tmp, const fs::path& out, const ExportOptions& o, bool remote) {
  if (!remote) {
    std::error_code ec;
    if (o.overwrite) fs::remove_all(out, ec);
    return CommitExportDir(tmp, out);
  }
  Status st = o.overwrite ? io::FileSystemFor(o.out_dir).RemoveAll(o.out_dir) : OkStatus();
  if (st.ok()) st = io::CopyTree(tmp, o.out_dir, "manifest.json");
  if (!st.ok()) return st.WithContext("while uploading the model to " + o.out_dir);
  std::error_code ec;
  fs::remove_all(tmp, ec);  // the local staging copy
  return OkStatus();
}

// The package of a model's description, config, dense parameters and tables (from `table`).
Result<ExportReport> WritePackage(const Manifest& description, const std::string& config_yaml,
                                  std::span<const optim::ParamRef> params, size_t num_tables, const TableRowsFn& table,
                                  const ExportOptions& o) {
  Stopwatch sw;
  RECTRAIN_RETURN_IF_ERROR(CheckExportOptions(o));
  const bool remote = io::IsRemotePath(o.out_dir);  // staged locally, then uploaded
  ExportReport report;
  Manifest& m = report.manifest;
  m = description;
  m.format_version = kPackageFormatVersion;
  m.version = o.version > 0 ? o.version : VersionFromName(o.out_dir);
  m.created = UtcNow();
  m.min_count = o.min_count;
  m.tables.clear();

  const fs::path out = fs::path(o.out_dir).lexically_normal();
  RECTRAIN_ASSIGN_OR_RETURN(const std::string tmp, StageExportDir(out, remote, &report));
  Status st = io::WriteFileAtomically(tmp + "/config.yaml", config_yaml);
  if (st.ok()) st = checkpoint::WriteDenseFile(tmp + "/dense.bin", params, {});
  for (size_t t = 0; t < num_tables && st.ok(); ++t) {
    Result<const SnapshotTable*> rows = table(t);
    st = rows.ok() ? WriteExportTable(**rows, o, tmp, &report) : rows.status();
  }
  if (st.ok()) st = WriteExportManifest(tmp, &report);
  if (st.ok()) st = CommitStagedExport(tmp, out, o, remote);
  if (!st.ok()) {
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
    return st;
  }
  report.seconds = sw.Seconds();
  return report;
}

}  // namespace

Result<ExportReport> ExportModel(const ModelSource& source, const ExportOptions& o) {
  SnapshotTable rows;  // one table at a time: an export holds one table's copy, not the model's
  const TableRowsFn table = [&](size_t t) -> Result<const SnapshotTable*> {
    rows = SnapshotTable{};
    RECTRAIN_RETURN_IF_ERROR(AppendTableSnapshot(*source.tables[t], /*complete=*/true, &rows));
    return &rows;
  };
  return WritePackage(source.description, source.config_yaml, source.params, source.tables.size(), table, o);
}

Result<ExportReport> ExportSnapshot(const ModelSnapshot& snapshot, const ExportOptions& o) {
  if (!snapshot.complete) {
    return InvalidArgumentError("a full export needs a complete snapshot (this one holds only the rows changed since the previous one)");
  }
  RECTRAIN_RETURN_IF_ERROR(CheckSnapshot(snapshot));
  const std::vector<optim::ParamRef> params = DenseParamRefs(snapshot);
  const TableRowsFn table = [&](size_t t) -> Result<const SnapshotTable*> { return &snapshot.tables[t]; };
  return WritePackage(snapshot.description, snapshot.config_yaml, params, snapshot.tables.size(), table, o);
}

}  // namespace rectrain::serve

// rectrain/serve/service.cc: see service.h.
#include "rectrain/serve/service.h"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <future>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "rectrain/base/stopwatch.h"
#include "rectrain/io/fs/file_system.h"
#include "rectrain/serve/model_mirror.h"
#include "rectrain/serve/predictor.h"
#include "rectrain/serve/publish.h"

namespace rectrain::serve {
namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

std::string FieldText(const json& v, bool* ok) {
  *ok = true;
  switch (v.type()) {
    case json::value_t::string: return v.get<std::string>();
    case json::value_t::number_integer: return std::to_string(v.get<int64_t>());
    case json::value_t::number_unsigned: return std::to_string(v.get<uint64_t>());
    case json::value_t::number_float: {
      char buf[32];
      auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), v.get<double>());
      return std::string(buf, p);
    }
    default: *ok = false; return {};
  }
}

std::string_view TypeName(const json& v) {
  switch (v.type()) {
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::boolean: return "a boolean";
    default: return "a value of another type";
  }
}

std::string ColumnList(const std::vector<std::string>& cols) {
  std::string out;
  for (size_t i = 0; i < cols.size() && i < 12; ++i) out += (i ? ", " : "") + cols[i];
  if (cols.size() > 12) out += ", ... (" + std::to_string(cols.size()) + " in all)";
  return out;
}

http::RouteReply JsonReply(int status, const json& j) { return {status, j.dump() + "\n", "application/json"}; }

http::RouteReply ErrorReply(const Status& s) { return {http::HttpStatusForCode(s.code()), http::ErrorJson(s), "application/json"}; }

// Appends src's rows to dst (same columns).
void AppendRows(const data::Batch& src, data::Batch* dst) {
  if (dst->size == 0) {
    *dst = src;
    return;
  }
  dst->labels.insert(dst->labels.end(), src.labels.begin(), src.labels.end());
  dst->dense.insert(dst->dense.end(), src.dense.begin(), src.dense.end());
  for (size_t f = 0; f < dst->sparse.size(); ++f) {
    data::SparseColumn& d = dst->sparse[f];
    const data::SparseColumn& s = src.sparse[f];
    if (!d.offsets.empty()) {
      const int32_t base = d.offsets.back();
      for (size_t r = 1; r < s.offsets.size(); ++r) d.offsets.push_back(base + s.offsets[r]);
    }
    d.ids.insert(d.ids.end(), s.ids.begin(), s.ids.end());
  }
  dst->size += src.size;
}

// The common request, {"lines": ["...", ...]} of printable ASCII, read without building a JSON
// document (the general parser took a quarter of the server's CPU at 256 rows per request).
// Returns false for anything else, which the general parser then reads (and reports on); where
// it returns true, the lines are exactly the general parser's (serve_test fuzzes both).
bool FastLines(std::string_view b, int64_t max_rows, std::vector<std::string>* out) {
  size_t i = 0;
  auto ws = [&] {
    while (i < b.size() && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t')) ++i;
  };
  auto eat = [&](std::string_view t) {
    ws();
    if (b.substr(i, t.size()) != t) return false;
    i += t.size();
    return true;
  };
  if (!eat("{") || !eat("\"lines\"") || !eat(":") || !eat("[")) return false;
  out->clear();
  ws();
  if (i < b.size() && b[i] == ']') {
    ++i;
  } else {
    while (true) {
      if (!eat("\"")) return false;
      std::string& line = out->emplace_back();
      while (true) {
        const size_t run = i;
        while (i < b.size() && b[i] != '"' && b[i] != '\\' && static_cast<unsigned char>(b[i]) >= 0x20 &&
               static_cast<unsigned char>(b[i]) < 0x80) {
          ++i;
        }
        line.append(b.data() + run, i - run);
        if (i >= b.size()) return false;
        if (b[i] == '"') break;
        if (b[i] != '\\' || i + 1 >= b.size()) return false;  // a control or non-ASCII byte
        const char e = b[i + 1];
        const char* from = "\"\\/bfnrt";
        const char* to = "\"\\/\b\f\n\r\t";
        const char* at = std::strchr(from, e);
        if (e == '\0' || at == nullptr) return false;  // \uXXXX and bad escapes: the general parser
        line += to[at - from];
        i += 2;
      }
      ++i;  // the closing quote
      if (static_cast<int64_t>(out->size()) > max_rows) return false;  // the general path's message
      if (eat(",")) continue;
      if (eat("]")) break;
      return false;
    }
  }
  if (!eat("}")) return false;
  ws();
  return i == b.size();
}

// Refuses nesting deeper than 16 before the JSON parser builds it (a valid request nests 3 deep).
Status CheckNesting(std::string_view body) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > 16) return InvalidArgumentError("the body nests deeper than 16 levels; a request is {\"rows\": [{...}]}");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return OkStatus();
}

Result<std::vector<std::string>> LinesOf(const json& list) {
  std::vector<std::string> lines;
  lines.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_string()) {
      return InvalidArgumentError("lines[" + std::to_string(i) + "]: expected a string, got " + std::string(TypeName(list[i])));
    }
    lines.push_back(list[i].get<std::string>());
  }
  return lines;
}

// Each object of `list` (values by column name) as a line in the model's training layout.
Result<std::vector<std::string>> LinesOfRows(const json& list, const data::RowParser& parser) {
  if (!parser.has_named_columns()) {
    return InvalidArgumentError("this model's data format has no named columns: send \"lines\"");
  }
  const std::vector<std::string>& cols = parser.columns();
  std::unordered_map<std::string_view, size_t> index;
  for (size_t c = 0; c < cols.size(); ++c) index.emplace(cols[c], c);
  std::vector<std::string> values(cols.size());
  std::vector<std::optional<std::string_view>> fields(cols.size());
  std::vector<std::string> lines;
  lines.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = "rows[" + std::to_string(i) + "]";
    if (!list[i].is_object()) {
      return InvalidArgumentError(where + ": expected an object of column: value, got " + std::string(TypeName(list[i])));
    }
    std::fill(fields.begin(), fields.end(), std::nullopt);
    for (const auto& [key, value] : list[i].items()) {
      auto it = index.find(key);
      if (it == index.end()) {
        return InvalidArgumentError(where + ": unknown field \"" + key + "\"; the model's columns are " + ColumnList(cols));
      }
      if (value.is_null()) continue;  // a missing value
      bool ok = false;
      values[it->second] = FieldText(value, &ok);
      if (!ok) {
        return InvalidArgumentError(where + "." + key + ": expected a string, a number or null, got " + std::string(TypeName(value)));
      }
      fields[it->second] = values[it->second];
    }
    Result<std::string> line = parser.LineFromFields(fields);
    if (!line.ok()) return line.status().WithContext(where);
    lines.push_back(std::move(line).value());
  }
  return lines;
}

}  // namespace

Result<std::vector<std::string>> ParsePredictRequest(std::string_view body, const data::RowParser& parser,
                                                     int64_t max_rows, bool general) {
  std::vector<std::string> fast;
  if (!general && FastLines(body, max_rows, &fast)) return fast;
  RECTRAIN_RETURN_IF_ERROR(CheckNesting(body));
  json j;
  try {
    j = json::parse(body);
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string("the body is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) return InvalidArgumentError("the body must be a JSON object with \"rows\" or \"lines\"");
  const bool has_rows = j.contains("rows"), has_lines = j.contains("lines");
  if (has_rows == has_lines) {
    return InvalidArgumentError("give exactly one of \"rows\" (objects by column name) or \"lines\" (rows in the training layout)");
  }
  for (const auto& [key, value] : j.items()) {
    if (key != "rows" && key != "lines") return InvalidArgumentError("unknown key \"" + key + "\" (expected \"rows\" or \"lines\")");
  }
  const json& list = has_rows ? j["rows"] : j["lines"];
  const char* what = has_rows ? "rows" : "lines";
  if (!list.is_array()) return InvalidArgumentError(std::string("\"") + what + "\" must be an array");
  if (static_cast<int64_t>(list.size()) > max_rows) {
    return ResourceExhaustedError("the request has " + std::to_string(list.size()) + " rows; at most " +
                                  std::to_string(max_rows) + " per request (--max-request-rows)");
  }
  return has_lines ? LinesOf(list) : LinesOfRows(list, parser);
}

// A loaded version with the row parsers of its layout (one per handler thread in use).
struct Loaded {
  std::unique_ptr<Predictor> predictor;
  int64_t version = 0;      // the manifest's
  int64_t dir_number = -1;  // the version directory's name (a versions directory), else -1
  std::mutex parsers_mu;
  std::vector<std::unique_ptr<data::RowParser>> parsers;  // idle ones

  Result<std::unique_ptr<data::RowParser>> TakeParser() {
    {
      std::lock_guard lock(parsers_mu);
      if (!parsers.empty()) {
        auto p = std::move(parsers.back());
        parsers.pop_back();
        return p;
      }
    }
    return predictor->NewParser();
  }
  void GiveParser(std::unique_ptr<data::RowParser> p) {
    std::lock_guard lock(parsers_mu);
    parsers.push_back(std::move(p));
  }
};

struct Pending {
  std::shared_ptr<Loaded> model;
  const data::Batch* batch = nullptr;
  Clock::time_point enqueued;
  std::promise<Status> done;
  std::vector<float>* probs = nullptr;  // filled before done is set
};

struct Metrics {
  prometheus::MetricsRegistry* registry = nullptr;
  prometheus::Histogram* latency = nullptr;
  prometheus::Histogram* batch_rows = nullptr;
  prometheus::Gauge* version = nullptr;
  prometheus::Gauge* ready = nullptr;
  prometheus::Counter* rows = nullptr;
  prometheus::Counter* ids = nullptr;
  prometheus::Counter* unknown = nullptr;
  prometheus::Counter* reload_ok = nullptr;
  prometheus::Counter* reload_failed = nullptr;

  prometheus::Counter* requests_ok = nullptr;  // code 200, looked up once: the hot path
  // Freshness of versions published by an online trainer (manifest "events"): at the swap, the
  // first moment a response reflects the version, now minus the newest event trained into it.
  prometheus::Gauge* freshness = nullptr;
  prometheus::Histogram* freshness_hist = nullptr;
  prometheus::Gauge* event_time = nullptr;

  void Applied(const TrainedEvents& e) {
    if (registry == nullptr || e.newest_ms <= 0) return;
    const double now_ms = static_cast<double>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
    const double seconds = (now_ms - static_cast<double>(e.newest_ms)) / 1000.0;
    freshness->Set(seconds);
    freshness_hist->Observe(seconds);
    event_time->Set(static_cast<double>(e.newest_ms) / 1000.0);
  }

  void Request(int code) {
    if (registry == nullptr) return;
    if (code == 200) {
      requests_ok->Increment();
      return;
    }
    if (auto c = registry->GetCounter("rectrain_serve_requests_total", "Prediction requests by HTTP status.",
                                      {{"code", std::to_string(code)}});
        c.ok()) {
      (*c)->Increment();
    }
  }
};

// Every file under `dir` with its size and modification time: equal strings mean nothing was
// added, removed, grown or rewritten (a few stat calls per poll, no reads).
std::string DirFingerprint(const std::string& dir) {
  std::vector<std::string> entries;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code stat_ec;
    if (!it->is_regular_file(stat_ec)) continue;
    const auto size = it->file_size(stat_ec);
    const auto mtime = it->last_write_time(stat_ec).time_since_epoch().count();
    entries.push_back(it->path().string() + "\t" + std::to_string(size) + "\t" + std::to_string(mtime));
  }
  std::sort(entries.begin(), entries.end());
  std::string out;
  for (const std::string& e : entries) out += e + "\n";
  return out;
}

struct ModelService::Impl {
  ServiceOptions options;
  Metrics metrics;
  bool versions_dir = false;

  mutable std::mutex model_mu;
  std::shared_ptr<Loaded> current;  // guarded by model_mu
  std::mutex reload_mu;             // one load at a time
  // Version directories that failed to load, with their contents' fingerprint then (guarded by
  // reload_mu). One is tried again once its files have changed (a copy that was still arriving,
  // a file put right) and then stayed the same for a poll: not while a copy or a removal runs.
  struct Refusal {
    std::string fingerprint;  // when it was refused
    std::string last_seen;    // at the latest poll
  };
  std::map<std::string, Refusal> refused;

  std::mutex queue_mu;
  std::condition_variable queue_cv;
  std::deque<Pending*> queue;  // guarded by queue_mu
  int arriving = 0;            // requests being parsed, about to join the queue (guarded by queue_mu)
  bool stopping = false;
  std::thread scorer, watcher;
  std::unique_ptr<ModelMirror> mirror;  // model_path on an object store
  std::string remote_path;
  std::mutex watch_mu;
  std::condition_variable watch_cv;

  std::ostream& log() const { return options.log != nullptr ? *options.log : std::cerr; }

  std::shared_ptr<Loaded> Current() const {
    std::lock_guard lock(model_mu);
    return current;
  }

  std::vector<std::pair<int64_t, std::string>> Versions() const { return ListVersions(options.model_path); }

  // Version `dir_number` of the versions directory: deltas applied to the current model when it
  // is their base, else the full export under it and the deltas since. `how` says which.
  Result<std::unique_ptr<Predictor>> LoadVersion(int64_t dir_number, const PredictorOptions& po, std::string* how) {
    std::shared_ptr<Loaded> cur = Current();
    RECTRAIN_ASSIGN_OR_RETURN(const VersionChain chain,
                              ResolveVersion(options.model_path, dir_number, cur ? cur->version : -1,
                                             cur ? cur->predictor->manifest_xxh64() : 0));
    const size_t deltas = static_cast<size_t>(chain.deltas_since_full);
    if (chain.from_current) {
      *how = std::to_string(deltas) + (deltas == 1 ? " delta" : " deltas") + " applied to version " + std::to_string(cur->version);
    } else if (deltas > 0) {
      *how = "the full export " + chain.dirs[0] + " and " + std::to_string(deltas) + (deltas == 1 ? " delta" : " deltas");
    }
    return LoadChain(chain, po, cur ? cur->predictor.get() : nullptr);
  }

  // At start: the newest version that loads (older ones stand in for a refused newest one).
  Status LoadNewestGood() {
    Status last = OkStatus();
    for (const auto& [v, dir] : Versions()) {
      bool reloaded = false;
      last = LoadAndSwap(dir, v, &reloaded);
      if (last.ok()) return last;
      const std::string fingerprint = DirFingerprint(dir);
      refused[dir] = {fingerprint, fingerprint};
    }
    return last;  // OK when there is no version yet: not ready until one appears
  }

  // Runs on the loading thread, before `loaded` is shared: nothing else uses its predictor yet.
  static Status WarmUp(Loaded& loaded) {
    RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<data::RowParser> parser, loaded.predictor->NewParser());
    std::vector<std::string> lines = {"0"};  // libsvm / libffm: a label and no pairs
    if (parser->has_named_columns()) {
      const std::vector<std::optional<std::string_view>> missing(parser->columns().size());
      RECTRAIN_ASSIGN_OR_RETURN(lines[0], parser->LineFromFields(missing));
    }
    data::Batch batch;
    RECTRAIN_RETURN_IF_ERROR(parser->ParseLines(lines, "warm-up row", &batch));
    std::vector<float> probs;
    RECTRAIN_RETURN_IF_ERROR(loaded.predictor->Predict(batch, &probs)) << "while scoring a warm-up row";
    loaded.GiveParser(std::move(parser));
    return OkStatus();
  }

  Status LoadAndSwap(const std::string& dir, int64_t dir_number, bool* reloaded) {
    Stopwatch sw;
    PredictorOptions po{.threads = options.threads, .verify_checksums = options.verify_checksums, .precision = options.precision};
    std::string how = "loaded";
    Result<std::unique_ptr<Predictor>> p = dir_number >= 0 ? LoadVersion(dir_number, po, &how) : LoadModelDir(dir, po);
    if (!p.ok()) {
      if (metrics.reload_failed) metrics.reload_failed->Increment();
      log() << "rectrain serve: refused " << dir << ": " << p.status().ToString() << " (still serving version "
            << (Current() ? std::to_string(Current()->version) : std::string("none")) << ")\n";
      return p.status();
    }
    auto loaded = std::make_shared<Loaded>();
    // In a versions directory the directory's number is the version (a model copied in under a
    // new number is served as that number, so the served version never goes backwards).
    loaded->version = dir_number >= 0 ? dir_number : (*p)->manifest().version;
    loaded->dir_number = dir_number;
    if (loaded->version != (*p)->manifest().version) {
      log() << "rectrain serve: " << dir << "/manifest.json says version " << (*p)->manifest().version
            << "; serving it as version " << loaded->version << ", the directory's number\n";
    }
    loaded->predictor = std::move(p).value();
    // Score one row of missing values before the swap: it checks the version end to end (a
    // model that cannot score is refused like a corrupt file), and the first request after the
    // swap does not pay for first-touch allocations (150+ ms at criteo shape) or build a parser.
    if (Status warm = WarmUp(*loaded); !warm.ok()) {
      if (metrics.reload_failed) metrics.reload_failed->Increment();
      log() << "rectrain serve: refused " << dir << ": " << warm.ToString() << "\n";
      return warm;
    }
    {
      std::lock_guard lock(model_mu);
      current = loaded;
    }
    if (metrics.reload_ok) metrics.reload_ok->Increment();
    if (metrics.version) metrics.version->Set(static_cast<double>(loaded->version));
    metrics.Applied(loaded->predictor->manifest().events);
    if (metrics.ready) metrics.ready->Set(1);
    log() << "rectrain serve: serving version " << loaded->version << " from " << dir << " (" << how << " in "
          << static_cast<int64_t>(sw.Seconds() * 1000) << " ms)\n";
    *reloaded = true;
    return OkStatus();
  }

  Status Check(bool force, bool* reloaded) {
    std::lock_guard lock(reload_mu);
    *reloaded = false;
    if (mirror) {
      // A new version in the store is downloaded first; the check below then loads it.
      if (Result<bool> synced = mirror->Sync(); !synced.ok()) {
        log() << "rectrain serve: cannot fetch from " << remote_path << ": " << synced.status().ToString()
              << " (still serving version " << (Current() ? std::to_string(Current()->version) : std::string("none"))
              << ")\n";
      }
    }
    if (!versions_dir) return force ? LoadAndSwap(options.model_path, -1, reloaded) : OkStatus();
    const auto versions = Versions();
    if (versions.empty()) return OkStatus();
    const auto& [v, dir] = versions.front();
    std::shared_ptr<Loaded> cur = Current();
    // Only a newer directory replaces the current one (a forced check also retries a refused one).
    if (cur && v <= cur->dir_number) return OkStatus();
    const std::string fingerprint = DirFingerprint(dir);
    if (auto it = refused.find(dir); it != refused.end() && !force) {
      Refusal& r = it->second;
      const bool settled = fingerprint == r.last_seen;
      r.last_seen = fingerprint;
      if (fingerprint == r.fingerprint || !settled) return OkStatus();
    }
    Status s = LoadAndSwap(dir, v, reloaded);
    if (!s.ok()) refused[dir] = {fingerprint, fingerprint};
    return s;
  }

  void ScoreLoop() {
    std::vector<Pending*> group;
    data::Batch merged;
    std::vector<float> probs;
    while (true) {
      group.clear();
      {
        std::unique_lock lock(queue_mu);
        queue_cv.wait(lock, [&] { return stopping || !queue.empty(); });
        if (queue.empty()) return;  // stopping
        const auto deadline = queue.front()->enqueued + std::chrono::microseconds(static_cast<int64_t>(options.max_wait_ms * 1000));
        auto rows_ready = [&] {
          int64_t rows = 0;
          for (const Pending* p : queue) {
            if (p->model != queue.front()->model) return true;  // a version switch: score what we have
            rows += p->batch->size;
            if (rows >= options.max_batch_rows) return true;
          }
          return false;
        };
        // Adaptive: wait for company only while requests are on their way in; a lone request
        // (or the last of a burst) is scored at once.
        queue_cv.wait_until(lock, deadline, [&] { return stopping || arriving == 0 || rows_ready(); });
        int64_t rows = 0;
        while (!queue.empty() && queue.front()->model == (group.empty() ? queue.front()->model : group[0]->model) &&
               (group.empty() || rows + queue.front()->batch->size <= options.max_batch_rows)) {
          rows += queue.front()->batch->size;
          group.push_back(queue.front());
          queue.pop_front();
        }
      }
      Loaded& model = *group[0]->model;
      const int64_t ids_before = model.predictor->ids_looked_up(), unknown_before = model.predictor->unknown_ids();
      Status st;
      const int per_row = model.predictor->outputs_per_row();
      if (group.size() == 1) {
        st = model.predictor->Predict(*group[0]->batch, group[0]->probs);
      } else {
        merged = data::Batch{};
        for (const Pending* p : group) AppendRows(*p->batch, &merged);
        st = model.predictor->Predict(merged, &probs);
        size_t at = 0;
        for (Pending* p : group) {
          const size_t n = static_cast<size_t>(p->batch->size * per_row);
          if (st.ok()) p->probs->assign(probs.begin() + static_cast<std::ptrdiff_t>(at), probs.begin() + static_cast<std::ptrdiff_t>(at + n));
          at += n;
        }
      }
      int64_t rows = 0;
      for (const Pending* p : group) rows += p->batch->size;
      if (metrics.batch_rows) {
        metrics.batch_rows->Observe(static_cast<double>(rows));
        metrics.rows->Increment(static_cast<double>(rows));
        metrics.ids->Increment(static_cast<double>(model.predictor->ids_looked_up() - ids_before));
        metrics.unknown->Increment(static_cast<double>(model.predictor->unknown_ids() - unknown_before));
      }
      for (Pending* p : group) p->done.set_value(st);
    }
  }

  void WatchLoop() {
    std::unique_lock lock(watch_mu);
    while (!stopping) {
      watch_cv.wait_for(lock, std::chrono::duration<double>(options.poll_seconds));
      if (stopping) break;
      lock.unlock();
      bool reloaded = false;
      Check(false, &reloaded).IgnoreError();  // logged and counted inside
      lock.lock();
    }
  }
};

ModelService::ModelService(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ModelService::~ModelService() { Stop(); }

Result<std::unique_ptr<ModelService>> ModelService::Start(const ServiceOptions& options,
                                                          prometheus::MetricsRegistry* registry) {
  if (options.max_batch_rows < 1 || options.max_request_rows < 1 || options.max_wait_ms < 0 || options.threads < 1) {
    return InvalidArgumentError("max batch rows, max request rows and threads must be >= 1 and max wait >= 0");
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (io::IsRemotePath(options.model_path)) {
    impl->remote_path = options.model_path;
    impl->mirror = std::make_unique<ModelMirror>(
        options.model_path, options.cache_dir.empty() ? ModelMirror::DefaultCacheDir(options.model_path) : options.cache_dir);
    RECTRAIN_RETURN_IF_ERROR(impl->mirror->Sync().status()) << "while fetching the model from " << options.model_path;
    impl->options.model_path = impl->mirror->local_path();
    impl->log() << "rectrain serve: " << options.model_path << " mirrored in " << impl->options.model_path << "\n";
  }
  std::error_code ec;
  if (!fs::is_directory(impl->options.model_path, ec)) {
    return NotFoundError(impl->options.model_path + " is not a directory (a model written by rectrain export, or a directory of numbered versions)");
  }
  impl->versions_dir = !fs::exists(fs::path(impl->options.model_path) / "manifest.json", ec);
  Metrics& m = impl->metrics;
  if (registry != nullptr) {
    m.registry = registry;
    RECTRAIN_ASSIGN_OR_RETURN(m.latency, registry->GetHistogram("rectrain_serve_request_seconds",
                                                                "Latency of /v1/predict requests (parse, queue, score, reply).",
                                                                prometheus::ExponentialBuckets(0.0001, 2, 16)));
    RECTRAIN_ASSIGN_OR_RETURN(m.batch_rows, registry->GetHistogram("rectrain_serve_batch_rows", "Rows per scored micro-batch.",
                                                                   prometheus::ExponentialBuckets(1, 2, 14)));
    RECTRAIN_ASSIGN_OR_RETURN(m.version, registry->GetGauge("rectrain_serve_model_version", "Version of the model being served (0: none yet)."));
    RECTRAIN_ASSIGN_OR_RETURN(m.ready, registry->GetGauge("rectrain_serve_ready", "1 once a model is loaded."));
    RECTRAIN_ASSIGN_OR_RETURN(m.rows, registry->GetCounter("rectrain_serve_rows_total", "Rows scored."));
    RECTRAIN_ASSIGN_OR_RETURN(m.ids, registry->GetCounter("rectrain_serve_ids_total", "Embedding ids looked up."));
    RECTRAIN_ASSIGN_OR_RETURN(m.unknown, registry->GetCounter("rectrain_serve_unknown_ids_total",
                                                              "Embedding ids without a row (read the OOV row)."));
    RECTRAIN_ASSIGN_OR_RETURN(m.reload_ok, registry->GetCounter("rectrain_serve_reloads_total", "Model loads by result.", {{"result", "ok"}}));
    RECTRAIN_ASSIGN_OR_RETURN(m.reload_failed,
                              registry->GetCounter("rectrain_serve_reloads_total", "Model loads by result.", {{"result", "failed"}}));
    RECTRAIN_ASSIGN_OR_RETURN(m.requests_ok, registry->GetCounter("rectrain_serve_requests_total",
                                                                  "Prediction requests by HTTP status.", {{"code", "200"}}));
    RECTRAIN_ASSIGN_OR_RETURN(m.freshness, registry->GetGauge("rectrain_serve_freshness_seconds",
        "When the served version was applied: that time minus the event time of the newest stream message trained into it."));
    RECTRAIN_ASSIGN_OR_RETURN(m.freshness_hist, registry->GetHistogram("rectrain_serve_apply_freshness_seconds",
        "rectrain_serve_freshness_seconds of every version applied (published by an online trainer).",
        prometheus::ExponentialBuckets(0.25, 2, 14)));
    RECTRAIN_ASSIGN_OR_RETURN(m.event_time, registry->GetGauge("rectrain_serve_model_event_timestamp_seconds",
        "Event time (Unix seconds) of the newest stream message trained into the served version (0: not published by an online trainer)."));
  }
  bool reloaded = false;
  if (!impl->versions_dir) {
    RECTRAIN_RETURN_IF_ERROR(impl->LoadAndSwap(impl->options.model_path, -1, &reloaded));
  } else if (Status s = impl->LoadNewestGood(); !s.ok()) {
    return s;  // not one version loads
  }
  Impl* self = impl.get();
  impl->scorer = std::thread([self] { self->ScoreLoop(); });
  if (impl->versions_dir && options.poll_seconds > 0) impl->watcher = std::thread([self] { self->WatchLoop(); });
  return std::unique_ptr<ModelService>(new ModelService(std::move(impl)));
}

void ModelService::Stop() {
  {
    std::lock_guard lock(impl_->queue_mu);
    if (impl_->stopping && !impl_->scorer.joinable()) return;
    impl_->stopping = true;
  }
  impl_->queue_cv.notify_all();
  {
    std::lock_guard lock(impl_->watch_mu);
  }
  impl_->watch_cv.notify_all();
  if (impl_->scorer.joinable()) impl_->scorer.join();
  if (impl_->watcher.joinable()) impl_->watcher.join();
}

int64_t ModelService::version() const {
  auto cur = impl_->Current();
  return cur ? cur->version : 0;
}

http::RouteReply ModelService::HandlePredict(std::string_view body) {
  Stopwatch sw;
  Impl& s = *impl_;
  auto finish = [&](http::RouteReply r) {
    s.metrics.Request(r.status);
    if (s.metrics.latency) s.metrics.latency->Observe(sw.Seconds());
    return r;
  };
  std::shared_ptr<Loaded> model = s.Current();
  if (!model) {
    // From a store: the prefix the user named, not the local cache it is mirrored in.
    const std::string why = s.remote_path.empty() ? "no complete version in " + s.options.model_path
                                                   : "no version in " + s.remote_path + " has its manifest.json";
    return finish(ErrorReply(UnavailableError("no model loaded yet (" + why + ")")));
  }
  {
    std::lock_guard lock(s.queue_mu);
    ++s.arriving;
  }
  auto arrived = [&s] {  // once queued, or refused
    {
      std::lock_guard lock(s.queue_mu);
      --s.arriving;
    }
    s.queue_cv.notify_one();
  };
  Result<std::unique_ptr<data::RowParser>> parser = model->TakeParser();
  Status st = parser.status();
  data::Batch batch;
  if (st.ok()) {
    Result<std::vector<std::string>> lines = ParsePredictRequest(body, **parser, s.options.max_request_rows);
    st = lines.status();
    if (st.ok()) st = (*parser)->ParseLines(*lines, "request row", &batch);
    model->GiveParser(std::move(parser).value());
  }
  if (!st.ok()) {
    arrived();
    http::RouteReply r = ErrorReply(st);
    if (st.code() == StatusCode::kResourceExhausted) r.status = 413;  // too many rows: not a rate limit
    return finish(r);
  }
  std::vector<float> probs;
  Pending pending{.model = model, .batch = &batch, .enqueued = Clock::now(), .done = {}, .probs = &probs};
  std::future<Status> done = pending.done.get_future();
  {
    std::lock_guard lock(s.queue_mu);
    --s.arriving;
    if (s.stopping) return finish(ErrorReply(UnavailableError("the server is shutting down")));
    s.queue.push_back(&pending);
  }
  s.queue_cv.notify_one();
  st = done.get();
  if (!st.ok()) return finish(ErrorReply(st));
  const int per_row = model->predictor->outputs_per_row();
  std::string out = "{\"model_version\":" + std::to_string(model->version) + ",\"predictions\":[";
  auto put = [&](float p) { AppendProbability(p, &out); };
  for (int64_t r = 0; r < batch.size; ++r) {
    if (r) out += ',';
    if (per_row == 1) {
      put(probs[static_cast<size_t>(r)]);
      continue;
    }
    out += '[';
    for (int k = 0; k < per_row; ++k) {
      if (k) out += ',';
      put(probs[static_cast<size_t>(r * per_row + k)]);
    }
    out += ']';
  }
  out += "]";
  if (per_row > 1) {
    const auto& tasks = model->predictor->manifest().task_names;
    json names = json::array();
    for (int k = 0; k < per_row; ++k) names.push_back(static_cast<int>(tasks.size()) == per_row ? tasks[static_cast<size_t>(k)] : "class " + std::to_string(k));
    out += ",\"outputs\":" + names.dump();
  }
  out += "}\n";
  return finish({200, std::move(out), "application/json"});
}

http::RouteReply ModelService::HandleReload() {
  bool reloaded = false;
  Status s = impl_->Check(true, &reloaded);
  if (!s.ok()) return ErrorReply(FailedPreconditionError(s.ToString() + " (still serving version " + std::to_string(version()) + ")"));
  return JsonReply(200, {{"model_version", version()}, {"reloaded", reloaded}});
}

http::RouteReply ModelService::HandleModel() const {
  auto cur = impl_->Current();
  if (!cur) return ErrorReply(UnavailableError("no model loaded yet"));
  const Manifest& m = cur->predictor->manifest();
  json tables = json::array();
  for (const auto& t : m.tables) tables.push_back({{"name", t.name}, {"dim", t.dim}, {"rows", t.rows}, {"row_type", RowTypeName(t.type)}});
  auto parser = cur->TakeParser();
  if (!parser.ok()) return ErrorReply(parser.status());
  const std::vector<std::string> columns = (*parser)->columns();
  cur->GiveParser(std::move(parser).value());
  return JsonReply(200, {{"model_version", cur->version}, {"model_type", m.model_type}, {"created", m.created},
                         {"trained_steps", m.trained_steps}, {"dir", cur->predictor->dir()},
                         {"columns", columns},
                         {"outputs", m.task_names}, {"tables", tables}, {"mapped_bytes", cur->predictor->mapped_bytes()}});
}

http::RouteReply ModelService::HandleReady() const {
  auto cur = impl_->Current();
  if (!cur) return JsonReply(503, {{"ready", false}});
  return JsonReply(200, {{"ready", true}, {"model_version", cur->version}});
}

std::vector<http::Route> ModelService::Routes() {
  return {
      {"POST", "/v1/predict", [this](const http::RouteRequest& r) { return HandlePredict(r.body); }, false},
      {"POST", "/v1/reload", [this](const http::RouteRequest&) { return HandleReload(); }, false},
      {"GET", "/v1/model", [this](const http::RouteRequest&) { return HandleModel(); }, false},
      {"GET", "/readyz", [this](const http::RouteRequest&) { return HandleReady(); }, true},
  };
}

}  // namespace rectrain::serve

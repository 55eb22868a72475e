#include "rectrain/train/run_recorder.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "rectrain/base/random.h"
#include "rectrain/io/file.h"

extern char** environ;

namespace rectrain::train {
namespace fs = std::filesystem;
namespace {

constexpr int64_t kFingerprintBlock = 64 * 1024;

std::string Absolute(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  return ec ? path : p.lexically_normal().string();
}

double CpuSeconds() {
  struct rusage u {};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int64_t CurrentRssBytes() {
  std::ifstream in("/proc/self/statm");
  int64_t size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

Result<track::DataFile> FingerprintFile(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return ErrnoToStatus(errno, "cannot stat " + path);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "cannot open " + path);
  const int64_t size = static_cast<int64_t>(st.st_size);
  std::string buf;
  auto read_at = [&](int64_t offset, int64_t n) -> bool {
    buf.resize(static_cast<size_t>(n));
    int64_t done = 0;
    while (done < n) {
      const ssize_t r = pread(fd, buf.data() + done, static_cast<size_t>(n - done), offset + done);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      done += r;
    }
    buf.resize(static_cast<size_t>(done));
    return true;
  };
  const int64_t mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  uint64_t h = Mix64(static_cast<uint64_t>(size)) ^ Mix64(static_cast<uint64_t>(mtime_ns) + 1);
  read_at(0, std::min(size, kFingerprintBlock));
  h = HashBytes(buf, h);
  if (size > kFingerprintBlock) {
    const int64_t tail = std::min(kFingerprintBlock, size - kFingerprintBlock);
    read_at(size - tail, tail);
    h = HashBytes(buf, h);
  }
  close(fd);
  char hex[24];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return track::DataFile{path, size, std::string("v1:") + hex};
}

std::string GitCommitOf(const std::string& dir) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return "";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  std::string d = dir.empty() ? "." : dir;
  const char* argv[] = {"git", "-C", d.c_str(), "rev-parse", "--verify", "-q", "HEAD", nullptr};
  pid_t pid = 0;
  // A caller may block signals in every thread (cli/stop_signals.h); git starts with none blocked.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  const int rc = posix_spawnp(&pid, "git", &fa, &attr, const_cast<char* const*>(argv), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  std::string text;
  if (rc == 0) {
    char buf[256];
    while (true) {
      const ssize_t n = read(out[0], buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      if (text.size() < 4096) text.append(buf, static_cast<size_t>(n));
    }
  }
  close(out[0]);
  if (rc != 0) return "";
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) return "";
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.size() < 40 || text.find_first_not_of("0123456789abcdef") != std::string::npos) return "";
  return text;
}

std::vector<track::MetricValue> FinalMetrics(const TrainSummary& s) {
  std::vector<track::MetricValue> out;
  auto add = [&](const std::string& key, double v) {
    if (std::isfinite(v)) out.emplace_back(key, v);
  };
  add("train/samples_per_s", s.samples_per_sec);
  add("train/steps", static_cast<double>(s.steps));
  add("train/epochs", static_cast<double>(s.epochs));
  add("train/rows_read", static_cast<double>(s.rows_read));
  add("train/rows_rejected", static_cast<double>(s.rows_rejected));
  add("train/seconds", s.seconds);
  add("system/peak_rss_bytes", static_cast<double>(s.peak_rss_bytes));
  if (s.has_valid) {
    add("val/auc", s.valid.auc);
    add("val/logloss", s.valid.logloss);
    add("val/calibration", s.valid.calibration);
    add("val/ne", s.valid.ne);
    add("val/gauc", s.valid.gauc);
    add("val/accuracy", s.valid.accuracy);
    add("val/top5_accuracy", s.valid.top5_accuracy);
    for (const EvalMetrics::Task& t : s.valid.tasks) {
      add("val/" + t.name + "/auc", t.auc);
      add("val/" + t.name + "/logloss", t.logloss);
    }
  }
  if (s.has_oracle) {
    add("oracle/auc", s.oracle.auc);
    add("oracle/logloss", s.oracle.logloss);
  }
  if (s.online.enabled) {
    add("online/auc", s.online.auc);
    add("online/logloss", s.online.logloss);
    add("stream/messages", static_cast<double>(s.online.messages));
    add("stream/bad_messages", static_cast<double>(s.online.bad_messages));
  }
  return out;
}

RunRecorder::RunRecorder(Options options) : options_(std::move(options)) {}

Result<std::unique_ptr<RunRecorder>> RunRecorder::Start(Options options, const track::RunInfo& info,
                                                        const std::vector<std::string>& data_patterns) {
  std::unique_ptr<RunRecorder> r(new RunRecorder(std::move(options)));
  track::TrackingStore* store = r->options_.store;
  if (store != nullptr && r->options_.reopen) {
    RECTRAIN_RETURN_IF_ERROR(store->ReopenRun(*r->options_.reopen));
    r->run_ = r->options_.reopen;
    r->run_label_ = std::to_string(*r->run_);
  } else if (store != nullptr) {
    RECTRAIN_ASSIGN_OR_RETURN(track::RunId id, store->StartRun(info));
    r->run_ = id;
    r->run_label_ = std::to_string(id);
    if (!data_patterns.empty()) {
      auto files = io::ExpandPaths(data_patterns);
      if (files.ok()) {
        for (const auto& f : *files) {
          auto df = FingerprintFile(f);
          if (!df.ok()) continue;  // the reader reports unreadable files
          df->path = Absolute(f);
          r->Write(store->AddDataFile(id, *df), "data file");
        }
      }
    }
    if (!r->options_.run_dir.empty()) {
      r->Write(store->AddArtifact(id, "log", Absolute(r->options_.run_dir + "/train.log")), "artifact");
    }
  } else {
    r->run_label_ = fs::path(r->options_.run_dir).lexically_normal().filename().string();
    if (r->run_label_.empty()) r->run_label_ = info.name;
  }
  if (r->options_.registry != nullptr) {
    RECTRAIN_RETURN_IF_ERROR(r->RegisterSeries(info));
  }
  if (store != nullptr && r->options_.heartbeat_s > 0) {
    RunRecorder* self = r.get();
    r->heartbeat_ = std::thread([self] {
      std::unique_lock<std::mutex> lock(self->hb_mu_);
      const auto period = std::chrono::duration<double>(self->options_.heartbeat_s);
      while (!self->hb_cv_.wait_for(lock, period, [self] { return self->hb_stop_; })) {
        lock.unlock();
        (void)self->options_.store->Heartbeat(*self->run_);  // failures: the next write reports
        lock.lock();
      }
    });
  }
  return r;
}

RunRecorder::~RunRecorder() {
  if (!ended_) End(track::RunStatus::kFailed, "the trainer ended without a result");
  StopHeartbeat();
}

Status RunRecorder::RegisterSeries(const track::RunInfo& info) {
  prometheus::MetricsRegistry& reg = *options_.registry;
  const prometheus::Labels run{{"run", run_label_}};
  Series& s = series_;
  RECTRAIN_ASSIGN_OR_RETURN(s.samples, reg.GetCounter("rectrain_train_samples_total",
                                                      "Training samples processed (all sessions).", run));
  RECTRAIN_ASSIGN_OR_RETURN(s.steps, reg.GetCounter("rectrain_train_steps_total",
                                                    "Training steps completed (all sessions).", run));
  RECTRAIN_ASSIGN_OR_RETURN(s.step, reg.GetGauge("rectrain_train_step", "The current global step.", run));
  RECTRAIN_ASSIGN_OR_RETURN(s.epoch, reg.GetGauge("rectrain_train_epoch", "Epochs completed.", run));
  RECTRAIN_ASSIGN_OR_RETURN(s.loss, reg.GetGauge("rectrain_train_loss",
                                                 "Mean training loss since the previous refresh.", run));
  RECTRAIN_ASSIGN_OR_RETURN(s.train_auc, reg.GetGauge("rectrain_train_auc",
                                                      "AUC of the last ~131k training predictions.", run));
  RECTRAIN_ASSIGN_OR_RETURN(s.samples_per_second,
                            reg.GetGauge("rectrain_train_samples_per_second",
                                         "Training throughput since the previous refresh.", run));
  RECTRAIN_ASSIGN_OR_RETURN(s.learning_rate, reg.GetGauge("rectrain_train_learning_rate",
                                                          "Scheduled dense learning rate.", run));
  RECTRAIN_ASSIGN_OR_RETURN(s.eval_auc, reg.GetGauge("rectrain_eval_auc",
                                                     "Validation AUC of the latest evaluation.", run));
  RECTRAIN_ASSIGN_OR_RETURN(s.eval_logloss, reg.GetGauge("rectrain_eval_logloss",
                                                         "Validation logloss of the latest evaluation.", run));
  s.eval_auc->Set(kNaN);
  s.eval_logloss->Set(kNaN);
  s.loss->Set(kNaN);
  s.train_auc->Set(kNaN);
  RECTRAIN_ASSIGN_OR_RETURN(s.rows_read, reg.GetCounter("rectrain_data_rows_read_total",
                                                        "Training rows read (all sessions).", run));
  RECTRAIN_ASSIGN_OR_RETURN(s.rows_rejected, reg.GetCounter("rectrain_data_rows_rejected_total",
                                                            "Training rows rejected as malformed.", run));
  RECTRAIN_ASSIGN_OR_RETURN(s.data_wait, reg.GetCounter("rectrain_data_wait_seconds_total",
                                                        "Time the training loop waited for batches.", run));
  RECTRAIN_ASSIGN_OR_RETURN(s.queue_depth,
                            reg.GetGauge("rectrain_data_queue_depth",
                                         "Batches ready in the reader's prefetch queue.", run));
  prometheus::Labels info_labels = run;
  info_labels.emplace_back("name", info.name);
  info_labels.emplace_back("run_dir", Absolute(options_.run_dir));
  RECTRAIN_ASSIGN_OR_RETURN(prometheus::Gauge * run_info,
                            reg.GetGauge("rectrain_run_info", "The run this process trains (value 1).",
                                         info_labels));
  run_info->Set(1);
  return prometheus::RegisterProcessMetrics(reg);
}

void RunRecorder::Write(const Status& s, const char* what) {
  if (s.ok()) return;
  if (write_failures_++ == 0) {
    const std::string msg = std::string("warning: tracking store: cannot record ") + what + ": " +
                            s.ToString() + " (training continues; later failures are only counted)";
    if (options_.warn) {
      options_.warn(msg);
    } else {
      std::fprintf(stderr, "%s\n", msg.c_str());
    }
  }
}

void RunRecorder::OnStart(int64_t step) {
  if (series_.step != nullptr) series_.step->Set(static_cast<double>(step));
  last_cpu_seconds_ = CpuSeconds();
  last_cpu_wall_ = WallSeconds();
}

double RunRecorder::ProgressIntervalSeconds() const {
  return options_.registry != nullptr ? options_.progress_interval_s : 0.0;
}

void RunRecorder::OnProgress(const ProgressInfo& p) {
  if (std::isfinite(p.loss)) last_loss_ = p.loss;
  if (options_.registry != nullptr) {
    Series& s = series_;
    s.loss->Set(p.loss);  // before the counters: a scrape never sees samples without a loss
    s.train_auc->Set(p.train_auc);
    s.samples->SetTotal(static_cast<double>(p.rows_read));
    s.steps->SetTotal(static_cast<double>(p.step));
    s.step->Set(static_cast<double>(p.step));
    s.epoch->Set(static_cast<double>(p.epoch));
    s.samples_per_second->Set(p.samples_per_sec);
    s.learning_rate->Set(p.learning_rate);
    s.rows_read->SetTotal(static_cast<double>(p.rows_read));
    s.rows_rejected->SetTotal(static_cast<double>(p.rows_rejected));
    s.data_wait->SetTotal(p.data_wait_seconds);
    s.queue_depth->Set(static_cast<double>(p.queue_depth));
    ExportTables(p.tables);
    ExportRanks(p.ranks);
    if (p.online.enabled) ExportOnline(p.online);
    if (p.publish.enabled) ExportPublish(p.publish);
  }
  if (options_.store == nullptr || !p.log_line) return;
  if (p.online.enabled) {
    const OnlineFigures& f = p.online;
    std::vector<track::MetricValue> online = {{"online/auc", f.auc},
                                              {"online/logloss", f.logloss},
                                              {"stream/lag_seconds", f.event_lag_seconds},
                                              {"stream/bad_messages", static_cast<double>(f.bad_messages)}};
    if (f.lag_messages >= 0) online.push_back({"stream/lag_messages", static_cast<double>(f.lag_messages)});
    Write(options_.store->LogMetrics(*run_, p.step, online), "online metrics");
  }
  LogRankMetrics(p);
  const double cpu = CpuSeconds(), wall = WallSeconds();
  const double cpu_percent =
      wall > last_cpu_wall_ ? 100.0 * (cpu - last_cpu_seconds_) / (wall - last_cpu_wall_) : 0.0;
  last_cpu_seconds_ = cpu;
  last_cpu_wall_ = wall;
  const track::MetricValue m[] = {
      {"train/loss", p.loss},
      {"train/auc", p.train_auc},
      {"train/samples_per_s", p.samples_per_sec},
      {"train/lr", p.learning_rate},
      {"train/epoch", static_cast<double>(p.epoch)},
      {"train/rows_read", static_cast<double>(p.rows_read)},
      {"train/rows_rejected", static_cast<double>(p.rows_rejected)},
      {"train/data_wait_s", p.data_wait_seconds},
      {"system/rss_bytes", static_cast<double>(CurrentRssBytes())},
      {"system/cpu_percent", cpu_percent},
  };
  Write(options_.store->LogMetrics(*run_, p.step, m), "metrics");
}

void RunRecorder::ExportTables(const std::vector<TableSummary>& tables) {
  for (const TableSummary& t : tables) {
    auto it = tables_.find(t.name);
    if (it == tables_.end()) {
      const prometheus::Labels l{{"run", run_label_}, {"table", t.name}};
      TableSeries ts;
      auto g = [&](const char* name, const char* help) { return GaugeOrNull(name, help, l); };
      auto c = [&](const char* name, const char* help) { return CounterOrNull(name, help, l); };
      ts.rows = g("rectrain_embedding_rows", "Rows resident in the embedding table.");
      ts.bytes = g("rectrain_embedding_bytes", "Memory accounted to the embedding table.");
      ts.admissions = c("rectrain_embedding_admissions_total", "Ids that got their own row.");
      ts.evictions = c("rectrain_embedding_evictions_total", "Rows evicted for the memory budget.");
      ts.expirations = c("rectrain_embedding_expirations_total",
                         "Rows removed because they were not pulled for embedding.ttl_steps steps.");
      ts.lookups = c("rectrain_embedding_lookups_total", "Ids looked up (training and evaluation).");
      ts.oov_lookups = c("rectrain_embedding_oov_lookups_total", "Lookups that read the OOV row.");
      ts.oov_ratio = g("rectrain_embedding_oov_ratio", "oov_lookups / lookups since the start.");
      // The budget the table's bytes count against (0 = unlimited), labelled with what happens
      // there (deploy/prometheus/alerts.yml: RectrainEmbeddingMemoryNearBudget).
      prometheus::Labels bl = l;
      bl.emplace_back("on_budget", t.on_budget);
      ts.budget = GaugeOrNull("rectrain_embedding_budget_bytes",
                              "Memory budget of the embedding table (embedding.memory_budget over the ranks "
                              "holding it; 0 = unlimited).",
                              bl);
      it = tables_.emplace(t.name, ts).first;
    }
    TableSeries& ts = it->second;
    if (ts.rows) ts.rows->Set(static_cast<double>(t.rows));
    if (ts.bytes) ts.bytes->Set(static_cast<double>(t.bytes));
    if (ts.budget) ts.budget->Set(static_cast<double>(t.budget_bytes));
    if (ts.admissions) ts.admissions->SetTotal(static_cast<double>(t.admissions));
    if (ts.evictions) ts.evictions->SetTotal(static_cast<double>(t.evictions));
    if (ts.expirations) ts.expirations->SetTotal(static_cast<double>(t.expirations));
    if (ts.lookups) ts.lookups->SetTotal(static_cast<double>(t.lookups));
    if (ts.oov_lookups) ts.oov_lookups->SetTotal(static_cast<double>(t.oov_lookups));
    if (ts.oov_ratio) {
      ts.oov_ratio->Set(t.lookups > 0 ? static_cast<double>(t.oov_lookups) / static_cast<double>(t.lookups)
                                      : 0.0);
    }
  }
}

// A job: every rank's figures, as rank<r>/... metrics of the run.
void RunRecorder::LogRankMetrics(const ProgressInfo& p) {
  std::vector<track::MetricValue> per_rank;
  std::vector<std::string> names;
  names.reserve(p.ranks.size() * 6);
  for (const RankFigures& f : p.ranks) {
    const std::string prefix = "rank" + std::to_string(f.rank) + "/";
    const std::pair<const char*, double> values[] = {
        {"rows", static_cast<double>(f.rows)},
        {"ids_owned", static_cast<double>(f.ids_owned)},
        {"bytes_sent", static_cast<double>(f.bytes_sent)},
        {"exchange_s", f.breakdown.exchange},
        {"allreduce_s", f.breakdown.allreduce},
        {"compute_s", f.breakdown.forward + f.breakdown.backward}};
    for (const auto& [name, v] : values) names.push_back(prefix + name);
    for (size_t i = 0; i < std::size(values); ++i) per_rank.push_back({names[names.size() - std::size(values) + i], values[i].second});
  }
  if (!per_rank.empty()) Write(options_.store->LogMetrics(*run_, p.step, per_rank), "per-rank metrics");
}

prometheus::Gauge* RunRecorder::GaugeOrNull(const char* name, const char* help, const prometheus::Labels& labels) {
  auto r = options_.registry->GetGauge(name, help, labels);
  return r.ok() ? *r : nullptr;
}

prometheus::Counter* RunRecorder::CounterOrNull(const char* name, const char* help, const prometheus::Labels& labels) {
  auto r = options_.registry->GetCounter(name, help, labels);
  return r.ok() ? *r : nullptr;
}

void RunRecorder::ExportOnline(const OnlineFigures& f) {
  const prometheus::Labels l{{"run", run_label_}};
  auto g = [&](const char* name, const char* help) { return GaugeOrNull(name, help, l); };
  auto c = [&](const char* name, const char* help) { return CounterOrNull(name, help, l); };
  OnlineSeries& o = online_;
  if (o.auc == nullptr) {
    o.auc = g("rectrain_online_auc", "Progressive-validation AUC: the last train.online_window rows, each scored before training on it.");
    o.logloss = g("rectrain_online_logloss", "Progressive-validation logloss over the same window.");
    o.lag_messages = g("rectrain_stream_lag_messages", "Messages in the stream not yet trained on (rank 0's partitions; NaN = unknown).");
    o.lag_seconds = g("rectrain_stream_lag_seconds", "Now minus the event time of the newest message trained on.");
    o.connected = g("rectrain_stream_connected", "1 while the stream's broker is reachable, 0 while the reader retries.");
    o.messages = c("rectrain_stream_messages_total", "Messages consumed into trained batches (good, bad and filtered).");
    o.bad = c("rectrain_stream_bad_messages_total", "Bad messages skipped (malformed, unknown column, no label).");
    o.dead_lettered = c("rectrain_stream_dead_lettered_total", "Bad messages sent to data.stream.dead_letter.");
    o.dead_letter_failures = c("rectrain_stream_dead_letter_failures_total", "Bad messages the dead-letter stream did not take.");
    o.errors = c("rectrain_stream_errors_total", "Transient broker failures retried (dropped connections, broker down).");
    o.commits = c("rectrain_stream_commits_total", "Stream positions committed to the broker after their checkpoint landed.");
    o.commit_failures = c("rectrain_stream_commit_failures_total", "Commits the broker did not take (retried by the next checkpoint).");
  }
  auto set = [](prometheus::Gauge* x, double v) {
    if (x) x->Set(v);
  };
  auto total = [](prometheus::Counter* x, int64_t v) {
    if (x) x->SetTotal(static_cast<double>(v));
  };
  set(o.auc, f.auc);
  set(o.logloss, f.logloss);
  set(o.lag_messages, f.lag_messages >= 0 ? static_cast<double>(f.lag_messages) : kNaN);
  set(o.lag_seconds, f.event_lag_seconds);
  set(o.connected, f.connected ? 1.0 : 0.0);
  total(o.messages, f.messages);
  total(o.bad, f.bad_messages);
  total(o.dead_lettered, f.dead_lettered);
  total(o.dead_letter_failures, f.dead_letter_failures);
  total(o.errors, f.source_errors);
  total(o.commits, f.commits);
  total(o.commit_failures, f.commit_failures);
}

void RunRecorder::ExportPublish(const PublishFigures& f) {
  const prometheus::Labels l{{"run", run_label_}};
  PublishSeries& o = publish_;
  if (o.publishes == nullptr) {
    o.publishes = CounterOrNull("rectrain_publishes_total", "Model versions published to serving (train.publish).", l);
    o.failures = CounterOrNull("rectrain_publish_failures_total", "Publishes that failed (each retried at the next interval).", l);
    o.skipped = CounterOrNull("rectrain_publish_skipped_total",
                              "Publishes due while the last one was still being written (skipped; the next holds both "
                              "intervals' changes).",
                              l);
    o.duration = GaugeOrNull("rectrain_publish_duration_seconds", "How long the last successful publish took.", l);
    o.version = GaugeOrNull("rectrain_published_version", "The last version published (0: none yet).", l);
    o.last_time = GaugeOrNull("rectrain_last_publish_timestamp_seconds", "When the last successful publish completed (Unix seconds; 0: none yet).", l);
    o.event_time = GaugeOrNull("rectrain_published_event_timestamp_seconds",
                               "Event time (Unix seconds) of the newest stream message trained into the last published version.", l);
    o.interval = GaugeOrNull("rectrain_publish_interval_seconds", "train.publish.every_s: the seconds between publishes.", l);
  }
  if (o.interval) o.interval->Set(f.every_s);
  if (o.publishes) o.publishes->SetTotal(static_cast<double>(f.publishes));
  if (o.failures) o.failures->SetTotal(static_cast<double>(f.failures));
  if (o.skipped) o.skipped->SetTotal(static_cast<double>(f.skipped));
  if (o.duration) o.duration->Set(f.last_seconds);
  if (o.version) o.version->Set(static_cast<double>(f.version));
  if (o.last_time) o.last_time->Set(f.last_unix_seconds);
  if (o.event_time) o.event_time->Set(static_cast<double>(f.newest_event_ms) / 1000.0);
}

void RunRecorder::ExportRanks(const std::vector<RankFigures>& ranks) {
  for (const RankFigures& f : ranks) {
    auto it = ranks_.find(f.rank);
    if (it == ranks_.end()) {
      const prometheus::Labels l{{"run", run_label_}, {"rank", std::to_string(f.rank)}};
      RankSeries rs;
      rs.rows = CounterOrNull("rectrain_rank_rows_total", "Training rows a rank trained on (this session).", l);
      rs.ids_owned = GaugeOrNull("rectrain_rank_embedding_rows", "Embedding rows resident on a rank (all tables).", l);
      rs.bytes_sent = CounterOrNull("rectrain_rank_bytes_sent_total", "Bytes a rank sent to the other ranks.", l);
      rs.bytes_received = CounterOrNull("rectrain_rank_bytes_received_total", "Bytes a rank received from the others.", l);
      for (const char* phase : {"data_wait", "lookup", "exchange", "forward", "backward", "allreduce", "sparse_update",
                                "dense_update"}) {
        prometheus::Labels pl = l;
        pl.emplace_back("phase", phase);
        rs.phases[phase] = CounterOrNull("rectrain_rank_step_seconds_total", "Seconds a rank spent in each phase of its steps.", pl);
      }
      it = ranks_.emplace(f.rank, rs).first;
    }
    RankSeries& rs = it->second;
    if (rs.rows) rs.rows->SetTotal(static_cast<double>(f.rows));
    if (rs.ids_owned) rs.ids_owned->Set(static_cast<double>(f.ids_owned));
    if (rs.bytes_sent) rs.bytes_sent->SetTotal(static_cast<double>(f.bytes_sent));
    if (rs.bytes_received) rs.bytes_received->SetTotal(static_cast<double>(f.bytes_received));
    const PhaseSeconds& b = f.breakdown;
    const std::pair<const char*, double> phases[] = {
        {"data_wait", b.data_wait}, {"lookup", b.lookup},       {"exchange", b.exchange},
        {"forward", b.forward},     {"backward", b.backward},   {"allreduce", b.allreduce},
        {"sparse_update", b.sparse_update}, {"dense_update", b.dense_update}};
    for (const auto& [phase, v] : phases) {
      if (prometheus::Counter* ctr = rs.phases[phase]) ctr->SetTotal(v);
    }
  }
}

void RunRecorder::OnEval(int64_t step, const EvalMetrics& e) {
  if (options_.registry != nullptr) {
    series_.eval_auc->Set(e.auc);
    series_.eval_logloss->Set(e.logloss);
  }
  if (options_.store == nullptr) return;
  std::vector<track::MetricValue> m = {{"val/auc", e.auc},
                                       {"val/logloss", e.logloss},
                                       {"val/calibration", e.calibration},
                                       {"val/ne", e.ne}};
  if (!std::isnan(e.gauc)) m.emplace_back("val/gauc", e.gauc);
  if (!std::isnan(e.accuracy)) {
    m.emplace_back("val/accuracy", e.accuracy);
    m.emplace_back("val/top5_accuracy", e.top5_accuracy);
  }
  for (const EvalMetrics::Task& t : e.tasks) {
    m.emplace_back("val/" + t.name + "/auc", t.auc);
    m.emplace_back("val/" + t.name + "/logloss", t.logloss);
  }
  Write(options_.store->LogMetrics(*run_, step, m), "metrics");
}

void RunRecorder::RecordDataCheck(const DataGateResult& gate) {
  if (options_.store == nullptr) return;
  Write(options_.store->AddArtifact(*run_, "data_profile", Absolute(gate.profile_path)), "artifact");
  std::vector<track::MetricValue> m = {
      {"data/train_rows", static_cast<double>(gate.train.rows)},
      {"data/train_label_rate", gate.train.LabelRate()},
      {"data/violations", static_cast<double>(gate.violations.size())}};
  if (gate.has_valid) {
    m.emplace_back("data/valid_rows", static_cast<double>(gate.valid.rows));
    m.emplace_back("data/valid_label_rate", gate.valid.LabelRate());
  }
  Write(options_.store->LogMetrics(*run_, 0, m), "metrics");
}

void RunRecorder::OnFinalPublish(const PublishFigures& publish) {
  if (options_.registry != nullptr && publish.enabled) ExportPublish(publish);
}

void RunRecorder::OnCheckpoint(int64_t step, const std::string& dir) {
  (void)step;
  if (options_.store == nullptr) return;
  Write(options_.store->AddArtifact(*run_, "checkpoint", Absolute(dir)), "artifact");
}

void RunRecorder::Finish(const TrainSummary& summary) {
  if (ended_) return;
  if (options_.store != nullptr) {
    std::vector<track::MetricValue> finals = FinalMetrics(summary);
    if (std::isfinite(last_loss_)) finals.emplace_back("train/loss", last_loss_);
    Write(options_.store->SetFinal(*run_, finals), "final metrics");
    if (!summary.model_dir.empty()) {
      Write(options_.store->AddArtifact(*run_, "model", Absolute(summary.model_dir)), "artifact");
    }
    if (!options_.run_dir.empty()) {
      Write(options_.store->AddArtifact(*run_, "summary", Absolute(options_.run_dir + "/summary.json")),
            "artifact");
    }
  }
  const RunOutcome st = summary.status;
  if (st == RunOutcome::kInterrupted) {
    const int sig = summary.interrupted_by;
    const char* name = sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "a signal";
    End(track::RunStatus::kStopped,
        std::string("interrupted by ") + name + " at step " + std::to_string(summary.steps));
  } else if (st == RunOutcome::kFailed) {
    End(track::RunStatus::kFailed, summary.error);
  } else if (st == RunOutcome::kEarlyStopped) {
    End(track::RunStatus::kFinished, "early stopped at step " + std::to_string(summary.steps));
  } else {
    End(track::RunStatus::kFinished, "");
  }
}

void RunRecorder::Fail(const Status& error) {
  if (ended_) return;
  End(track::RunStatus::kFailed, error.ToString());
}

void RunRecorder::End(track::RunStatus status, const std::string& message) {
  ended_ = true;
  StopHeartbeat();
  if (options_.store == nullptr) return;
  Write(options_.store->FinishRun(*run_, status, message), "the final status");
}

void RunRecorder::StopHeartbeat() {
  {
    std::lock_guard<std::mutex> lock(hb_mu_);
    hb_stop_ = true;
  }
  hb_cv_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
}

}  // namespace rectrain::train

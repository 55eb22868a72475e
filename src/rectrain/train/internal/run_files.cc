#include "rectrain/train/internal/run_files.h"

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "rectrain/io/file.h"
#include "rectrain/train/internal/run_log.h"

namespace rectrain::train {
namespace fs = std::filesystem;

const char* RunOutcomeName(RunOutcome outcome) {
  switch (outcome) {
    case RunOutcome::kCompleted: return "completed";
    case RunOutcome::kEarlyStopped: return "early_stopped";
    case RunOutcome::kInterrupted: return "interrupted";
    case RunOutcome::kFailed: return "failed";
  }
  return "?";
}

namespace {

nlohmann::json Num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

// A multi-task model's per-task metrics: {"income": {"auc": ..., "logloss": ..., "positives": ...}, ...}.
nlohmann::json TasksJson(const EvalMetrics& m) {
  nlohmann::json t = nlohmann::json::object();
  for (const EvalMetrics::Task& task : m.tasks) {
    t[task.name] = {{"auc", Num(task.auc)}, {"logloss", Num(task.logloss)}, {"positives", task.positives}};
  }
  return t;
}

// summary.json's "valid": the last evaluation's metrics (docs/formats/summary.md).
nlohmann::json ValidJson(const EvalMetrics& m) {
  nlohmann::json v = {{"auc", Num(m.auc)},
                      {"logloss", Num(m.logloss)},
                      {"calibration", Num(m.calibration)},
                      {"ne", Num(m.ne)},
                      {"rows", m.rows},
                      {"positives", m.positives}};
  if (!std::isnan(m.gauc)) {
    v["gauc"] = m.gauc;
    v["gauc_groups"] = m.gauc_groups;
  }
  if (!std::isnan(m.accuracy)) {
    v["accuracy"] = m.accuracy;
    v["top5_accuracy"] = Num(m.top5_accuracy);
  }
  if (!m.tasks.empty()) v["tasks"] = TasksJson(m);
  return v;
}

// An online run's last figures (docs/formats/summary.md "online").
nlohmann::json OnlineJson(const OnlineFigures& f) {
  return {{"auc", Num(f.auc)},
          {"logloss", Num(f.logloss)},
          {"window_rows", f.window_rows},
          {"messages", f.messages},
          {"bad_messages", f.bad_messages},
          {"dead_lettered", f.dead_lettered},
          {"newest_event_ms", f.newest_event_ms},
          {"commits", f.commits},
          {"commit_failures", f.commit_failures},
          {"source_errors", f.source_errors},
          {"reconnects", f.reconnects}};
}

// train.publish's figures of the session, the final publish included (docs/formats/summary.md "publish").
nlohmann::json PublishJson(const PublishFigures& f) {
  return {{"publishes", f.publishes},
          {"failures", f.failures},
          {"skipped", f.skipped},
          {"version", f.version},
          {"last_seconds", Num(f.last_seconds)},
          {"newest_event_ms", f.newest_event_ms}};
}

}  // namespace

std::string SummaryJson(const TrainSummary& s) {
  nlohmann::json j;
  j["status"] = RunOutcomeName(s.status);
  if (s.status == RunOutcome::kInterrupted) j["interrupted_by_signal"] = s.interrupted_by;
  if (!s.error.empty()) j["error"] = s.error;
  auto phases = [](const PhaseSeconds& b, bool job) {
    nlohmann::json p = {{"data_wait_s", b.data_wait},         {"lookup_s", b.lookup},
                        {"forward_s", b.forward},             {"backward_s", b.backward},
                        {"sparse_update_s", b.sparse_update}, {"dense_update_s", b.dense_update}};
    if (job) {
      p["exchange_s"] = b.exchange;
      p["allreduce_s"] = b.allreduce;
    }
    return p;
  };
  const bool job = s.world > 1;
  j["train"] = {
      {"samples_per_sec", s.samples_per_sec},
      {"steps", s.steps},
      {"session_steps", s.session_steps},
      {"rows_read", s.rows_read},
      {"rows_rejected", s.rows_rejected},
      {"epochs", s.epochs},
      {"seconds", s.seconds},
      {"breakdown", phases(s.breakdown, job)},
  };
  if (s.has_valid) j["valid"] = ValidJson(s.valid);
  if (s.has_oracle) j["oracle"] = {{"auc", Num(s.oracle.auc)}, {"logloss", Num(s.oracle.logloss)}};
  nlohmann::json tables = nlohmann::json::array();
  for (const auto& t : s.tables) {
    tables.push_back({{"name", t.name},
                      {"dim", t.dim},
                      {"rows", t.rows},
                      {"bytes", t.bytes},
                      {"admissions", t.admissions},
                      {"evictions", t.evictions},
                      {"lookups", t.lookups},
                      {"oov_lookups", t.oov_lookups},
                      {"expirations", t.expirations}});
  }
  j["tables"] = tables;
  if (job) {
    nlohmann::json ranks = nlohmann::json::array();
    for (const RankFigures& f : s.ranks) {
      ranks.push_back({{"rank", f.rank},
                       {"rows", f.rows},
                       {"ids_owned", f.ids_owned},
                       {"ids_served", f.ids_served},
                       {"bytes_sent", f.bytes_sent},
                       {"bytes_received", f.bytes_received},
                       {"min_bytes_sent", f.min_bytes_sent},
                       {"allreduce_bytes_sent", f.allreduce_bytes_sent},
                       {"breakdown", phases(f.breakdown, true)}});
    }
    j["dist"] = {{"world", s.world}, {"transport", s.transport}, {"data_split", s.data_split}, {"ranks", ranks}};
  }
  if (s.online.enabled) j["online"] = OnlineJson(s.online);
  if (s.publish.enabled) j["publish"] = PublishJson(s.publish);
  j["wall_seconds"] = s.wall_seconds;
  j["peak_rss_bytes"] = s.peak_rss_bytes;
  if (s.object_store.requests > 0) {
    j["object_store"] = {{"requests", s.object_store.requests},
                         {"retries", s.object_store.retries},
                         {"retry_reasons", s.object_store.retry_reasons},
                         {"bytes_read", s.object_store.bytes_read},
                         {"bytes_written", s.object_store.bytes_written}};
  }
  if (!s.last_checkpoint.empty()) j["checkpoint"] = s.last_checkpoint;
  if (!s.model_dir.empty()) j["model"] = s.model_dir;
  return j.dump(2) + "\n";
}

namespace internal {

// Hard-links (or copies) every file of checkpoint `src` into a fresh `dst` atomically: the
// final model is the last checkpoint, without writing large tables twice.
Status PublishModelDir(const std::string& src, const std::string& dst) {
  const std::string tmp = dst + ".tmp";
  std::error_code ec;
  fs::remove_all(tmp, ec);
  for (auto it = fs::recursive_directory_iterator(src, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const fs::path rel = fs::relative(it->path(), src, ec);
    const fs::path target = fs::path(tmp) / rel;
    if (it->is_directory()) {
      fs::create_directories(target, ec);
    } else {
      fs::create_directories(target.parent_path(), ec);
      fs::create_hard_link(it->path(), target, ec);
      if (ec) {
        ec.clear();
        fs::copy_file(it->path(), target, fs::copy_options::overwrite_existing, ec);
      }
    }
    if (ec) return ErrnoToStatus(ec.value(), "cannot publish the model from " + src + " to " + tmp);
  }
  if (ec) return ErrnoToStatus(ec.value(), "cannot read checkpoint " + src);
  fs::remove_all(dst, ec);
  fs::rename(tmp, dst, ec);
  if (ec) return ErrnoToStatus(ec.value(), "cannot rename " + tmp + " to " + dst);
  return OkStatus();
}

std::string EvalRecordLine(int64_t step, int64_t epoch, double unix_seconds, const EvalMetrics& m) {
  nlohmann::json j = {{"step", step},
                      {"epoch", epoch},
                      {"time", unix_seconds},
                      {"rows", m.rows},
                      {"auc", Num(m.auc)},
                      {"logloss", Num(m.logloss)},
                      {"gauc", Num(m.gauc)},
                      {"accuracy", Num(m.accuracy)},
                      {"top5_accuracy", Num(m.top5_accuracy)}};
  if (!m.tasks.empty()) j["tasks"] = TasksJson(m);
  return j.dump();
}

std::string EvalLogLine(const std::string& why, int64_t step, const EvalMetrics& m, bool classifier, bool gauc,
                        double seconds) {
  std::string line = "eval (" + why + ") @ step " + std::to_string(step) + ": ";
  if (classifier) {
    line += "accuracy " + Fixed(m.accuracy, 5) + " top5 " + Fixed(m.top5_accuracy, 5) + " logloss " + Fixed(m.logloss, 5);
  } else {
    line += "auc " + Fixed(m.auc, 5) + " logloss " + Fixed(m.logloss, 5);
    if (gauc) line += " gauc " + Fixed(m.gauc, 5);
    line += " calibration " + Fixed(m.calibration, 3) + " ne " + Fixed(m.ne, 4);
    for (const EvalMetrics::Task& t : m.tasks) line += " | task " + t.name + " auc " + Fixed(t.auc, 5) + " logloss " + Fixed(t.logloss, 5);
  }
  return line + " (" + std::to_string(m.rows) + " rows, " + Fixed(seconds, 1) + "s)";
}

std::string DoneLine(const TrainSummary& s, bool classifier) {
  std::string line = std::string("done: ") + RunOutcomeName(s.status) + ", " + std::to_string(s.steps) + " steps, " +
                     FormatCount(s.samples_per_sec) + " samples/s";
  if (s.has_valid && classifier) {
    line += ", valid accuracy " + Fixed(s.valid.accuracy, 5) + " logloss " + Fixed(s.valid.logloss, 5);
  } else if (s.has_valid) {
    line += ", valid auc " + Fixed(s.valid.auc, 5) + " logloss " + Fixed(s.valid.logloss, 5);
  }
  if (s.has_oracle) line += " (oracle auc " + Fixed(s.oracle.auc, 5) + ")";
  return line;
}

void AppendLine(const std::string& path, const std::string& line) {
  std::ofstream out(path, std::ios::app);
  out << line << '\n';
  out.flush();
}

Status WriteSummaryFile(const std::string& path, const TrainSummary& summary) {
  RECTRAIN_ASSIGN_OR_RETURN(auto w, io::AtomicFileWriter::Create(path));
  RECTRAIN_RETURN_IF_ERROR(w->Append(SummaryJson(summary)));
  return w->Commit();
}

}  // namespace internal
}  // namespace rectrain::train

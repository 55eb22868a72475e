#include "rectrain/tune/tuner.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "rectrain/tune/journal.h"
#include "rectrain/tune/scheduler.h"
#include "rectrain/tune/searcher.h"

namespace rectrain::tune {
namespace fs = std::filesystem;
using json = nlohmann::json;

const char* TrialStateName(TrialState s) {
  switch (s) {
    case TrialState::kPending: return "pending";
    case TrialState::kRunning: return "running";
    case TrialState::kPaused: return "paused";
    case TrialState::kFinished: return "finished";
    case TrialState::kStopped: return "stopped";
    case TrialState::kFailed: return "failed";
  }
  return "?";
}

namespace {

class RealClock final : public StudyClock {
 public:
  double Now() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  void Sleep(double seconds) const override { std::this_thread::sleep_for(std::chrono::duration<double>(seconds)); }
};

constexpr TrialState kAllStates[] = {TrialState::kPending, TrialState::kRunning, TrialState::kPaused,
                                     TrialState::kFinished, TrialState::kStopped, TrialState::kFailed};

std::optional<TrialState> ParseState(const std::string& s) {
  for (TrialState t : kAllStates) {
    if (s == TrialStateName(t)) return t;
  }
  return std::nullopt;
}

std::string Fixed(double v, int digits = 5) {
  if (!std::isfinite(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

std::string Duration(double s) {
  char buf[32];
  const long t = std::lround(s);
  if (t >= 3600) {
    std::snprintf(buf, sizeof(buf), "%ldh%02ldm", t / 3600, (t / 60) % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%ldm%02lds", t / 60, t % 60);
  }
  return buf;
}

std::string TrialName(int id) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "t%03d", id);
  return buf;
}

json AssignmentJson(const Assignment& a) {
  json out = json::array();
  for (const auto& [k, v] : a) out.push_back({k, v});
  return out;
}

Assignment AssignmentFrom(const json& j) {
  Assignment a;
  for (const auto& kv : j) a.emplace_back(kv.at(0).get<std::string>(), kv.at(1).get<std::string>());
  return a;
}

double JsonNumber(const json& j, const std::string& key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return TrialResult::kNaN;
  return it->get<double>();
}

// The last non-empty lines of a log (a failed trial's reason when it wrote no summary).
std::string LogTail(const std::string& path, size_t lines) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff from = std::max<std::streamoff>(0, size - 4096);
  in.seekg(from);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> all;
  std::istringstream ss(text);
  for (std::string l; std::getline(ss, l);) {
    if (!l.empty()) all.push_back(l);
  }
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) out += (out.empty() ? "" : " | ") + all[i];
  return out;
}

// The best trial: the best value among those at the highest rung any trial completed
// (failed trials and trials without a result never count); -1 if none. `result` maps an
// element to its TrialResult (the study keeps its trials with their processes).
template <class T, class Result>
int BestTrial(const StudySpec& spec, const std::vector<T>& trials, Result result) {
  int best = -1;
  for (const T& item : trials) {
    const TrialResult& t = result(item);
    if (t.state == TrialState::kFailed || !std::isfinite(t.value) || t.rung < 0) continue;
    if (best < 0) {
      best = t.id;
      continue;
    }
    const TrialResult& b = result(trials[static_cast<size_t>(best)]);
    if (t.rung > b.rung || (t.rung == b.rung && spec.Better(t.value, b.value))) best = t.id;
  }
  return best;
}

struct Trial {
  TrialResult r;
  std::unique_ptr<TrialProcess> proc;
  pid_t pid = 0;
  int slot = -1;
  int64_t target = 0;       // the budget of the current launch
  double launched_at = 0;
  bool stopping = false;    // the tuner sent SIGTERM for the scheduler
  std::string stop_reason;
  int64_t eval_offset = 0;  // bytes of evals.jsonl already read
  std::optional<int64_t> step;  // latest evaluation step
};

class Study {
 public:
  Study(const StudySpec& spec, const TunerOptions& o)
      : spec_(spec),
        o_(o),
        clock_(o.clock != nullptr ? *o.clock : RealStudyClock()),
        searcher_(MakeSearcher(spec)),
        scheduler_(MakeScheduler(spec)) {
    if (o.launcher == nullptr) {
      own_launcher_ = spec.launcher.command_template.empty()
                          ? MakeLocalLauncher()
                          : MakeTemplateLauncher(spec.launcher.command_template, spec.launcher.hosts);
    }
    launcher_ = o.launcher != nullptr ? o.launcher : own_launcher_.get();
    slots_.assign(static_cast<size_t>(spec.concurrency()), -1);
  }

  Result<StudyResult> Run() {
    const double wall_start = clock_.Now();
    RECTRAIN_RETURN_IF_ERROR(Prepare());
    RECTRAIN_RETURN_IF_ERROR(RegisterSeries());
    if (!cache_done_ && spec_.build_cache) {
      RECTRAIN_RETURN_IF_ERROR(BuildCache());
    }
    Log(std::string(o_.resume ? "resumed" : "started") + " study " + spec_.name + " in " + o_.study_dir + ": " +
        std::to_string(spec_.num_samples) + " trials, " + std::to_string(slots_.size()) + " at a time, " +
        SearcherKindName(spec_.searcher.kind) + " searcher, " + SchedulerKindName(spec_.scheduler.kind) + " scheduler" +
        (study_run_ ? ", tracking run " + std::to_string(*study_run_) : ""));
    double last_draw = -1e9;
    for (;;) {
      const double tick = clock_.Now();
      RECTRAIN_RETURN_IF_ERROR(Poll());
      if (o_.stop_signal != nullptr && o_.stop_signal->load() != 0) {
        interrupted_ = o_.stop_signal->load();
        break;
      }
      RECTRAIN_RETURN_IF_ERROR(FillSlots());
      if (Running() == 0) break;
      const double now = Seconds(wall_start);
      if (o_.draw && now - last_draw >= o_.table_interval_s) {
        o_.draw(Table(now));
        last_draw = now;
      }
      UpdateSeries();
      overhead_ += clock_.Now() - tick;
      clock_.Sleep(o_.poll_interval_s);
    }
    StudyResult out;
    if (interrupted_ != 0) {
      RECTRAIN_RETURN_IF_ERROR(StopAll());
      out.interrupted = true;
      out.signal = interrupted_;
    } else {
      RECTRAIN_RETURN_IF_ERROR(Conclude());
    }
    if (tracking_failures_ > 1) {
      Log("warning: " + std::to_string(tracking_failures_) + " writes to the tracking store failed (the first is logged "
          "above); journal.jsonl has every event");
    }
    UpdateSeries();
    for (const auto& t : trials_) out.trials.push_back(t.r);
    out.best = Best();
    out.study_run = study_run_;
    out.wall_seconds = Seconds(wall_start);
    out.overhead_seconds = overhead_;
    out.launches = launches_;
    if (out.best >= 0 && !out.interrupted) out.best_config_path = o_.study_dir + "/best.yaml";
    if (o_.draw) o_.draw(Table(out.wall_seconds));
    return out;
  }

 private:
  double Seconds(double since) const { return clock_.Now() - since; }
  void Log(const std::string& line) {
    if (o_.log) o_.log(line);
  }
  // The tracking store is a record of the study beside its journal: a write that fails does not
  // stop the study, and is never silent: the first failure is logged, the count at the end.
  void Tracked(const Status& s, const std::string& what) {
    if (s.ok()) return;
    if (tracking_failures_++ == 0) Log("warning: the tracking store could not " + what + ": " + s.ToString());
  }
  Status Journal(json e) { return journal_->Append(std::move(e)); }
  size_t Running() const {
    return static_cast<size_t>(std::count_if(slots_.begin(), slots_.end(), [](int t) { return t >= 0; }));
  }

  // ---- Setup: the study directory, the journal (replayed on resume), the checks ----
  Status Prepare() {
    const std::string journal_path = o_.study_dir + "/journal.jsonl";
    std::error_code ec;
    std::vector<json> events;
    if (o_.resume) {
      if (!fs::exists(journal_path, ec)) {
        return NotFoundError("no study to resume in " + o_.study_dir + " (no journal.jsonl); start one with rectrain tune STUDY.yaml --study-dir " + o_.study_dir);
      }
    } else if (fs::exists(journal_path, ec)) {
      // A study that stopped at setup (a config check, the cache build) created no trial: a
      // fresh start may take its directory over. Anything more is resumed, never overwritten.
      std::vector<json> old;
      bool has_trials = true;
      if (auto j = Journal::Open(journal_path, &old); j.ok()) {
        has_trials = std::any_of(old.begin(), old.end(), [](const json& e) { return e.value("ev", "") == "trial"; });
      }
      if (has_trials) {
        return AlreadyExistsError("study directory " + o_.study_dir + " already holds a study; continue it with rectrain tune --resume " +
                                  o_.study_dir + " or choose another --study-dir");
      }
      fs::remove(journal_path, ec);
      Log("the study in " + o_.study_dir + " stopped before its first trial; starting it afresh");
    }
    fs::create_directories(o_.study_dir + "/trials", ec);
    if (ec) return PermissionDeniedError("cannot create the study directory " + o_.study_dir + ": " + ec.message());
    RECTRAIN_ASSIGN_OR_RETURN(journal_, Journal::Open(journal_path, &events));

    // The base config with the study's sets, and every searched key on its own: an unknown key
    // or a value the config refuses stops the study here, naming the key.
    auto base = o_.check(spec_.sets);
    if (!base.ok()) return base.status().WithContext("the study's base config (base, sets)");
    base_ = *base;
    RECTRAIN_RETURN_IF_ERROR(CheckAgainstConfig());

    if (o_.resume) {
      RECTRAIN_RETURN_IF_ERROR(Replay(events));
    } else {
      std::ofstream(o_.study_dir + "/study.yaml") << spec_.text;
      // Where the study file was: its relative paths (base) resolve from there on --resume.
      if (!spec_.source.empty()) std::ofstream(o_.study_dir + "/study.source") << fs::absolute(spec_.source).string() << "\n";
      if (!spec_.base_yaml.empty()) std::ofstream(o_.study_dir + "/base.yaml") << spec_.base_yaml;
      RECTRAIN_RETURN_IF_ERROR(StartStudyRun());
      RECTRAIN_RETURN_IF_ERROR(Journal({{"ev", "study"}, {"name", spec_.name}, {"study_run", study_run_ ? json(*study_run_) : json()}}));
    }
    return OkStatus();
  }

  Status CheckAgainstConfig() {
    const std::string field = spec_.metric_field();
    if (!base_.has_valid) {
      return InvalidArgumentError("metric " + spec_.metric + " needs data.valid in the base config: trials report it from their validation set");
    }
    if (base_.classifier && (field == "auc" || field == "gauc")) {
      return InvalidArgumentError("metric " + spec_.metric + ": the base config is a classifier (model.num_classes >= 2), which reports valid.accuracy, valid.top5_accuracy and valid.logloss");
    }
    if (!base_.classifier && (field == "accuracy" || field == "top5_accuracy")) {
      return InvalidArgumentError("metric " + spec_.metric + " needs a classifier (model.num_classes >= 2); a CTR model reports valid.auc and valid.logloss");
    }
    if (field == "gauc" && !base_.gauc) return InvalidArgumentError("metric valid.gauc needs eval.gauc: true (and data.group_key) in the base config");
    if (spec_.scheduler.kind == SchedulerKind::kMedian && base_.eval_every_steps == 0 &&
        (spec_.scheduler.unit == BudgetUnit::kSteps || base_.epochs <= 1)) {
      return InvalidArgumentError("scheduler median compares trials at their evaluations: set train.eval_every_steps in the base config (or sets)");
    }
    std::vector<std::string> errors;
    // A key fits when some value of its domain loads (an unknown key never does); a single
    // value the config refuses fails only the trials that draw it.
    for (const Param& p : spec_.space.params()) {
      std::vector<std::string> tries = p.domain.categorical() ? p.domain.values
                                                              : std::vector<std::string>{p.domain.Decode(0.5), p.domain.Decode(0.0)};
      std::string first_error;
      bool fits = false;
      for (const std::string& v : tries) {
        std::vector<std::string> sets = spec_.sets;
        sets.push_back(p.key + "=" + v);
        auto checked = o_.check(sets);
        if (checked.ok()) {
          fits = true;
          break;
        }
        if (first_error.empty()) first_error = "(tried " + v + "): " + checked.status().message();
      }
      if (!fits) errors.push_back("space." + p.key + " " + first_error);
    }
    if (!errors.empty()) {
      std::string m = "the search space does not fit the base config:";
      for (const auto& e : errors) m += "\n  " + e;
      return InvalidArgumentError(m);
    }
    return OkStatus();
  }

  Status StartStudyRun() {
    if (o_.store == nullptr) return OkStatus();
    track::RunInfo info;
    info.name = spec_.name;
    info.tags = {"tune", "study"};
    info.group_id = spec_.name;
    info.config_yaml = spec_.text;
    std::string keys;
    for (const Param& p : spec_.space.params()) keys += (keys.empty() ? "" : ",") + p.key;
    info.params = {{"tune.metric", spec_.metric},
                   {"tune.mode", spec_.direction == Direction::kMaximize ? "max" : "min"},
                   {"tune.keys", keys},
                   {"tune.searcher", SearcherKindName(spec_.searcher.kind)},
                   {"tune.scheduler", SchedulerKindName(spec_.scheduler.kind)},
                   {"tune.num_samples", std::to_string(spec_.num_samples)},
                   {"tune.concurrency", std::to_string(slots_.size())},
                   {"tune.study_dir", fs::absolute(o_.study_dir).string()}};
    std::string rungs;
    for (int64_t b : scheduler_->Rungs()) rungs += (rungs.empty() ? "" : ",") + std::to_string(b);
    info.params.emplace_back("tune.rungs", rungs);
    info.params.emplace_back("tune.budget", BudgetUnitName(spec_.scheduler.unit));
    auto id = o_.store->StartRun(info);
    if (!id.ok()) return id.status().WithContext("cannot record the study in the tracking store " + base_.store_path);
    study_run_ = *id;
    return OkStatus();
  }

  Status Replay(const std::vector<json>& events) {
    for (const json& e : events) {
      const std::string ev = e.value("ev", "");
      const int id = e.value("trial", -1);
      Trial* t = id >= 0 && id < static_cast<int>(trials_.size()) ? &trials_[static_cast<size_t>(id)] : nullptr;
      if (ev == "study") {
        if (e.contains("study_run") && e["study_run"].is_number_integer()) study_run_ = e["study_run"].get<track::RunId>();
      } else if (ev == "cache") {
        cache_done_ = true;
      } else if (ev == "trial") {
        Trial nt;
        nt.r.id = static_cast<int>(trials_.size());
        nt.r.params = AssignmentFrom(e.at("params"));
        nt.r.dir = o_.study_dir + "/trials/" + TrialName(nt.r.id);
        trials_.push_back(std::move(nt));
      } else if (t == nullptr) {
        continue;
      } else if (ev == "launch") {
        t->r.state = TrialState::kRunning;
        t->pid = e.value("pid", 0);
        t->target = e.value("budget", int64_t{0});
        ++t->r.launches;
        if (t->r.first_start == 0) t->r.first_start = e.value("time", 0.0);
      } else if (ev == "run") {
        t->r.run = e.value("run", track::RunId{0});
      } else if (ev == "result") {
        t->eval_offset = e.value("offset", int64_t{0});
        t->r.value = JsonNumber(e, "value");
        t->step = e.value("step", int64_t{0});
        // The decision was acted on when the result came in: the journal has what followed.
        scheduler_->OnResult(id, e.value("budget", int64_t{0}), t->r.value);
      } else if (ev == "rung") {
        const double v = JsonNumber(e, "value");
        scheduler_->OnBudgetDone(id, e.value("budget", int64_t{0}), v, e.value("complete", false));  // as above
        t->r.rung = scheduler_->RungOf(id);
        t->r.budget = e.value("budget", int64_t{0});
        t->r.value = v;
        t->r.rung_values.push_back(v);
      } else if (ev == "promote") {
        scheduler_->MarkPromoted(id, e.value("rung", 0));
      } else if (ev == "state") {
        if (auto s = ParseState(e.value("state", ""))) t->r.state = *s;
        t->r.reason = e.value("reason", "");
        t->r.last_end = e.value("time", 0.0);
        if (t->r.state == TrialState::kFailed || t->r.state == TrialState::kStopped) scheduler_->OnGone(id);
      }
    }
    // Trials that were running when the tuner died: end any survivor, then resume them (or
    // start them afresh when they left no checkpoint).
    for (Trial& t : trials_) {
      if (t.r.state == TrialState::kRunning) {
        EndSurvivor(t);
        t.r.state = TrialState::kPending;
        ready_.push_back(t.r.id);
      } else if (t.r.state == TrialState::kPending) {
        ready_.push_back(t.r.id);
      }
    }
    if (study_run_ && o_.store != nullptr) Tracked(o_.store->ReopenRun(*study_run_), "reopen the study's run");
    return OkStatus();
  }

  // A trial process that outlived the tuner (a launcher template whose shell ignored the
  // parent-death signal): SIGTERM to its group so it checkpoints, SIGKILL after 120 s.
  void EndSurvivor(const Trial& t) {
    if (!ProcessAlive(t.pid)) return;
    Log("trial " + TrialName(t.r.id) + ": process " + std::to_string(t.pid) + " is still running; stopping it (SIGTERM) to resume it");
    kill(-t.pid, SIGTERM);
    for (int i = 0; i < 1200 && ProcessAlive(t.pid); ++i) clock_.Sleep(0.1);
    if (ProcessAlive(t.pid)) kill(-t.pid, SIGKILL);
  }

  // The sample cache of the base config, once: every trial then reads it instead of parsing.
  Status BuildCache() {
    std::vector<std::string> argv = {o_.rectrain_exe, "data", "cache", BasePath()};
    for (const auto& s : spec_.sets) argv.insert(argv.end(), {"--set", s});
    argv.insert(argv.end(), {"--set", "threads=" + std::to_string(std::max<int64_t>(1, spec_.concurrency() * spec_.trial_threads))});
    const std::string log_path = o_.study_dir + "/cache.log";
    Log("building the sample cache once for all trials (log: " + log_path + ")");
    LaunchRequest r;
    r.argv = argv;
    r.dir = o_.study_dir;
    r.log_path = log_path;
    RECTRAIN_ASSIGN_OR_RETURN(auto proc, MakeLocalLauncher()->Start(r));
    std::optional<ExitInfo> exit;
    while (!(exit = proc->Poll())) {
      if (o_.stop_signal != nullptr && o_.stop_signal->load() != 0) proc->Signal(SIGTERM);
      clock_.Sleep(0.05);
    }
    if (exit->signaled || exit->exit_code != 0) {
      return FailedPreconditionError("building the sample cache failed (" + exit->Describe() + "): " + LogTail(log_path, 3) +
                                     " (see " + log_path + "; or set data_cache: false in the study)");
    }
    cache_done_ = true;
    return Journal({{"ev", "cache"}, {"log", log_path}});
  }

  std::string BasePath() const { return spec_.base_path.empty() ? fs::absolute(o_.study_dir + "/base.yaml").string() : spec_.base_path; }

  // ---- Launching ----
  Status FillSlots() {
    for (size_t slot = 0; slot < slots_.size(); ++slot) {
      if (slots_[slot] >= 0) continue;
      if (failures_limit_hit()) return OkStatus();
      if (!ready_.empty()) {
        const int id = ready_.front();
        ready_.pop_front();
        Trial& t = trials_[static_cast<size_t>(id)];
        const bool has_checkpoint = HasCheckpoint(t.r.dir);
        Log("trial " + TrialName(id) + (has_checkpoint ? " continues from its checkpoint" : " starts again (it left no checkpoint)"));
        RECTRAIN_RETURN_IF_ERROR(Launch(t, slot, has_checkpoint, t.target > 0 ? t.target : scheduler_->FirstBudget()));
        continue;
      }
      if (auto p = scheduler_->Promote()) {
        Trial& t = trials_[static_cast<size_t>(p->trial)];
        RECTRAIN_RETURN_IF_ERROR(Journal({{"ev", "promote"}, {"trial", p->trial}, {"rung", p->rung}, {"budget", p->budget}}));
        Log("trial " + TrialName(p->trial) + " promoted to rung " + std::to_string(p->rung) + " (" + std::to_string(p->budget) + " " +
            BudgetUnitName(spec_.scheduler.unit) + "); resuming from its checkpoint");
        RECTRAIN_RETURN_IF_ERROR(Launch(t, slot, true, p->budget));
        continue;
      }
      if (static_cast<int64_t>(trials_.size()) >= spec_.num_samples || exhausted_) return OkStatus();
      std::vector<Observation> obs;
      for (const Trial& t : trials_) obs.push_back(Observe(t));
      std::optional<Assignment> next = searcher_->Next(obs);
      if (!next) {
        exhausted_ = true;
        return OkStatus();
      }
      Trial nt;
      nt.r.id = static_cast<int>(trials_.size());
      nt.r.params = *next;
      nt.r.dir = o_.study_dir + "/trials/" + TrialName(nt.r.id);
      trials_.push_back(std::move(nt));
      Trial& t = trials_.back();
      RECTRAIN_RETURN_IF_ERROR(Journal({{"ev", "trial"}, {"trial", t.r.id}, {"params", AssignmentJson(t.r.params)}}));
      // A value the config refuses (e.g. a combination out of range) fails the trial, not the study.
      auto checked = o_.check(TrialSets(t));
      if (!checked.ok()) {
        RECTRAIN_RETURN_IF_ERROR(End(t, TrialState::kFailed, "bad config: " + checked.status().message()));
        --slot;  // the slot is still free
        continue;
      }
      RECTRAIN_RETURN_IF_ERROR(Launch(t, slot, false, scheduler_->FirstBudget()));
    }
    return OkStatus();
  }

  bool failures_limit_hit() const {
    if (spec_.max_failures < 0) return false;
    return std::count_if(trials_.begin(), trials_.end(), [](const Trial& t) { return t.r.state == TrialState::kFailed; }) >
           spec_.max_failures;
  }

  static bool HasCheckpoint(const std::string& dir) {
    std::error_code ec;
    if (!fs::is_directory(dir + "/checkpoints", ec)) return false;
    for (const auto& e : fs::directory_iterator(dir + "/checkpoints", ec)) {
      if (e.path().filename().string().rfind("step-", 0) == 0) return true;
    }
    return false;
  }

  // The study's sets, then the trial's values (config checks, fresh launches).
  std::vector<std::string> TrialSets(const Trial& t) const {
    std::vector<std::string> sets = spec_.sets;
    for (const auto& [k, v] : t.r.params) sets.push_back(k + "=" + v);
    return sets;
  }

  std::string BudgetSet(int64_t budget) const {
    return (spec_.scheduler.unit == BudgetUnit::kEpochs ? "train.epochs=" : "train.max_steps=") + std::to_string(budget);
  }

  Status Launch(Trial& t, size_t slot, bool resume, int64_t budget) {
    std::error_code ec;
    if (!resume && fs::exists(t.r.dir, ec)) fs::remove_all(t.r.dir, ec);  // a fresh start: no stale results
    fs::create_directories(t.r.dir, ec);
    if (!resume) t.eval_offset = 0;
    std::vector<std::string> argv = {o_.rectrain_exe, "train"};
    std::vector<std::string> sets;
    if (resume) {
      argv.insert(argv.end(), {"--resume", t.r.dir});
    } else {
      argv.insert(argv.end(), {BasePath(), "--run-dir", t.r.dir});
      sets = TrialSets(t);
      sets.push_back("threads=" + std::to_string(spec_.trial_threads));
      sets.push_back("monitoring.port=0");  // concurrent trials: each its own ephemeral /metrics port
      if (cache_done_ && spec_.build_cache) sets.push_back("data.cache=build");
      if (base_.tracking) {
        sets.push_back("tracking.store=" + fs::absolute(base_.store_path).string());
        sets.push_back("tracking.group=" + spec_.name);
        sets.push_back("tracking.run_name=" + spec_.name + "-" + TrialName(t.r.id));
        if (study_run_) sets.push_back("tracking.parent_id=" + std::to_string(*study_run_));
      }
    }
    if (budget > 0) sets.push_back(BudgetSet(budget));
    for (const auto& s : sets) argv.insert(argv.end(), {"--set", s});
    argv.insert(argv.end(), {"--no-progress", "--quiet", "--tag", "tune"});
    LaunchRequest r;
    r.argv = std::move(argv);
    r.dir = t.r.dir;
    r.log_path = t.r.dir + "/stdout.log";
    r.trial = t.r.id;
    r.slot = static_cast<int>(slot);
    r.threads = spec_.trial_threads;
    auto proc = launcher_->Start(r);
    if (!proc.ok()) return proc.status().WithContext("trial " + TrialName(t.r.id));
    t.proc = std::move(proc).value();
    t.pid = t.proc->pid();
    t.slot = static_cast<int>(slot);
    t.target = budget;
    t.stopping = false;
    t.launched_at = UnixNow();
    if (t.r.first_start == 0) t.r.first_start = t.launched_at;
    ++t.r.launches;
    ++launches_;
    t.r.state = TrialState::kRunning;
    slots_[slot] = t.r.id;
    RECTRAIN_RETURN_IF_ERROR(Journal({{"ev", "launch"}, {"trial", t.r.id}, {"pid", t.pid}, {"slot", slot}, {"budget", budget},
                                      {"resume", resume}, {"command", launcher_->Describe(r)}}));
    if (!resume || t.r.launches == 1) {
      Log("trial " + TrialName(t.r.id) + " started" + (budget > 0 ? " (to " + std::to_string(budget) + " " + BudgetUnitName(spec_.scheduler.unit) + ")" : "") +
          ": " + FormatAssignment(t.r.params));
    }
    return OkStatus();
  }

  // ---- Watching ----
  Status Poll() {
    for (size_t slot = 0; slot < slots_.size(); ++slot) {
      if (slots_[slot] < 0) continue;
      Trial& t = trials_[static_cast<size_t>(slots_[slot])];
      RECTRAIN_RETURN_IF_ERROR(LearnRun(t));
      RECTRAIN_RETURN_IF_ERROR(ReadEvals(t));
      std::optional<ExitInfo> exit = t.proc->Poll();
      if (!exit) continue;
      RECTRAIN_RETURN_IF_ERROR(ReadEvals(t));  // what it wrote before it exited
      RECTRAIN_RETURN_IF_ERROR(LearnRun(t));
      slots_[slot] = -1;
      t.slot = -1;
      RECTRAIN_RETURN_IF_ERROR(OnExit(t, *exit));
      t.proc.reset();
    }
    return OkStatus();
  }

  // The trial's tracking run, once its tracking.json appears; journaled (a failed append stops
  // the study, as for every event it acts on).
  Status LearnRun(Trial& t) {
    if (t.r.run) return OkStatus();
    std::ifstream in(t.r.dir + "/tracking.json");
    if (!in) return OkStatus();
    const json j = json::parse(in, nullptr, false);
    if (!j.is_object() || !j.contains("run") || !j["run"].is_number_integer()) return OkStatus();
    t.r.run = j["run"].get<track::RunId>();
    RECTRAIN_RETURN_IF_ERROR(Journal({{"ev", "run"}, {"trial", t.r.id}, {"run", *t.r.run}}));
    RecordTrialLive(t);
    return OkStatus();
  }

  // The trial's tune/* figures as final metrics of its run, kept current while it runs, so the
  // study page (docs/ui.md) shows trial number, step, metric and rung without reading curves.
  void RecordTrialLive(const Trial& t) {
    if (o_.store == nullptr || !t.r.run) return;
    std::vector<track::MetricValue> m = {{"tune/trial", static_cast<double>(t.r.id)},
                                         {"tune/rung", static_cast<double>(t.r.rung)},
                                         {"tune/budget", static_cast<double>(t.r.budget)}};
    if (t.step) m.emplace_back("tune/step", static_cast<double>(*t.step));
    if (std::isfinite(t.r.value)) m.emplace_back("tune/value", t.r.value);
    Tracked(o_.store->SetFinal(*t.r.run, m), "record trial " + TrialName(t.r.id) + "'s figures");
  }

  Status ReadEvals(Trial& t) {
    std::ifstream in(t.r.dir + "/evals.jsonl", std::ios::binary);
    if (!in) return OkStatus();
    in.seekg(t.eval_offset);
    std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t pos = 0;
    for (size_t nl; (nl = chunk.find('\n', pos)) != std::string::npos; pos = nl + 1) {
      const json e = json::parse(chunk.substr(pos, nl - pos), nullptr, false);
      t.eval_offset += static_cast<int64_t>(nl + 1 - pos);
      if (!e.is_object()) continue;
      const int64_t step = e.value("step", int64_t{0});
      const int64_t budget = spec_.scheduler.unit == BudgetUnit::kEpochs ? e.value("epoch", int64_t{0}) : step;
      const double v = JsonNumber(e, spec_.metric_field());
      t.step = step;
      t.r.value = v;
      RECTRAIN_RETURN_IF_ERROR(Journal({{"ev", "result"}, {"trial", t.r.id}, {"step", step}, {"budget", budget},
                                        {"value", std::isfinite(v) ? json(v) : json()}, {"offset", t.eval_offset}}));
      RecordTrialLive(t);
      if (t.stopping) continue;
      const Decision d = scheduler_->OnResult(t.r.id, budget, v);
      if (d.action == Decision::Action::kStop) {
        t.stopping = true;
        t.stop_reason = d.reason;
        t.r.budget = budget;
        t.proc->Signal(SIGTERM);  // it finishes the step, checkpoints and exits 143
        Log("trial " + TrialName(t.r.id) + " stopping: " + d.reason);
      }
    }
    return OkStatus();
  }

  Status OnExit(Trial& t, const ExitInfo& exit) {
    // summary.json of this launch (an older one may be left from an earlier launch).
    json summary;
    const std::string summary_path = t.r.dir + "/summary.json";
    struct stat st {};
    if (::stat(summary_path.c_str(), &st) == 0 &&
        static_cast<double>(st.st_mtim.tv_sec) + 1e-9 * static_cast<double>(st.st_mtim.tv_nsec) >= t.launched_at - 1.0) {
      std::ifstream in(summary_path);
      summary = json::parse(in, nullptr, false);
    }
    const std::string status = summary.is_object() ? summary.value("status", "") : "";
    if (t.stopping) {
      scheduler_->OnGone(t.r.id);
      return End(t, TrialState::kStopped, t.stop_reason);
    }
    if (!exit.signaled && exit.exit_code == 0 && (status == "completed" || status == "early_stopped")) {
      const json train = summary.contains("train") && summary["train"].is_object() ? summary["train"] : json::object();
      const int64_t steps = train.value("steps", int64_t{0});
      const int64_t epochs = train.value("epochs", int64_t{0});
      const int64_t reached = spec_.scheduler.unit == BudgetUnit::kEpochs ? epochs : steps;
      double v = TrialResult::kNaN;
      if (summary.contains("valid") && summary["valid"].is_object()) v = JsonNumber(summary["valid"], spec_.metric_field());
      if (!std::isfinite(v)) {
        scheduler_->OnGone(t.r.id);
        return End(t, TrialState::kFailed, "the trial reported no " + spec_.metric + " (summary.json)");
      }
      const bool complete = status == "early_stopped" || t.target == 0 || reached < t.target;
      const Decision d = scheduler_->OnBudgetDone(t.r.id, reached, v, complete);
      t.r.rung = scheduler_->RungOf(t.r.id);
      t.r.budget = reached;
      t.r.value = v;
      t.r.rung_values.push_back(v);
      RECTRAIN_RETURN_IF_ERROR(Journal({{"ev", "rung"}, {"trial", t.r.id}, {"rung", t.r.rung}, {"budget", reached},
                                        {"value", v}, {"complete", complete}}));
      if (o_.store != nullptr && t.r.run) {
        const track::MetricValue m[] = {{"tune/rung", static_cast<double>(t.r.rung)}};
        Tracked(o_.store->LogMetrics(*t.r.run, steps, m), "log trial " + TrialName(t.r.id) + "'s rung");
      }
      return End(t, d.action == Decision::Action::kPause ? TrialState::kPaused : TrialState::kFinished, d.reason);
    }
    std::string reason;
    if (status == "failed" && summary.contains("error")) {
      reason = summary["error"].get<std::string>();
    } else if (exit.signaled || exit.exit_code == 143 || exit.exit_code == 130) {
      reason = exit.Describe() + (status == "interrupted" ? " (a signal the tuner did not send; checkpoint kept)" : "") + ": " +
               LogTail(t.r.dir + "/stdout.log", 2);
    } else {
      reason = exit.Describe() + ": " + LogTail(t.r.dir + "/stdout.log", 3);
    }
    scheduler_->OnGone(t.r.id);
    return End(t, TrialState::kFailed, reason);
  }

  // Records a trial's new state in the journal, the tracking store and the log.
  Status End(Trial& t, TrialState state, const std::string& reason) {
    t.r.state = state;
    t.r.reason = reason;
    t.r.last_end = UnixNow();
    RECTRAIN_RETURN_IF_ERROR(Journal({{"ev", "state"}, {"trial", t.r.id}, {"state", TrialStateName(state)}, {"reason", reason}}));
    if (o_.store != nullptr && t.r.run) {
      RecordTrialLive(t);
      const track::RunStatus rs = state == TrialState::kFinished ? track::RunStatus::kFinished
                                  : state == TrialState::kFailed ? track::RunStatus::kFailed
                                                                 : track::RunStatus::kStopped;
      Tracked(o_.store->FinishRun(*t.r.run, rs, std::string(TrialStateName(state)) + ": " + reason),
              "end trial " + TrialName(t.r.id) + "'s run");
    }
    Log("trial " + TrialName(t.r.id) + " " + TrialStateName(state) + (std::isfinite(t.r.value) && state != TrialState::kFailed ? " (" + spec_.metric + " " + Fixed(t.r.value) + ")" : "") + ": " + reason);
    RecordStudyProgress();
    return OkStatus();
  }

  void RecordStudyProgress() {
    ++results_;
    if (o_.store == nullptr || !study_run_) return;
    const int best = Best();
    std::vector<track::MetricValue> m = {{"tune/elapsed_s", UnixNow() - StudyStart()}};
    if (best >= 0) m.emplace_back("tune/best", trials_[static_cast<size_t>(best)].r.value);
    for (TrialState s : kAllStates) m.emplace_back(std::string("tune/trials_") + TrialStateName(s), static_cast<double>(Count(s)));
    Tracked(o_.store->LogMetrics(*study_run_, results_, m), "log the study's progress");
  }

  double StudyStart() const {
    double s = UnixNow();
    for (const Trial& t : trials_) {
      if (t.r.first_start > 0) s = std::min(s, t.r.first_start);
    }
    return s;
  }

  int64_t Count(TrialState s) const {
    return std::count_if(trials_.begin(), trials_.end(), [&](const Trial& t) { return t.r.state == s; });
  }

  Observation Observe(const Trial& t) const {
    Observation o;
    o.params = t.r.params;
    o.failed = t.r.state == TrialState::kFailed;
    o.pending = t.r.state == TrialState::kRunning || t.r.state == TrialState::kPending;
    if (spec_.scheduler.kind == SchedulerKind::kAsha) {
      o.rung_values = t.r.rung_values;
    } else if (std::isfinite(t.r.value) && !o.pending) {
      o.rung_values = {t.r.value};
    }
    return o;
  }

  int Best() const { return BestTrial(spec_, trials_, [](const Trial& t) -> const TrialResult& { return t.r; }); }

  // ---- Ending ----
  Status StopAll() {
    Log("stopping: " + std::to_string(Running()) + " running trials get SIGTERM and checkpoint; continue with rectrain tune --resume " + o_.study_dir);
    for (int id : slots_) {
      if (id >= 0) trials_[static_cast<size_t>(id)].proc->Signal(SIGTERM);
    }
    const double start = clock_.Now();
    Status first_error;  // every trial is stopped first; then the first error is returned
    while (Running() > 0) {
      for (size_t slot = 0; slot < slots_.size(); ++slot) {
        if (slots_[slot] < 0) continue;
        Trial& t = trials_[static_cast<size_t>(slots_[slot])];
        if (t.proc->Poll()) {
          Status read = ReadEvals(t);  // its last results, journaled
          if (first_error.ok()) first_error = read;
          slots_[slot] = -1;  // no state event: the journal still says running, so --resume resumes it
        } else if (Seconds(start) > 120) {
          t.proc->Signal(SIGKILL);
        }
      }
      clock_.Sleep(0.05);
    }
    RECTRAIN_RETURN_IF_ERROR(first_error);
    RECTRAIN_RETURN_IF_ERROR(Journal({{"ev", "interrupted"}, {"signal", interrupted_}}));
    if (o_.store != nullptr && study_run_) {
      Tracked(o_.store->FinishRun(*study_run_, track::RunStatus::kStopped, "interrupted; resume with rectrain tune --resume " + o_.study_dir),
              "end the study's run");
    }
    return OkStatus();
  }

  Status Conclude() {
    for (Trial& t : trials_) {
      if (t.r.state == TrialState::kPaused) {
        RECTRAIN_RETURN_IF_ERROR(End(t, TrialState::kStopped, scheduler_->StoppedReason(t.r.id)));
      }
    }
    const int best = Best();
    if (best >= 0) {
      const Trial& b = trials_[static_cast<size_t>(best)];
      std::vector<std::string> sets = TrialSets(b);
      if (spec_.scheduler.max_budget > 0) sets.push_back(BudgetSet(spec_.scheduler.max_budget));
      auto resolved = o_.check(sets);
      if (resolved.ok()) {
        std::ofstream(o_.study_dir + "/best.yaml")
            << "# Best trial " << TrialName(best) << " of study " << spec_.name << ": " << spec_.metric << " " << Fixed(b.r.value)
            << " at " << b.r.budget << " " << BudgetUnitName(spec_.scheduler.unit) << "\n# " << FormatAssignment(b.r.params)
            << "\n# run it: rectrain train " << o_.study_dir << "/best.yaml\n"
            << resolved->resolved_yaml;
      }
    }
    RECTRAIN_RETURN_IF_ERROR(Journal({{"ev", "end"}, {"best", best}}));
    if (o_.store != nullptr && study_run_) {
      std::vector<track::MetricValue> finals;
      if (best >= 0) {
        finals.emplace_back("tune/best", trials_[static_cast<size_t>(best)].r.value);
        finals.emplace_back("tune/best_trial", best);
      }
      for (TrialState s : kAllStates) finals.emplace_back(std::string("tune/trials_") + TrialStateName(s), static_cast<double>(Count(s)));
      Tracked(o_.store->SetFinal(*study_run_, finals), "record the study's result");
      Tracked(o_.store->FinishRun(*study_run_, track::RunStatus::kFinished,
                                  best >= 0 ? "best: trial " + TrialName(best) : "no trial reported " + spec_.metric),
              "end the study's run");
    }
    return OkStatus();
  }

  // ---- Presentation ----
  std::string Table(double elapsed) const {
    std::vector<TrialResult> rs;
    for (const Trial& t : trials_) {
      rs.push_back(t.r);
      if (t.step && t.r.state == TrialState::kRunning) rs.back().budget = *t.step;
    }
    return TrialTable(spec_, rs, 24) + "elapsed " + Duration(elapsed) + ", tuner overhead " + Fixed(overhead_, 2) + " s\n";
  }

  Status RegisterSeries() {
    if (o_.registry == nullptr) return OkStatus();
    const prometheus::Labels study = {{"study", spec_.name}};
    for (TrialState s : kAllStates) {
      RECTRAIN_ASSIGN_OR_RETURN(prometheus::Gauge * g,
                                o_.registry->GetGauge("rectrain_tune_trials", "Trials of the study by state",
                                                      {{"study", spec_.name}, {"state", TrialStateName(s)}}));
      state_gauges_.push_back(g);
    }
    RECTRAIN_ASSIGN_OR_RETURN(best_gauge_, o_.registry->GetGauge("rectrain_tune_best", "Best metric so far (NaN before the first result)",
                                                                 {{"study", spec_.name}, {"metric", spec_.metric}}));
    RECTRAIN_ASSIGN_OR_RETURN(slots_gauge_, o_.registry->GetGauge("rectrain_tune_slots", "Trials that may run at once", study));
    RECTRAIN_ASSIGN_OR_RETURN(busy_gauge_, o_.registry->GetGauge("rectrain_tune_slots_busy", "Trials running now", study));
    RECTRAIN_ASSIGN_OR_RETURN(launch_counter_, o_.registry->GetCounter("rectrain_tune_launches_total", "Trial processes started (first starts and resumes)", study));
    RECTRAIN_ASSIGN_OR_RETURN(overhead_counter_, o_.registry->GetCounter("rectrain_tune_overhead_seconds_total", "Seconds the tuner spent on its own work", study));
    best_gauge_->Set(std::numeric_limits<double>::quiet_NaN());
    return OkStatus();
  }

  void UpdateSeries() {
    if (o_.registry == nullptr) return;
    for (size_t i = 0; i < state_gauges_.size(); ++i) state_gauges_[i]->Set(static_cast<double>(Count(kAllStates[i])));
    const int best = Best();
    if (best >= 0) best_gauge_->Set(trials_[static_cast<size_t>(best)].r.value);
    slots_gauge_->Set(static_cast<double>(slots_.size()));
    busy_gauge_->Set(static_cast<double>(Running()));
    launch_counter_->SetTotal(static_cast<double>(launches_));
    overhead_counter_->SetTotal(overhead_);
  }

  const StudySpec& spec_;
  const TunerOptions& o_;
  const StudyClock& clock_;
  int64_t tracking_failures_ = 0;
  std::unique_ptr<Searcher> searcher_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<Launcher> own_launcher_;  // the study's, when TunerOptions gives none
  Launcher* launcher_ = nullptr;
  std::unique_ptr<tune::Journal> journal_;
  TrialConfigInfo base_;
  std::vector<Trial> trials_;
  std::vector<int> slots_;   // trial per slot, -1 free
  std::deque<int> ready_;    // trials to (re)launch before anything else (after a resume)
  std::optional<track::RunId> study_run_;
  bool cache_done_ = false;
  bool exhausted_ = false;
  int interrupted_ = 0;
  int64_t launches_ = 0;
  int64_t results_ = 0;
  double overhead_ = 0;
  std::vector<prometheus::Gauge*> state_gauges_;
  prometheus::Gauge* best_gauge_ = nullptr;
  prometheus::Gauge* slots_gauge_ = nullptr;
  prometheus::Gauge* busy_gauge_ = nullptr;
  prometheus::Counter* launch_counter_ = nullptr;
  prometheus::Counter* overhead_counter_ = nullptr;
};

}  // namespace

std::string TrialTable(const StudySpec& spec, const std::vector<TrialResult>& trials, size_t max_rows) {
  std::map<TrialState, int> counts;
  for (const auto& t : trials) ++counts[t.state];
  const int best = BestTrial(spec, trials, [](const TrialResult& t) -> const TrialResult& { return t; });
  std::string out = "study " + spec.name + ": " + std::to_string(trials.size()) + "/" + std::to_string(spec.num_samples) + " trials";
  for (TrialState s : kAllStates) {
    if (counts[s] > 0) out += ", " + std::to_string(counts[s]) + " " + TrialStateName(s);
  }
  if (best >= 0) out += " | best " + spec.metric + " " + Fixed(trials[static_cast<size_t>(best)].value) + " (" + TrialName(best) + ")";
  out += "\n";
  // Running first, then by rung and value, then the rest in order.
  std::vector<const TrialResult*> rows;
  for (const auto& t : trials) rows.push_back(&t);
  std::stable_sort(rows.begin(), rows.end(), [&](const TrialResult* a, const TrialResult* b) {
    const bool ra = a->state == TrialState::kRunning, rb = b->state == TrialState::kRunning;
    if (ra != rb) return ra;
    if (a->rung != b->rung) return a->rung > b->rung;
    return spec.Better(a->value, b->value);
  });
  char line[512];
  std::snprintf(line, sizeof(line), "  %-5s %-9s %4s %9s %9s  %s\n", "trial", "state", "rung", "step", spec.metric_field().c_str(), "params");
  out += line;
  for (size_t i = 0; i < rows.size() && i < max_rows; ++i) {
    const TrialResult& t = *rows[i];
    std::string params = FormatAssignment(t.params);
    if (params.size() > 90) params = params.substr(0, 87) + "...";
    std::snprintf(line, sizeof(line), "  %-5s %-9s %4s %9lld %9s  %s\n", TrialName(t.id).c_str(), TrialStateName(t.state),
                  t.rung < 0 ? "-" : std::to_string(t.rung).c_str(), static_cast<long long>(t.budget), Fixed(t.value).c_str(),
                  params.c_str());
    out += line;
  }
  if (rows.size() > max_rows) out += "  ... " + std::to_string(rows.size() - max_rows) + " more\n";
  return out;
}

const StudyClock& RealStudyClock() {
  static const RealClock* const clock = new RealClock;
  return *clock;
}

Result<StudyResult> RunStudy(const StudySpec& spec, const TunerOptions& options) {
  if (options.study_dir.empty()) return InvalidArgumentError("rectrain tune needs --study-dir DIR");
  if (!options.check) return InvalidArgumentError("RunStudy needs a config checker");
  return Study(spec, options).Run();
}

}  // namespace rectrain::tune

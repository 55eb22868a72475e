#include "rectrain/train/internal/progress.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "rectrain/train/internal/run_log.h"

namespace rectrain::train::internal {
namespace {

// The window of recent training predictions behind "train auc" (rank 0's rows).
constexpr size_t kWindowRows = size_t{1} << 17;

class Steady final : public Clock {
 public:
  double Now() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
};

}  // namespace

const Clock& SteadyClock() {
  static const Steady* const clock = new Steady;
  return *clock;
}

Progress::Progress(const Clock& clock, int classes, int64_t epochs, int64_t max_steps)
    : clock_(clock), classes_(classes), epochs_(epochs), max_steps_(max_steps) {
  window_probs_.assign(kWindowRows, 0.0f);
  window_labels_.assign(kWindowRows, 0.0f);
  clock_mark_ = bar_mark_ = report_mark_ = clock_.Now();
}

void Progress::StartClock() { clock_mark_ = clock_.Now(); }

void Progress::AddLoopTime() {
  const double now = clock_.Now();
  session_seconds_ += now - clock_mark_;
  clock_mark_ = now;
}

void Progress::OnStep(double loss, float lr, std::span<const float> probs, const data::Batch& batch,
                      int64_t global_rows) {
  loss_sum_ += loss;
  ++loss_count_;
  report_loss_sum_ += loss;
  ++report_loss_count_;
  last_loss_ = loss;
  last_lr_ = lr;
  // The recent predictions: probabilities (AUC so far), or for a classifier 1/0 for a correct
  // top class (accuracy so far).
  const size_t rows = static_cast<size_t>(batch.size);
  for (size_t i = 0; i < rows; ++i) {
    if (classes_ > 1) {
      const float* p = probs.data() + i * static_cast<size_t>(classes_);
      window_probs_[window_pos_] = static_cast<float>(std::max_element(p, p + classes_) - p) == batch.labels[i] ? 1.0f : 0.0f;
    } else {
      window_probs_[window_pos_] = probs[i];
    }
    window_labels_[window_pos_] = batch.labels[i];
    if (++window_pos_ == window_probs_.size()) {
      window_pos_ = 0;
      window_full_ = true;
    }
  }
  session_rows_ += global_rows;
  local_session_rows_ += batch.size;
  ++session_steps_;
}

void Progress::OnDivergedStep(double loss, float lr) {
  report_loss_sum_ += loss;
  ++report_loss_count_;
  last_lr_ = lr;
}

double Progress::TrainAuc(const ComputeContext& compute) const {
  const size_t wn = window_full_ ? window_probs_.size() : window_pos_;
  if (classes_ > 1) {
    if (wn == 0) return kNaN;
    double correct = 0;
    for (size_t i = 0; i < wn; ++i) correct += window_probs_[i];
    return correct / static_cast<double>(wn);
  }
  return ExactAuc(std::span<const float>(window_probs_.data(), wn), std::span<const float>(window_labels_.data(), wn),
                  compute);
}

double Progress::Fraction(const Position& at) const {
  // From rows (epochs) and steps (max_steps), whichever is further.
  double frac = 0;
  if (rows_per_epoch_ > 0) {
    const double in_epoch = std::min(0.999, static_cast<double>(at.rows_in_epoch) / static_cast<double>(rows_per_epoch_));
    frac = (static_cast<double>(at.epoch) + in_epoch) / static_cast<double>(epochs_);
  }
  if (max_steps_ > 0) frac = std::max(frac, static_cast<double>(at.step) / static_cast<double>(max_steps_));
  return std::clamp(frac, 0.0, 1.0);
}

double Progress::Eta(const Position& at) const {
  const double frac = Fraction(at);
  return frac > 0 && session_steps_ > 0 ? session_seconds_ * (1 - frac) / frac : NAN;
}

std::string Progress::StepLine(const Position& at, const ComputeContext& compute, const OnlineFigures* online) {
  const double rate = session_seconds_ > 0 ? static_cast<double>(session_rows_) / session_seconds_ : 0;
  const double mean_loss = loss_count_ ? loss_sum_ / static_cast<double>(loss_count_) : last_loss_;
  const double window_s = session_seconds_ - seconds_at_log_;
  const double window_rate = window_s > 0 ? static_cast<double>(session_rows_ - rows_at_log_) / window_s : rate;
  std::string quality = (classes_ > 1 ? " | train acc " : " | train auc ") + Fixed(TrainAuc(compute), 4);
  std::string tail = " | ETA " + FormatDuration(Eta(at));
  if (online != nullptr) {  // no end to estimate: how far behind the stream the model is
    const OnlineFigures& f = *online;
    quality = " | online auc " + Fixed(f.auc, 4) + " logloss " + Fixed(f.logloss, 4);
    tail = " | " + (std::isnan(f.event_lag_seconds) ? std::string("-") : Fixed(f.event_lag_seconds, 1) + "s") + " behind" +
           (f.lag_messages >= 0 ? ", lag " + FormatCount(static_cast<double>(f.lag_messages)) : std::string()) +
           (f.bad_messages > 0 ? ", " + std::to_string(f.bad_messages) + " bad" : std::string());
  }
  std::string line = "step " + std::to_string(at.step) + " | epoch " + std::to_string(at.epoch) + " | " +
                     FormatCount(static_cast<double>(at.rows_read_total)) + " rows | loss " + Fixed(mean_loss, 4) +
                     quality + " | lr " + Fixed(last_lr_, 6) + " | " + FormatCount(window_rate) + " samples/s" + tail;
  loss_sum_ = 0;
  loss_count_ = 0;
  rows_at_log_ = session_rows_;
  seconds_at_log_ = session_seconds_;
  return line;
}

std::string Progress::BarText(const Position& at, const ComputeContext& compute) const {
  const double rate = session_seconds_ > 0 ? static_cast<double>(session_rows_) / session_seconds_ : 0;
  const double frac = Fraction(at);
  const int width = 20;
  const int filled = static_cast<int>(frac * width);
  return "[" + std::string(filled, '=') + std::string(width - filled, ' ') + "] " +
         std::to_string(static_cast<int>(frac * 100)) + "% step " + std::to_string(at.step) + " | " + FormatCount(rate) +
         " samples/s | loss " + Fixed(last_loss_, 4) + (classes_ > 1 ? " | acc " : " | auc ") +
         Fixed(TrainAuc(compute), 4) + " | ETA " + FormatDuration(Eta(at));
}

bool Progress::BarDue() {
  const double now = clock_.Now();
  if (now - bar_mark_ <= 1.0) return false;
  bar_mark_ = now;
  return true;
}

void Progress::StartReports(double interval_s) {
  report_interval_s_ = interval_s;
  report_mark_ = clock_.Now();
}

bool Progress::ReportDue() const { return report_interval_s_ > 0 && clock_.Now() - report_mark_ >= report_interval_s_; }

ProgressInfo Progress::Report(ReportInputs in, bool log_line, const ComputeContext& compute) {
  ProgressInfo p;
  p.step = in.at.step;
  p.epoch = in.at.epoch;
  p.rows_read = in.at.rows_read_total;
  p.rows_rejected = in.rows_rejected;
  p.loss = report_loss_count_ ? report_loss_sum_ / static_cast<double>(report_loss_count_) : last_loss_;
  p.train_auc = TrainAuc(compute);
  const double window_s = session_seconds_ - seconds_at_report_;
  p.samples_per_sec = window_s > 0 ? static_cast<double>(session_rows_ - rows_at_report_) / window_s : 0;
  p.learning_rate = last_lr_;
  p.data_wait_seconds = in.data_wait_seconds;
  p.queue_depth = in.queue_depth;
  p.train_seconds = session_seconds_;
  p.tables = std::move(in.tables);
  p.ranks = std::move(in.ranks);
  p.log_line = log_line;
  report_loss_sum_ = 0;
  report_loss_count_ = 0;
  rows_at_report_ = session_rows_;
  seconds_at_report_ = session_seconds_;
  step_at_report_ = in.at.step;
  report_mark_ = clock_.Now();
  return p;
}

void Progress::StartEpoch(double data_wait_seconds) {
  epoch_start_wait_ = data_wait_seconds;
  epoch_start_seconds_ = session_seconds_;
  epoch_start_rows_ = session_rows_;
}

std::string Progress::EpochLine(int64_t finished_epoch, int64_t step, double data_wait_seconds, bool in_memory) const {
  const double seconds = session_seconds_ - epoch_start_seconds_;
  const double rate = seconds > 0 ? static_cast<double>(session_rows_ - epoch_start_rows_) / seconds : 0;
  return "epoch " + std::to_string(finished_epoch) + " done at step " + std::to_string(step) + " (this session: data wait " +
         Fixed(data_wait_seconds - epoch_start_wait_, 2) + "s, " + FormatCount(rate) + " samples/s" +
         (in_memory ? ", data.train in memory" : "") + ")";
}

}  // namespace rectrain::train::internal

#include "rectrain/tune/scheduler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace rectrain::tune {
namespace {

std::string Fixed(double v, int digits = 5) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

class FifoScheduler : public Scheduler {
 public:
  explicit FifoScheduler(const StudySpec& spec) : spec_(spec) {}
  int64_t FirstBudget() const override { return spec_.scheduler.max_budget; }
  std::vector<int64_t> Rungs() const override {
    if (spec_.scheduler.max_budget > 0) return {spec_.scheduler.max_budget};
    return {};
  }
  Decision OnResult(int, int64_t, double) override { return {}; }
  Decision OnBudgetDone(int trial, int64_t budget, double, bool complete) override {
    done_.insert(trial);
    return {Decision::Action::kDone, complete ? "ran to the end of its training config" :
                                                "ran its full budget (" + std::to_string(budget) + " " +
                                                    BudgetUnitName(spec_.scheduler.unit) + ")"};
  }
  void OnGone(int) override {}
  std::optional<Promotion> Promote() override { return std::nullopt; }
  void MarkPromoted(int, int) override {}
  int RungOf(int trial) const override { return done_.count(trial) ? 0 : -1; }
  std::string StoppedReason(int) const override { return ""; }

 protected:
  const StudySpec& spec_;
  std::set<int> done_;
};

class MedianScheduler : public FifoScheduler {
 public:
  using FifoScheduler::FifoScheduler;
  Decision OnResult(int trial, int64_t budget, double value) override {
    auto& mine = history_[trial];
    mine.emplace_back(budget, value);
    if (budget < spec_.scheduler.grace || !std::isfinite(value)) return {};
    // Other trials' running averages over their results up to this budget, among those that
    // got at least this far.
    std::vector<double> averages;
    for (const auto& [other, points] : history_) {
      if (other == trial || gone_.count(other) || points.empty() || points.back().first < budget) continue;
      double sum = 0;
      int n = 0;
      for (const auto& [b, v] : points) {
        if (b <= budget && std::isfinite(v)) sum += v, ++n;
      }
      if (n > 0) averages.push_back(sum / n);
    }
    if (static_cast<int64_t>(averages.size()) < spec_.scheduler.min_trials) return {};
    std::sort(averages.begin(), averages.end());
    const size_t m = averages.size();
    const double median = m % 2 ? averages[m / 2] : 0.5 * (averages[m / 2 - 1] + averages[m / 2]);
    double best = mine.front().second;
    for (const auto& [b, v] : mine) {
      if (spec_.Better(v, best)) best = v;
    }
    if (spec_.Better(median, best)) {
      gone_.insert(trial);
      return {Decision::Action::kStop, "median rule at " + std::to_string(budget) + " " + BudgetUnitName(spec_.scheduler.unit) +
                                           ": best " + spec_.metric + " " + Fixed(best) + " is worse than the median " +
                                           Fixed(median) + " of " + std::to_string(m) + " other trials' running averages"};
    }
    return {};
  }
  void OnGone(int trial) override { gone_.insert(trial); }

 private:
  std::map<int, std::vector<std::pair<int64_t, double>>> history_;
  std::set<int> gone_;
};

class AshaScheduler : public Scheduler {
 public:
  explicit AshaScheduler(const StudySpec& spec) : spec_(spec) {
    const auto& s = spec.scheduler;
    for (double b = static_cast<double>(s.grace); std::llround(b) < s.max_budget; b *= s.reduction) {
      const int64_t r = std::llround(b);
      if (rungs_.empty() || r > rungs_.back()) rungs_.push_back(r);
    }
    rungs_.push_back(s.max_budget);
    results_.resize(rungs_.size());
    promoted_.resize(rungs_.size());
  }

  int64_t FirstBudget() const override { return rungs_[0]; }
  std::vector<int64_t> Rungs() const override { return rungs_; }
  Decision OnResult(int, int64_t, double) override { return {}; }

  Decision OnBudgetDone(int trial, int64_t budget, double value, bool complete) override {
    // The rung this launch was for: the highest whose budget it reached.
    int rung = -1;
    for (size_t k = 0; k < rungs_.size(); ++k) {
      if (budget >= rungs_[k]) rung = static_cast<int>(k);
    }
    const std::string unit = BudgetUnitName(spec_.scheduler.unit);
    if (rung < 0 && !complete) {
      return {Decision::Action::kDone, "ended at " + std::to_string(budget) + " " + unit + ", before the first rung"};
    }
    if (rung >= 0) results_[static_cast<size_t>(rung)][trial] = value;
    rung_of_[trial] = rung;
    if (complete) return {Decision::Action::kDone, "ran to the end of its training config (" + std::to_string(budget) + " " + unit + ")"};
    if (rung + 1 == static_cast<int>(rungs_.size())) {
      return {Decision::Action::kDone, "reached the top rung (" + std::to_string(budget) + " " + unit + ")"};
    }
    const auto& here = results_[static_cast<size_t>(rung)];
    return {Decision::Action::kPause, "paused at rung " + std::to_string(rung) + " (" + std::to_string(rungs_[static_cast<size_t>(rung)]) +
                                          " " + unit + "): " + spec_.metric + " " + Fixed(value) + ", rank " +
                                          std::to_string(RankAt(static_cast<size_t>(rung), trial)) + " of " +
                                          std::to_string(here.size()) + " there"};
  }

  void OnGone(int trial) override { gone_.insert(trial); }

  std::optional<Promotion> Promote() override {
    for (int k = static_cast<int>(rungs_.size()) - 2; k >= 0; --k) {
      const auto ranked = Ranked(static_cast<size_t>(k));
      const size_t top = static_cast<size_t>(std::floor(static_cast<double>(ranked.size()) / spec_.scheduler.reduction));
      for (size_t i = 0; i < top; ++i) {
        const int t = ranked[i];
        if (promoted_[static_cast<size_t>(k)].count(t) || gone_.count(t) || rung_of_[t] != k) continue;
        MarkPromoted(t, k + 1);
        return Promotion{t, k + 1, rungs_[static_cast<size_t>(k + 1)]};
      }
    }
    return std::nullopt;
  }

  void MarkPromoted(int trial, int rung) override {
    if (rung >= 1 && rung < static_cast<int>(rungs_.size())) promoted_[static_cast<size_t>(rung - 1)].insert(trial);
  }

  int RungOf(int trial) const override {
    auto it = rung_of_.find(trial);
    return it == rung_of_.end() ? -1 : it->second;
  }

  std::string StoppedReason(int trial) const override {
    const int k = RungOf(trial);
    if (k < 0) return "stopped before the first rung";
    const auto& here = results_[static_cast<size_t>(k)];
    const size_t top = static_cast<size_t>(std::floor(static_cast<double>(here.size()) / spec_.scheduler.reduction));
    return "stopped at rung " + std::to_string(k) + " (" + std::to_string(rungs_[static_cast<size_t>(k)]) + " " +
           BudgetUnitName(spec_.scheduler.unit) + "): rank " + std::to_string(RankAt(static_cast<size_t>(k), trial)) + " of " +
           std::to_string(here.size()) + ", outside the top " + std::to_string(top) + " (1/" + Fixed(spec_.scheduler.reduction, 0) +
           ") promoted";
  }

 private:
  // Trials with a result at rung k, best first (ties: the earlier trial).
  std::vector<int> Ranked(size_t k) const {
    std::vector<std::pair<double, int>> v;
    for (const auto& [t, value] : results_[k]) v.emplace_back(value, t);
    std::stable_sort(v.begin(), v.end(), [&](const auto& a, const auto& b) {
      if (spec_.Better(a.first, b.first)) return true;
      if (spec_.Better(b.first, a.first)) return false;
      return a.second < b.second;
    });
    std::vector<int> out;
    for (const auto& [value, t] : v) out.push_back(t);
    return out;
  }
  size_t RankAt(size_t k, int trial) const {
    const auto r = Ranked(k);
    return static_cast<size_t>(std::find(r.begin(), r.end(), trial) - r.begin()) + 1;
  }

  const StudySpec& spec_;
  std::vector<int64_t> rungs_;
  std::vector<std::map<int, double>> results_;  // per rung: trial -> metric at that rung
  std::vector<std::set<int>> promoted_;         // per rung: trials promoted out of it
  std::map<int, int> rung_of_;
  std::set<int> gone_;
};

}  // namespace

std::unique_ptr<Scheduler> MakeScheduler(const StudySpec& spec) {
  switch (spec.scheduler.kind) {
    case SchedulerKind::kAsha: return std::make_unique<AshaScheduler>(spec);
    case SchedulerKind::kMedian: return std::make_unique<MedianScheduler>(spec);
    case SchedulerKind::kFifo: break;
  }
  return std::make_unique<FifoScheduler>(spec);
}

}  // namespace rectrain::tune

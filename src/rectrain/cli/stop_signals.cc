#include "rectrain/cli/stop_signals.h"

#include <pthread.h>
#include <signal.h>

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace rectrain::cli {
namespace {

// SIGUSR1 asks what SIGTERM asks, and reads as SIGTERM (stop_signals.h).
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGUSR1};
constexpr int kNumStopSignals = 3;

int IndexOf(int sig) {
  for (int i = 0; i < kNumStopSignals; ++i) {
    if (kStopSignals[i] == sig) return i;
  }
  return 0;
}

// Never destroyed: the watcher may still run while static destructors do at exit.
struct Watcher {
  std::mutex mu;
  std::condition_variable arrived;
  bool graceful = false;  // guarded by mu
  std::string note;       // guarded by mu
  std::atomic<int> first{0};
  bool ignored_at_start[kNumStopSignals] = {};
};

Watcher& State() {
  static Watcher* const watcher = new Watcher;
  return *watcher;
}

sigset_t StopSet() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kStopSignals) sigaddset(&set, sig);
  return set;
}

// What the signal would have done without rectrain: ends the process (default action), or
// nothing when the disposition at start was to ignore it (e.g. SIGINT of a background job).
void ActAsUnhandled(int sig, bool ignored_at_start) {
  if (ignored_at_start) return;
  signal(sig, SIG_DFL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
  raise(sig);  // to this thread; the default action ends the whole process
}

void WatchLoop() {
  Watcher& w = State();
  const sigset_t set = StopSet();
  for (;;) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) continue;
    const bool ignored = w.ignored_at_start[IndexOf(sig)];
    std::unique_lock<std::mutex> lock(w.mu);
    if (w.first.load() == 0 && w.graceful) {
      w.first.store(sig == SIGUSR1 ? SIGTERM : sig);
      if (!w.note.empty()) {
        std::fprintf(stderr, "%s\n", w.note.c_str());
        std::fflush(stderr);  // a second signal may end the process before exit flushes it
      }
      lock.unlock();
      w.arrived.notify_all();
      continue;
    }
    lock.unlock();
    ActAsUnhandled(sig, ignored);
  }
}

}  // namespace

void StartStopSignalWatcher() {
  Watcher& w = State();
  for (int i = 0; i < kNumStopSignals; ++i) {
    struct sigaction old {};
    sigaction(kStopSignals[i], nullptr, &old);
    w.ignored_at_start[i] = old.sa_handler == SIG_IGN;
  }
  const sigset_t set = StopSet();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread(WatchLoop).detach();
}

const std::atomic<int>* EnableGracefulStop(std::string note) {
  Watcher& w = State();
  std::lock_guard<std::mutex> lock(w.mu);
  w.graceful = true;
  w.note = std::move(note);
  return &w.first;
}

int WaitForStopSignal() {
  Watcher& w = State();
  std::unique_lock<std::mutex> lock(w.mu);
  w.arrived.wait(lock, [&] { return w.first.load() != 0; });
  return w.first.load();
}

}  // namespace rectrain::cli

#include "rectrain/cli/stop_signals.h"

#include <dirent.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace rectrain::cli {
namespace {

// The bits of a /proc status mask line ("SigBlk:\t0000000000004002") for `sig`.
bool MaskHas(const std::string& status_file, const std::string& key, int sig) {
  std::ifstream in(status_file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) != 0) continue;
    const uint64_t mask = std::strtoull(line.c_str() + key.size() + 1, nullptr, 16);
    return (mask >> (sig - 1)) & 1;
  }
  return false;
}

// Runs `child` in a forked process that reports readiness on a pipe; returns the child's pid
// and the pipe's read end. The child writes one byte when ready, then more as `child` wishes.
struct Child {
  pid_t pid = -1;
  int from_child = -1;
};
Child Fork(const std::function<void(int to_parent)>& child) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    child(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  return {pid, fds[0]};
}

char ReadByte(int fd) {
  char c = 0;
  return read(fd, &c, 1) == 1 ? c : '\0';
}

int WaitStatus(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

// Waits for the child; it must have been ended by `sig`.
void ExpectEndedBy(pid_t pid, int sig) {
  const int status = WaitStatus(pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), sig);
}

void SleepForever() {
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

// A child that runs `before_watcher` (if any), starts the watcher without asking it for a
// graceful stop, says it is ready and sleeps until a signal ends it.
Child ForkIdleWatcher(void (*before_watcher)() = nullptr) {
  return Fork([before_watcher](int out) {
    if (before_watcher != nullptr) before_watcher();
    StartStopSignalWatcher();
    (void)!write(out, "r", 1);
    SleepForever();
  });
}

TEST(StopSignalsTest, GracefulStopSetsTheFlagAndASecondSignalEndsTheProcess) {
  const std::string err_file = testing::TempDir() + "/stop_signals_note.err";
  Child c = Fork([&](int out) {
    if (std::freopen(err_file.c_str(), "w", stderr) == nullptr) _exit(3);
    StartStopSignalWatcher();
    const std::atomic<int>* flag = EnableGracefulStop("note: stopping");
    (void)!write(out, "r", 1);
    while (flag->load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const char got = static_cast<char>('0' + flag->load());  // SIGTERM 15 -> '?'
    (void)!write(out, &got, 1);
    SleepForever();
  });
  ASSERT_GT(c.pid, 0);
  ASSERT_EQ(ReadByte(c.from_child), 'r');
  kill(c.pid, SIGTERM);
  EXPECT_EQ(ReadByte(c.from_child), static_cast<char>('0' + SIGTERM));
  kill(c.pid, SIGTERM);  // the second one ends it at once
  ExpectEndedBy(c.pid, SIGTERM);
  close(c.from_child);
  std::ifstream err(err_file);
  const std::string printed((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  EXPECT_EQ(printed, "note: stopping\n");  // the note, once, on the first signal only
}

// SIGUSR1 (what mpirun forwards at once, unlike its own SIGTERM) asks for the same stop as SIGTERM
// and reads as SIGTERM.
TEST(StopSignalsTest, SigusrOneStopsAsSigterm) {
  Child c = Fork([](int out) {
    StartStopSignalWatcher();
    (void)!write(out, "r", 1);
    _exit(WaitForStopSignal());
  });
  ASSERT_GT(c.pid, 0);
  ASSERT_EQ(ReadByte(c.from_child), 'r');
  kill(c.pid, SIGUSR1);
  ExpectEndedBy(c.pid, SIGUSR1);  // no graceful stop asked: its default action, as before
  close(c.from_child);

  c = Fork([](int out) {
    StartStopSignalWatcher();
    EnableGracefulStop("");
    (void)!write(out, "r", 1);
    _exit(WaitForStopSignal());
  });
  ASSERT_GT(c.pid, 0);
  ASSERT_EQ(ReadByte(c.from_child), 'r');
  kill(c.pid, SIGUSR1);
  const int status = WaitStatus(c.pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), SIGTERM);
  close(c.from_child);
}

TEST(StopSignalsTest, WithoutAGracefulStopASignalEndsTheProcessAsBefore) {
  Child c = ForkIdleWatcher();
  ASSERT_GT(c.pid, 0);
  ASSERT_EQ(ReadByte(c.from_child), 'r');
  kill(c.pid, SIGINT);
  ExpectEndedBy(c.pid, SIGINT);
  close(c.from_child);
}

TEST(StopSignalsTest, WaitForStopSignalReturnsTheSignal) {
  int to_child[2];
  ASSERT_EQ(pipe(to_child), 0);
  Child c = Fork([&](int out) {
    close(to_child[1]);
    StartStopSignalWatcher();
    EnableGracefulStop("");  // as serve and ui do before they load
    (void)!write(out, "r", 1);
    // The parent says "sent" after kill() returned: the signal was generated before the wait
    // starts, so it must be kept for it, not acted on.
    if (ReadByte(to_child[0]) != 's') _exit(3);
    _exit(WaitForStopSignal());
  });
  close(to_child[0]);
  ASSERT_GT(c.pid, 0);
  ASSERT_EQ(ReadByte(c.from_child), 'r');
  kill(c.pid, SIGINT);
  ASSERT_EQ(write(to_child[1], "s", 1), 1);
  close(to_child[1]);
  const int status = WaitStatus(c.pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), SIGINT);
  close(c.from_child);
}

TEST(StopSignalsTest, ASignalIgnoredAtStartStaysIgnored) {
  // SIGINT ignored at start, as for a background job of a non-interactive shell.
  Child c = ForkIdleWatcher([] { signal(SIGINT, SIG_IGN); });
  ASSERT_GT(c.pid, 0);
  ASSERT_EQ(ReadByte(c.from_child), 'r');
  // Both are pending together; Linux hands the lower-numbered one out first, so were SIGINT
  // acted on it would end the process before SIGTERM is looked at.
  kill(c.pid, SIGINT);
  kill(c.pid, SIGTERM);
  ExpectEndedBy(c.pid, SIGTERM);
  close(c.from_child);
}

// The point of the design: no thread runs a handler for them (none is installed), and every
// thread but the watcher blocks both, so no signal frame is ever written on a thread's stack (a
// JIT kernel may have pointed rsp into the heap). The watcher shows them unblocked only while
// it sits in sigwait (rt_sigtimedwait), which takes a signal without a frame.
struct ThreadCounts {
  int threads = 0;
  int blocking = 0;  // with SIGINT and SIGTERM blocked
  int waiting = 0;   // not blocking them, and in sigwait (rt_sigtimedwait)
};

ThreadCounts CountThreads() {
  ThreadCounts n;
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return n;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const std::string task = std::string("/proc/self/task/") + e->d_name;
    ++n.threads;
    if (MaskHas(task + "/status", "SigBlk", SIGINT) && MaskHas(task + "/status", "SigBlk", SIGTERM)) {
      ++n.blocking;
    } else {
      std::ifstream syscall(task + "/syscall");
      long number = -1;
      syscall >> number;
      n.waiting += number == SYS_rt_sigtimedwait;
    }
  }
  closedir(d);
  return n;
}

TEST(StopSignalsTest, NoThreadRunsAHandlerForThem) {
  Child c = Fork([](int out) {
    StartStopSignalWatcher();
    EnableGracefulStop("");
    std::thread a(SleepForever), b(SleepForever);  // tasks with their masks once constructed
    a.detach();
    b.detach();
    const bool no_handler =
        !MaskHas("/proc/self/status", "SigCgt", SIGINT) && !MaskHas("/proc/self/status", "SigCgt", SIGTERM);
    // The watcher may not have reached sigwait yet: count again until it has (10 s at most).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    ThreadCounts n = CountThreads();
    while (n.waiting == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
      n = CountThreads();
    }
    if (std::getenv("STOP_SIGNALS_TEST_DEBUG")) {
      std::fprintf(stderr, "handler %d threads %d blocking %d in sigwait %d\n", !no_handler, n.threads, n.blocking,
                   n.waiting);
    }
    // main, the watcher, a, b
    (void)!write(out, no_handler && n.threads == 4 && n.blocking == 3 && n.waiting == 1 ? "y" : "n", 1);
  });
  ASSERT_GT(c.pid, 0);
  EXPECT_EQ(ReadByte(c.from_child), 'y') << "run with STOP_SIGNALS_TEST_DEBUG=1 for the counts";
  const int status = WaitStatus(c.pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  close(c.from_child);
}

}  // namespace
}  // namespace rectrain::cli

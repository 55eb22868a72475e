// tests/process_util.h: the end-to-end tests' child processes (rectrain, prometheus,
// alertmanager) and their ports (FreePort: rectrain/testing/free_port.h), a spawned process with
// its output in a log file, a wait with a deadline, SIGTERM and reap, and the text substitution
// that points a shipped config at them.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "rectrain/testing/free_port.h"

namespace rectrain::testing {

inline std::string ReplaceAll(std::string s, const std::string& from, const std::string& to) {
  size_t pos = 0;
  while ((pos = s.find(from, pos)) != std::string::npos) {
    s.replace(pos, from.size(), to);
    pos += to.size();
  }
  return s;
}

// Starts argv (argv[0] a path) with its stderr and stdout in `log`.
inline pid_t Spawn(const std::vector<std::string>& argv_in, const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    FILE* e = freopen(log.c_str(), "w", stderr);
    (void)e;
    dup2(2, 1);
    std::vector<char*> argv;
    for (const auto& a : argv_in) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

// Waits for `pid` up to `timeout`: its exit code, 128 + the signal that ended it, or -1 while it
// still runs (polled every 20 ms).
inline int WaitFor(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (std::chrono::steady_clock::now() > deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// SIGTERM and wait (a pid <= 0 is ignored).
inline void Stop(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
}

}  // namespace rectrain::testing

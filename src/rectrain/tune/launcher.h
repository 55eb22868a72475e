// rectrain/tune/launcher.h: starts trial processes. The tuner knows a trial only as a command
// (`rectrain train ...`), a directory and a log file; how it runs is the launcher's business:
//   LocalLauncher     a child process of the tuner
//   TemplateLauncher  a shell command line from a template, e.g. "srun -N1 -n2 {cmd}" or
//                     "mpirun -np 2 -H {host} {cmd}", so the cluster's own scheduler places it
// Either way the process leads its own process group (signals reach everything it started),
// its stdout and stderr go to the log file, and it gets SIGTERM when the tuner dies (so a
// killed tuner leaves checkpoints, not orphans; --resume also ends any survivor by its pid).
// Thread safety: one thread.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rectrain/base/result.h"

namespace rectrain::tune {

struct LaunchRequest {
  std::vector<std::string> argv;  // the training command; argv[0] an executable path
  std::string dir;                // the trial directory
  std::string log_path;           // stdout + stderr (appended)
  int trial = 0;
  int slot = 0;                   // 0 .. concurrency-1
  int64_t threads = 1;
};

struct ExitInfo {
  int exit_code = 0;  // when !signaled
  int signal = 0;     // when signaled
  bool signaled = false;
  std::string Describe() const;  // "exit code 1", "killed by SIGKILL"
};

// A started trial. The launchers below return child processes (reaped, if they already ended,
// when the object goes); a test's launcher may return anything that answers these calls.
class TrialProcess {
 public:
  virtual ~TrialProcess() = default;
  // The process id the journal records (to end a survivor on --resume); 0 when there is none.
  virtual pid_t pid() const = 0;
  // The exit once the process ended, nullopt while it runs.
  virtual std::optional<ExitInfo> Poll() = 0;
  // Sends `sig` to the process group.
  virtual void Signal(int sig) = 0;
};

class Launcher {
 public:
  virtual ~Launcher() = default;
  virtual Result<std::unique_ptr<TrialProcess>> Start(const LaunchRequest& request) = 0;
  // The command line actually run, for logs ("" for the local launcher: argv itself).
  virtual std::string Describe(const LaunchRequest& request) const = 0;
};

std::unique_ptr<Launcher> MakeLocalLauncher();
// `command_template` holds {cmd}; also {trial}, {slot}, {threads}, {dir}, {host}.
std::unique_ptr<Launcher> MakeTemplateLauncher(std::string command_template, std::vector<std::string> hosts);

// `s` quoted for a POSIX shell (unchanged when it needs no quotes).
std::string ShellQuote(const std::string& s);

// Whether a process with this pid exists (a zombie counts as gone).
bool ProcessAlive(pid_t pid);

}  // namespace rectrain::tune

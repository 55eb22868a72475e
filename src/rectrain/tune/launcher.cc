#include "rectrain/tune/launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace rectrain::tune {
namespace {

// A child process leading its own process group (Spawn).
class ChildProcess final : public TrialProcess {
 public:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  ~ChildProcess() override {
    if (!exit_) Poll();  // reaps the child if it already ended (never blocks)
  }
  pid_t pid() const override { return pid_; }
  std::optional<ExitInfo> Poll() override;
  void Signal(int sig) override {
    if (kill(-pid_, sig) != 0) kill(pid_, sig);
  }

 private:
  pid_t pid_;
  std::optional<ExitInfo> exit_;
};

std::optional<ExitInfo> ChildProcess::Poll() {
  if (exit_) return exit_;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == 0) return std::nullopt;
  ExitInfo e;
  if (r < 0) {
    e.exit_code = 255;  // not our child any more (cannot happen in the tuner): report it ended
  } else if (WIFSIGNALED(status)) {
    e.signaled = true;
    e.signal = WTERMSIG(status);
  } else {
    e.exit_code = WEXITSTATUS(status);
  }
  exit_ = e;
  return exit_;
}

// fork + exec with the child leading its own process group, its output in the log and
// SIGTERM on the tuner's death. Everything the child touches is prepared before fork (the
// tuner has threads: only async-signal-safe calls between fork and exec).
Result<std::unique_ptr<TrialProcess>> Spawn(const std::vector<std::string>& argv, const std::string& log_path) {
  if (argv.empty()) return InvalidArgumentError("empty trial command");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return PermissionDeniedError("cannot open the trial log " + log_path + ": " + std::strerror(errno));
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    ::close(log_fd);
    return ResourceExhaustedError(std::string("cannot start a trial process: fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    setpgid(0, 0);
    // The tuner blocks SIGINT/SIGTERM in every thread (cli/stop_signals.h); a blocked mask
    // survives exec, and the trial must be stoppable.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(143);  // the tuner died before prctl took effect
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, 0);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    execv(args[0], args.data());
    const char msg[] = "rectrain tune: cannot execute the trial command\n";
    (void)!write(2, msg, sizeof(msg) - 1);
    _exit(127);
  }
  setpgid(pid, pid);  // also from the parent, so Signal() works before the child ran
  ::close(log_fd);
  return std::unique_ptr<TrialProcess>(std::make_unique<ChildProcess>(pid));
}

std::string Joined(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + ShellQuote(a);
  return out;
}

class LocalLauncher : public Launcher {
 public:
  Result<std::unique_ptr<TrialProcess>> Start(const LaunchRequest& r) override { return Spawn(r.argv, r.log_path); }
  std::string Describe(const LaunchRequest& r) const override { return Joined(r.argv); }
};

class TemplateLauncher : public Launcher {
 public:
  TemplateLauncher(std::string t, std::vector<std::string> hosts) : template_(std::move(t)), hosts_(std::move(hosts)) {}
  Result<std::unique_ptr<TrialProcess>> Start(const LaunchRequest& r) override {
    return Spawn({"/bin/sh", "-c", Describe(r)}, r.log_path);
  }
  std::string Describe(const LaunchRequest& r) const override {
    std::string out;
    for (size_t i = 0; i < template_.size();) {
      if (template_[i] == '{') {
        const size_t close = template_.find('}', i);
        if (close != std::string::npos) {
          const std::string name = template_.substr(i + 1, close - i - 1);
          std::optional<std::string> v;
          if (name == "cmd") v = Joined(r.argv);
          if (name == "trial") v = std::to_string(r.trial);
          if (name == "slot") v = std::to_string(r.slot);
          if (name == "threads") v = std::to_string(r.threads);
          if (name == "dir") v = ShellQuote(r.dir);
          if (name == "host" && !hosts_.empty()) v = ShellQuote(hosts_[static_cast<size_t>(r.slot) % hosts_.size()]);
          if (v) {
            out += *v;
            i = close + 1;
            continue;
          }
        }
      }
      out += template_[i++];
    }
    return out;
  }

 private:
  std::string template_;
  std::vector<std::string> hosts_;
};

}  // namespace

std::string ExitInfo::Describe() const {
  if (!signaled) return "exit code " + std::to_string(exit_code);
  const char* name = sigabbrev_np(signal);
  return std::string("killed by SIG") + (name != nullptr ? name : std::to_string(signal).c_str());
}

std::unique_ptr<Launcher> MakeLocalLauncher() { return std::make_unique<LocalLauncher>(); }

std::unique_ptr<Launcher> MakeTemplateLauncher(std::string command_template, std::vector<std::string> hosts) {
  return std::make_unique<TemplateLauncher>(std::move(command_template), std::move(hosts));
}

std::string ShellQuote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") ==
                        std::string::npos) {
    return s;
  }
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

bool ProcessAlive(pid_t pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0) return errno == EPERM;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const size_t close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 'Z';
}

}  // namespace rectrain::tune

#include "rectrain/cli/process_env.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>

namespace rectrain::cli {

std::string EnvString(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

void ReexecWithComputePoolEnv(char** argv) {
  if (std::getenv("GOMP_SPINCOUNT") != nullptr || std::getenv("OMP_WAIT_POLICY") != nullptr ||
      std::getenv("RECTRAIN_KEEP_OMP_ENV") != nullptr) {
    return;
  }
  // ~10 µs of spinning before a waiting thread sleeps (see the header for why).
  setenv("GOMP_SPINCOUNT", "10000", /*overwrite=*/0);
  setenv("RECTRAIN_KEEP_OMP_ENV", "1", /*overwrite=*/0);  // the child must not re-exec again
  execv("/proc/self/exe", argv);
  // execv only returns on failure; carry on with the runtime's defaults.
}

void RaiseOpenFileLimit() {
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur >= files.rlim_max) return;
  files.rlim_cur = files.rlim_max;
  setrlimit(RLIMIT_NOFILE, &files);  // on failure the server's own check names the limit
}

}  // namespace rectrain::cli

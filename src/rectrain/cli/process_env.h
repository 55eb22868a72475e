// rectrain/cli/process_env.h: process-wide settings that must be in the environment before the
// OpenMP runtime (our compute pool, decision 0002) loads.
// Thread safety: call once, first thing in main(), before any other thread exists.
#pragma once

#include <string>

namespace rectrain::cli {

// The environment variable `name` ("" when unset). The CLI is where rectrain reads its
// environment ($RECTRAIN_TRACKING_STORE, $RECTRAIN_METRICS_TOKEN, ...); libraries get the values
// as arguments.
std::string EnvString(const char* name);

// libgomp reads its spin policy only from the environment when the library loads. Its default
// spins ~300k iterations at every barrier, which is right for a dedicated machine but stalls
// whole steps on 2 cores whenever the data reader (or anything else) takes a core: the spinning
// thread holds the CPU the preempted one needs. Unless the user already chose (GOMP_SPINCOUNT,
// OMP_WAIT_POLICY, or RECTRAIN_KEEP_OMP_ENV set), this sets GOMP_SPINCOUNT to a short spin and
// re-executes /proc/self/exe with the same arguments. Measured in docs/benchmarks.md. Returns
// normally when no re-exec is needed or it failed (then the defaults stay).
void ReexecWithComputePoolEnv(char** argv);

// Raises the soft limit on open files to the hard one (as Go's runtime and nginx do), so that a
// server's connection cap (--max-connections, one descriptor each) fits under it: Debian's
// default soft limit is 1024. For `rectrain serve` and `rectrain ui`, before the server starts.
void RaiseOpenFileLimit();

}  // namespace rectrain::cli

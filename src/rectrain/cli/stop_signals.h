// rectrain/cli/stop_signals.h: SIGINT and SIGTERM of the rectrain process. They are blocked in
// every thread and taken by one watcher thread with sigwait(); no thread ever runs a handler.
//
// Why no handler (docs/decisions/0006-stop-signals-without-handlers.md): a handler runs on the
// stack of whichever thread the signal interrupts. Debian 12's oneDNN (2.7) points rsp into a
// heap workspace while its JIT sgemm kernels run (oneDNN issue #4845, fixed upstream in 3.11),
// so a handler's frame landed in the heap: about 1 SIGTERM in 200 during training corrupted it
// (glibc "corrupted size vs. prev_size", or a crash in SQLite at exit).
//
// Use:
//   - main() calls StartStopSignalWatcher() before any other thread starts; every thread created
//     later inherits the blocked mask. Until a command asks for more, a signal ends the process
//     as its disposition at start would have (the default action, or nothing if it was ignored).
//   - train, tune, quickstart: EnableGracefulStop() returns the flag the first signal sets (the
//     signal's number; a note goes to stderr); a second signal ends the process at once.
//   - serve, ui: WaitForStopSignal() blocks until a signal arrives and returns its number.
// A child process must not inherit the blocked mask: the code that forks (tune/launcher.cc) or
// spawns (train/run_recorder.cc) clears it in the child.
//
// Thread safety: StartStopSignalWatcher() once, from main() before other threads; the others
// from any thread after it.
#pragma once

#include <atomic>

namespace rectrain::cli {

void StartStopSignalWatcher();

// The stop flag: 0 until the first SIGINT/SIGTERM, then that signal's number.
const std::atomic<int>* EnableGracefulStop();

// Blocks until the first SIGINT/SIGTERM (returns at once if one has arrived); its number.
int WaitForStopSignal();

}  // namespace rectrain::cli

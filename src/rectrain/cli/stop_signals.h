// rectrain/cli/stop_signals.h: SIGINT, SIGTERM and SIGUSR1 of the rectrain process. They are
// blocked in every thread and taken by one watcher thread with sigwait(); no thread ever runs a
// handler.
//
// SIGUSR1 asks for the same stop as SIGTERM and reads as SIGTERM (the flag holds SIGTERM, the
// exit status is 143): OpenMPI's mpirun forwards SIGUSR1 to every rank at once, but answers a
// SIGTERM of its own by killing the ranks (SIGTERM, then SIGKILL one second later), too soon
// for a checkpoint. So a job under mpirun is stopped with `kill -USR1 <mpirun>`, or through
// deploy/mpi/rectrain-mpirun, which relays a SIGTERM as SIGUSR1 (docs/scaling.md).
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
//   - A command that stops cleanly calls EnableGracefulStop(note) as early as it can: from then
//     on the first signal sets the returned flag (the signal's number) and prints `note` on
//     stderr; a second signal ends the process at once. train, tune and quickstart poll the
//     flag; serve and ui block in WaitForStopSignal().
// A child process must not inherit the blocked mask: the code that forks (tune/launcher.cc) or
// spawns (train/run_recorder.cc) clears it in the child.
//
// Thread safety: StartStopSignalWatcher() once, from main() before other threads; the others
// from any thread after it.
#pragma once

#include <atomic>
#include <string>

namespace rectrain::cli {

void StartStopSignalWatcher();

// The note of train/tune/quickstart when the first signal arrives. Training stops after the
// current step with a checkpoint; before its first step there is nothing to save, so the run
// stops at the next phase of its setup (config, tracking, data check, model) instead.
inline constexpr char kCheckpointStopNote[] =
    "\nrectrain: stopping after the current step with a checkpoint, or before the first step with "
    "nothing to save (signal again to abort at once)";

// The stop flag: 0 until the first SIGINT/SIGTERM/SIGUSR1, then that signal's number (SIGTERM
// for SIGUSR1). `note` (one
// line, without the newline; empty: nothing) goes to stderr when that signal arrives.
const std::atomic<int>* EnableGracefulStop(std::string note);

// Blocks until the first SIGINT/SIGTERM after EnableGracefulStop (returns at once if one has
// arrived); its number. Without EnableGracefulStop a signal takes its default action instead.
int WaitForStopSignal();

}  // namespace rectrain::cli

// rectrain/cli/exit_codes.h: the one table mapping a Status to the process exit code, a label
// and a hint, and the one function that prints an error. Documented in docs/cli.md.
// Thread safety: pure functions (Report writes to stderr).
#pragma once

#include <string_view>

#include "rectrain/base/status.h"

namespace rectrain::cli {

struct ExitInfo {
  int exit_code;
  std::string_view hint;  // printed after the message; may be empty
};

ExitInfo ExitInfoFor(StatusCode code);

// Prints "rectrain <command>: error: <message>" and "hint: <hint>" to stderr (no hint for a bad
// row, whose message names its own fix, data.max_bad_rows); returns the exit code. `status` must
// not be OK.
int ReportError(std::string_view command, const Status& status);

// Exit codes for a run stopped by a signal: 128 + signal (SIGINT 130, SIGTERM 143).
inline int SignalExitCode(int signal_number) { return 128 + signal_number; }

}  // namespace rectrain::cli

#include "rectrain/cli/exit_codes.h"

#include <cstdio>
#include <string>

namespace rectrain::cli {

ExitInfo ExitInfoFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return {0, ""};
    case StatusCode::kInvalidArgument:
      return {2, "check the flags (rectrain help) and the config keys (docs/config.md)"};
    case StatusCode::kNotFound:
      return {3, "check that the path exists (globs must match at least one file)"};
    case StatusCode::kDataLoss:
      return {4, "the file is corrupt or truncated; regenerate it or restore a good copy"};
    case StatusCode::kResourceExhausted:
      // Memory budgets, a full disk, request and file limits: the message names the limit.
      return {5, "a limit was reached: the message above names it and what governs it"};
    case StatusCode::kFailedPrecondition:
      return {6, ""};
    case StatusCode::kAborted:
      return {7, "lower the learning rates (optimizer.lr, embedding.optimizer.lr) or add optimizer.warmup_steps"};
    case StatusCode::kAlreadyExists:
      return {8, "choose another --run-dir, or continue that run with --resume"};
    case StatusCode::kPermissionDenied:
      return {9, "check the permissions of the file or directory"};
    case StatusCode::kUnimplemented:
      return {10, ""};
    case StatusCode::kCancelled:
      return {130, ""};
    case StatusCode::kUnknown:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kOutOfRange:
    case StatusCode::kInternal:
    case StatusCode::kUnavailable:
      return {1, "if this persists, report it with the run's train.log"};
  }
  return {1, ""};
}

int ReportError(std::string_view command, const Status& status) {
  ExitInfo info = ExitInfoFor(status.code());
  // A bad row's message (data/errors.h) says where it is and which key lets the run skip it; the
  // flags-and-config hint of other invalid arguments would send the reader elsewhere.
  if (status.message().find("data.max_bad_rows") != std::string::npos) info.hint = {};
  std::fprintf(stderr, "%.*s: error: %s\n", static_cast<int>(command.size()), command.data(),
               status.message().c_str());
  if (!info.hint.empty()) {
    std::fprintf(stderr, "hint: %.*s\n", static_cast<int>(info.hint.size()), info.hint.data());
  }
  return info.exit_code == 0 ? 1 : info.exit_code;
}

}  // namespace rectrain::cli

// `rectrain runs list|show|compare|delete|export`: the tracking store in the terminal
// (track::RunRunsCommand does the work; docs/cli.md).
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "rectrain/cli/commands.h"
#include "rectrain/cli/exit_codes.h"
#include "rectrain/cli/process_env.h"
#include "rectrain/track/workspace.h"
#include "rectrain/track/runs_report.h"
#include "rectrain/track/tracking_store.h"

namespace rectrain::cli {

namespace {

const char kStoreHelp[] =
    "\nstore (every verb):\n"
    "  --store PATH       tracking database (default $RECTRAIN_TRACKING_STORE, else\n"
    "                     <workspace>/.rectrain/tracking.db)\n"
    "  --workspace DIR    workspace directory (default: the current directory)\n";

// Removes `--name VALUE` / `--name=VALUE` from args into *out. InvalidArgument without a value.
Status TakeFlag(std::vector<std::string>& args, const std::string& name, std::string* out) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--" + name) {
      if (i + 1 >= args.size()) return InvalidArgumentError("--" + name + " needs a value");
      *out = args[i + 1];
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i), args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
      return OkStatus();
    }
    if (a.rfind("--" + name + "=", 0) == 0) {
      *out = a.substr(name.size() + 3);
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i));
      return OkStatus();
    }
  }
  return OkStatus();
}

}  // namespace

int RunRuns(const std::vector<std::string>& in_args) {
  const char* kCmd = "rectrain runs";
  std::vector<std::string> args = in_args;
  std::string store_path, workspace;
  if (Status s = TakeFlag(args, "store", &store_path); !s.ok()) return ReportError(kCmd, s);
  if (Status s = TakeFlag(args, "workspace", &workspace); !s.ok()) return ReportError(kCmd, s);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" ||
      (args.size() >= 2 && (args.back() == "--help" || args.back() == "-h"))) {
    std::FILE* out = args.empty() ? stderr : stdout;
    std::fputs("usage: rectrain runs VERB [ARGS] [--store PATH]\n\n", out);
    std::fputs(track::RunsCommandUsage().c_str(), out);
    std::fputs(kStoreHelp, out);
    return args.empty() ? 2 : 0;
  }
  const std::string path = track::ResolveStorePath(store_path, EnvString(track::kStoreEnv), workspace);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return ReportError(kCmd, NotFoundError("no tracking store at " + path +
                                           " (rectrain train records runs there; pass --store PATH "
                                           "or --workspace DIR, or run from the workspace)"));
  }
  auto store = track::TrackingStore::Open(path);
  if (!store.ok()) return ReportError(kCmd, store.status());
  auto text = track::RunRunsCommand(**store, args);
  if (!text.ok()) return ReportError(kCmd, text.status());
  std::fputs(text->c_str(), stdout);
  return 0;
}

}  // namespace rectrain::cli

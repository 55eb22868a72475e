// `rectrain doctor`: checks this machine, or every rank of an allocation (under mpirun/srun),
// before a long job; exit 0 when ready, 1 when a problem was found (train/doctor.h).
#include <cstdio>
#include <optional>

#include "rectrain/cli/commands.h"
#include "rectrain/cli/exit_codes.h"
#include "rectrain/cli/flags.h"
#include "rectrain/dist/launch.h"
#include "rectrain/train/doctor.h"

namespace rectrain::cli {

int RunDoctor(const std::vector<std::string>& args) {
  const char* kCmd = "rectrain doctor";
  std::string config_path;
  std::vector<std::string> sets;
  FlagParser flags(kCmd, "[CONFIG.yaml] [--set KEY=VALUE ...]",
                   "Checks a machine or, run like the job (mpirun -np N rectrain doctor CONFIG), every\n"
                   "rank: the same rectrain and MPI everywhere, the config's data readable on every rank,\n"
                   "memory against data.memory_cache_bytes and embedding.memory_budget, and the latency\n"
                   "and bandwidth from rank 0 to each rank. Prints a table; exits 1 on a problem.");
  flags.Positional("CONFIG.yaml", &config_path, false, "the job's config (data paths and budgets to check)");
  flags.Repeated("set", &sets, "override a key, as for rectrain train");
  if (std::optional<int> exit = ParseOrExit(flags, args, kCmd)) return *exit;
  auto connected = dist::Connect();
  if (!connected.ok()) return ReportError(kCmd, connected.status());
  dist::Communicator& comm = **connected;
  comm.set_timeout(std::chrono::seconds(60));
  std::optional<config::LoadedConfig> loaded;
  if (!config_path.empty()) {
    auto c = config::LoadTrainConfig(config_path, sets);
    if (Status agreed = dist::AgreeOk(comm, c.status()); !agreed.ok()) {
      return dist::EndRank(comm, comm.rank() == 0 ? ReportError(kCmd, agreed) : 1);
    }
    loaded = std::move(*c);
  }
  auto report = train::RunDoctor(loaded ? &*loaded : nullptr, comm);
  // A rank that stopped answering ends the check (and the job) once the deadline passes.
  if (!report.ok()) return dist::EndRank(comm, ReportError(kCmd, report.status()));
  if (comm.rank() == 0) std::fputs(train::FormatDoctorReport(*report).c_str(), stdout);
  return report->problems.empty() ? 0 : 1;
}

}  // namespace rectrain::cli

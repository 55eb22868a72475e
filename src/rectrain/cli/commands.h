// rectrain/cli/commands.h: one entry point per subcommand (one .cc file each). Each takes the
// arguments after its name and returns the process exit code (exit_codes.h).
// Thread safety: called once from main().
#pragma once

#include <string>
#include <vector>

namespace rectrain::cli {

int RunDataGen(const std::vector<std::string>& args);
int RunTrain(const std::vector<std::string>& args);
int RunDoctor(const std::vector<std::string>& args);
int RunEval(const std::vector<std::string>& args);
int RunExport(const std::vector<std::string>& args);
int RunPublish(const std::vector<std::string>& args);
int RunServe(const std::vector<std::string>& args);
int RunPredict(const std::vector<std::string>& args);
int RunTune(const std::vector<std::string>& args);
int RunQuickstart(const std::vector<std::string>& args);
int RunRuns(const std::vector<std::string>& args);
int RunUi(const std::vector<std::string>& args);
// data_check_cmd.cc: `rectrain data check CONFIG` / `rectrain data stats FILES...`.
int RunDataCheck(const std::vector<std::string>& args);
int RunDataStats(const std::vector<std::string>& args);
// data_cache_cmd.cc: `rectrain data cache CONFIG` / `rectrain data convert INPUT... --to cache`.
int RunDataCache(const std::vector<std::string>& args);
int RunDataConvert(const std::vector<std::string>& args);
// data_produce_cmd.cc: `rectrain data produce FILE --to URL` (replay a file into a stream).
int RunDataProduce(const std::vector<std::string>& args);

}  // namespace rectrain::cli

// libFuzzer target: loading a training config (docs/config.md) as `rectrain train` does — the
// YAML text, then --set overrides, then binding every key of the schema. The input is the
// config file; lines after a line "#--set" are --set KEY=VALUE overrides, one per line. Every
// outcome is fine except a crash, a hang, a sanitizer report, an error that is not
// InvalidArgument with a message, or a loaded config whose resolved YAML (what a run writes to
// RUN_DIR/config.yaml and --resume reads back) does not load again to itself.
// Build and run: scripts/fuzz.sh (clang, preset fuzz); seeds in fuzz/corpus/config, the YAML
// alias bombs of issue 26 among them.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "rectrain/config/train_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using rectrain::StatusCode;
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> sets;
  if (const size_t at = text.find("\n#--set\n"); at != std::string::npos) {
    std::string rest = text.substr(at + 8);
    text.resize(at + 1);
    for (size_t begin = 0; begin < rest.size();) {
      const size_t end = std::min(rest.find('\n', begin), rest.size());
      sets.push_back(rest.substr(begin, end - begin));
      begin = end + 1;
    }
  }
  auto loaded = rectrain::config::LoadTrainConfigFromString(text, "fuzz.yaml", sets);
  if (!loaded.ok()) {
    if (loaded.status().code() != StatusCode::kInvalidArgument || loaded.status().message().empty()) std::abort();
    return 0;
  }
  auto again = rectrain::config::LoadTrainConfigFromString(loaded->resolved_yaml, "resolved.yaml", {});
  if (!again.ok() || again->resolved_yaml != loaded->resolved_yaml || again->hash != loaded->hash) std::abort();
  return 0;
}

// rectrain/fuzz/fuzz_util.h: helpers shared by the libFuzzer targets. The readers take paths, so
// each input is written to one scratch file per process (rewritten for every input).
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace rectrain::fuzz {

// Writes [data, data + size) to $TMPDIR/rectrain_fuzz_<pid><suffix> and returns the path.
inline std::string WriteScratch(const uint8_t* data, size_t size, const std::string& suffix) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string path = std::string(tmp != nullptr ? tmp : "/tmp") + "/rectrain_fuzz_" +
                           std::to_string(getpid()) + suffix;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

}  // namespace rectrain::fuzz

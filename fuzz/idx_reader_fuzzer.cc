// libFuzzer target: the IDX reader (data.format idx) and its profile. The first input byte splits
// the rest into an image file and a labels file (byte b: the first b * len / 256 bytes are the
// images); any outcome other than a crash, hang, sanitizer report or leak is fine: errors must be
// Status values.
// Build: cmake -DRECTRAIN_BUILD_FUZZERS=ON -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang
// Run:   ./idx_reader_fuzzer -max_len=4096 fuzz/corpus/idx
#include <cstddef>
#include <cstdint>
#include <optional>

#include "fuzz/fuzz_util.h"
#include "rectrain/data/profile.h"
#include "rectrain/data/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t split = 1 + static_cast<size_t>(data[0]) * (size - 1) / 256;
  const std::string images =
      rectrain::fuzz::WriteScratch(data + 1, split - 1, "-images-idx3-ubyte");
  rectrain::fuzz::WriteScratch(data + split, size - split, "-labels-idx1-ubyte");
  rectrain::data::DataConfig c;
  c.files = {images};
  c.schema.format = "idx";
  c.cache = "off";
  for (bool shuffle : {false, true}) {
    rectrain::data::ReadOptions o;
    o.batch_size = 7;
    o.shuffle = shuffle;
    auto reader = rectrain::data::OpenBatchReader(c, o);
    if (!reader.ok()) continue;
    while (true) {
      auto b = (*reader)->Next();
      if (!b.ok() || !b->has_value()) break;
    }
  }
  auto profile = rectrain::data::ProfileFiles({images}, c.schema, {}, 1, {}, 100);
  (void)profile;
  return 0;
}

// libFuzzer target: the text (criteo / csv / tsv / libsvm / libffm) reader and row parser with
// transforms, filters and downsampling, plus the data profile (`rectrain data stats`) of the same
// bytes. The first input byte picks the configuration (bit 7 set: libsvm for even bytes, libffm
// for odd ones; else one of four criteo/csv/tsv modes); the rest is the file. Any outcome other than a
// crash, hang, sanitizer report or leak is fine: errors must be Status values.
// Build: cmake -DRECTRAIN_BUILD_FUZZERS=ON -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang
// Run:   ./text_reader_fuzzer -max_len=4096 fuzz/corpus/text   (docs/data.md, Fuzzing)
#include <cstddef>
#include <cstdint>
#include <optional>

#include "fuzz/fuzz_util.h"
#include "rectrain/data/profile.h"
#include "rectrain/data/reader.h"

namespace {

rectrain::data::DataConfig MakeConfig(uint8_t mode, const std::string& path) {
  using rectrain::data::DataConfig;
  DataConfig c;
  c.files = {path};
  c.cache_dir = "/nonexistent-rectrain-fuzz-cache";  // stats are recomputed, never cached
  if ((mode & 0x80) != 0 && mode % 2 == 0) {  // libsvm: dense indices with stats, the bag
    c.schema.format = "libsvm";
    c.schema.dense = {"1", "3..4"};
    c.schema.group_key = "1";
    c.transforms = {{"3", "fill(1) | standardize"}, {"features", "max_len(4) | hash(1000)"}};
    c.filters = {"4 not in [7]"};
  } else if ((mode & 0x80) != 0) {  // libffm: a dense field, categorical fields, label transform
    c.schema.format = "libffm";
    c.schema.dense = {"0"};
    c.schema.sparse = {"1..3"};
    c.transforms = {{"label", "binarize(0)"}, {"0", "log1p | quantiles(3)"}};
    c.negative_downsampling = 0.5;
  } else switch (mode % 4) {
    case 0:  // criteo: label, I1, I2, C1, C2
      c.schema.format = "criteo";
      c.schema.criteo_dense = 2;
      c.schema.criteo_sparse = 2;
      break;
    case 1:  // csv with a header, transforms and filters
      c.schema.format = "csv";
      c.schema.delimiter = ',';
      c.schema.header = true;
      c.schema.dense = {"a", "h"};
      c.schema.sparse = {"b", "s", "x"};
      c.schema.group_key = "b";
      c.transforms = {{"a", "fill(1) | clip(-10, 1e6) | log1p | bucketize(0.5, 1, 2)"},
                      {"h", "col(t) | hour_of_day"},
                      {"s", "split('|', 3)"},
                      {"x", "cross(a, b) | hash(97)"}};
      c.filters = {"b not in [drop, x]"};
      break;
    case 2:  // tsv without header, a rating label, downsampling
      c.schema.format = "tsv";
      c.schema.columns = {"rating", "u", "m", "g"};
      c.schema.label = "rating";
      c.schema.sparse = {"u", "m", "g"};
      c.transforms = {{"rating", "binarize(8)"}, {"g", "split('|') | max_len(2)"}};
      c.negative_downsampling = 0.5;
      c.filters = {"rating not null"};
      break;
    default:  // csv, stats-pass transforms
      c.schema.format = "csv";
      c.schema.delimiter = ';';
      c.schema.header = true;
      c.schema.dense = {"a"};
      c.schema.sparse = {"q"};
      c.transforms = {{"a", "standardize"}, {"q", "col(a) | quantiles(4)"}};
      break;
  }
  c.max_bad_rows = (mode & 4) != 0 ? 1000000 : 0;
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const std::string path = rectrain::fuzz::WriteScratch(data + 1, size - 1, ".txt");
  const rectrain::data::DataConfig config = MakeConfig(mode, path);
  rectrain::data::ReadOptions options;
  options.batch_size = 1 + (mode >> 4);
  options.chunk_bytes = (mode & 8) != 0 ? 7 : 64;  // tiny chunks: lines cross chunk boundaries
  options.num_threads = 1 + ((mode >> 3) & 1);
  options.shuffle = (mode & 0x40) != 0;
  options.shuffle_buffer_rows = 3;
  auto reader = rectrain::data::OpenBatchReader(config, options);
  if (reader.ok()) {
    for (int i = 0; i < 100000; ++i) {
      auto batch = (*reader)->Next();
      if (!batch.ok() || !batch->has_value()) break;
      (*reader)->Recycle(std::move(**batch));
    }
  }
  auto profile = rectrain::data::ProfileFiles({path}, config.schema, config.transforms, 1);
  if (profile.ok()) {
    (void)rectrain::data::FormatProfileTable(*profile);
    (void)rectrain::data::FormatProfileJson(*profile);
  }
  return 0;
}

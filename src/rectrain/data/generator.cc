// GenerateDataset: rows are produced in fixed blocks of kBlockRows, block b sampled from
// Rng(DeriveSeed(seed, b)), so the output depends on (seed, rows, shape) only, never on the
// thread count. Workers claim blocks, format them into their own buffers and append them in
// block order.
#include "rectrain/data/generator.h"

#include <atomic>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "rectrain/base/random.h"
#include "rectrain/base/stopwatch.h"
#include "rectrain/data/errors.h"
#include "rectrain/data/internal/synthetic_truth.h"
#include "rectrain/io/file.h"

namespace rectrain::data {
namespace {

constexpr int64_t kBlockRows = 4096;

void FormatBlock(const internal::SyntheticTruth& truth, uint64_t seed, int64_t block, int64_t rows,
                 std::string* data, std::string* prob) {
  static constexpr char kHex[] = "0123456789abcdef";
  data->clear();
  prob->clear();
  const int nd = truth.num_dense();
  const int ns = truth.num_sparse();
  std::vector<int64_t> dense(nd);
  std::vector<int64_t> tokens(ns);
  Rng rng(DeriveSeed(seed, static_cast<uint64_t>(block)));
  char num[32];
  for (int64_t r = 0; r < rows; ++r) {
    truth.SampleRow(rng, dense.data(), tokens.data());
    const double p = truth.Probability(dense.data(), tokens.data());
    const bool label = rng.Uniform() < p;
    data->push_back(label ? '1' : '0');
    for (int j = 0; j < nd; ++j) {
      data->push_back('\t');
      if (dense[j] >= 0) {
        auto res = std::to_chars(num, num + sizeof(num), dense[j]);
        data->append(num, res.ptr);
      }
    }
    for (int f = 0; f < ns; ++f) {
      data->push_back('\t');
      if (tokens[f] >= 0) {
        const uint32_t t = static_cast<uint32_t>(tokens[f]);
        for (int k = 7; k >= 0; --k) data->push_back(kHex[(t >> (4 * k)) & 15]);
      }
    }
    data->push_back('\n');
    auto res = std::to_chars(num, num + sizeof(num), p, std::chars_format::fixed, 6);
    prob->append(num, res.ptr);
    prob->push_back('\n');
  }
}

}  // namespace

Result<GenerateReport> GenerateDataset(const GenerateConfig& config) {
  if (config.rows <= 0) {
    return InvalidArgumentError("rows must be > 0, got " + std::to_string(config.rows));
  }
  if (config.out.empty()) return InvalidArgumentError("no output path: set the output file");
  if (config.num_threads < 1 || config.num_threads > 256) {
    return InvalidArgumentError("num_threads must be in 1..256, got " + std::to_string(config.num_threads));
  }
  RECTRAIN_ASSIGN_OR_RETURN(internal::SyntheticTruth truth, internal::SyntheticTruth::ForShape(config.shape));
  Stopwatch sw;
  RECTRAIN_ASSIGN_OR_RETURN(auto data_out, io::AtomicFileWriter::Create(config.out));
  RECTRAIN_ASSIGN_OR_RETURN(auto prob_out, io::AtomicFileWriter::Create(config.out + ".prob"));

  const int64_t num_blocks = (config.rows + kBlockRows - 1) / kBlockRows;
  std::atomic<int64_t> next_block{0};
  std::mutex mu;
  std::condition_variable cv;
  int64_t next_write = 0;  // guarded by mu
  Status error;            // guarded by mu; first write error
  bool failed = false;     // guarded by mu
  auto worker = [&] {
    std::string data, prob;
    while (true) {
      const int64_t b = next_block.fetch_add(1);
      if (b >= num_blocks) return;
      const int64_t rows = std::min(kBlockRows, config.rows - b * kBlockRows);
      FormatBlock(truth, config.seed, b, rows, &data, &prob);
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return next_write == b || failed; });
      if (failed) return;
      Status s = data_out->Append(data);
      if (s.ok()) s = prob_out->Append(prob);
      if (!s.ok()) {
        error = s;
        failed = true;
      }
      ++next_write;
      lock.unlock();
      cv.notify_all();
    }
  };
  std::vector<std::thread> threads;
  const int n = static_cast<int>(std::min<int64_t>(config.num_threads, num_blocks));
  for (int i = 1; i < n; ++i) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
  if (failed) return error;
  RECTRAIN_RETURN_IF_ERROR(data_out->Commit());
  RECTRAIN_RETURN_IF_ERROR(prob_out->Commit());
  GenerateReport report;
  report.rows = config.rows;
  report.bytes = data_out->bytes_written();
  report.seconds = sw.Seconds();
  report.num_dense = truth.num_dense();
  report.num_sparse = truth.num_sparse();
  return report;
}

Result<std::vector<float>> ReadProbabilities(const std::string& path) {
  RECTRAIN_ASSIGN_OR_RETURN(std::string text, io::ReadFileToString(path));
  std::vector<float> out;
  out.reserve(text.size() / 9);
  const char* p = text.data();
  const char* end = p + text.size();
  int64_t line = 0;
  while (p < end) {
    ++line;
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
    const char* le = nl ? nl : end;
    const char* fe = le;
    if (fe > p && fe[-1] == '\r') --fe;
    float v = 0;
    auto [ptr, ec] = std::from_chars(p, fe, v);
    if (ec != std::errc() || ptr != fe || !(v >= 0.0f && v <= 1.0f)) {
      return InvalidArgumentError(path + ":" + std::to_string(line) +
                                  ": expected a probability in [0, 1], got \"" +
                                  errors::Snippet(std::string_view(p, fe - p)) + "\"");
    }
    out.push_back(v);
    p = nl ? nl + 1 : end;
  }
  if (out.empty()) return InvalidArgumentError(path + " is empty: it has no probabilities");
  return out;
}

}  // namespace rectrain::data

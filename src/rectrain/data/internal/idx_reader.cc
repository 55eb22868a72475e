#include "rectrain/data/internal/idx_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

#include "rectrain/base/random.h"
#include "rectrain/base/stopwatch.h"
#include "rectrain/data/pass_plan.h"
#include "rectrain/io/file.h"

namespace rectrain::data::internal {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803;
constexpr uint32_t kLabelsMagic = 0x00000801;
constexpr int64_t kUnitRows = 1024;
constexpr int64_t kMaxPixels = int64_t{1} << 20;  // per image

uint32_t BigEndian32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// The whole file (local or in an object store), gunzipped when it starts with the gzip magic
// (several concatenated members are read in turn, as gzread does).
Result<std::string> ReadMaybeGzip(const std::string& path) {
  Result<std::string> read = io::ReadFileToString(path);
  if (!read.ok()) return read.status();
  if (!read->starts_with("\x1f\x8b")) return read;
  std::string raw = std::move(read).value();
  if (raw.size() > std::numeric_limits<uInt>::max()) {
    return ResourceExhaustedError(path + ": " + std::to_string(raw.size()) + " gzip bytes, more than one read takes");
  }
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return InternalError("inflateInit2 failed");
  z.next_in = reinterpret_cast<Bytef*>(raw.data());
  z.avail_in = static_cast<uInt>(raw.size());
  std::string out;
  char buf[1 << 16];
  int rc = Z_OK;
  while (true) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof(buf);
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof(buf) - z.avail_out);
    if (rc == Z_STREAM_END) {
      if (z.avail_in == 0) break;
      inflateReset(&z);  // another gzip member follows
      continue;
    }
    if (rc != Z_OK) break;
  }
  const std::string msg = z.msg != nullptr ? z.msg : (rc == Z_BUF_ERROR ? "unexpected end of file" : "error");
  inflateEnd(&z);
  if (rc != Z_STREAM_END) return DataLossError(path + ": cannot decompress (" + msg + "); the gzip stream is damaged");
  return out;
}

struct IdxData {
  int64_t rows = 0;
  int64_t pixels = 0;             // per image
  std::vector<uint8_t> images;    // rows × pixels
  std::vector<uint8_t> labels;    // rows
  int64_t file_bytes = 0;
  int64_t files = 0;
};

Status LoadPair(const std::string& images_path, IdxData* d) {
  RECTRAIN_ASSIGN_OR_RETURN(std::string labels_path, IdxLabelsPath(images_path));
  if (!io::ExpandPaths({labels_path}).ok()) {
    return NotFoundError("data.format idx: the labels of " + images_path + " should be in " + labels_path +
                         ", which does not exist");
  }
  RECTRAIN_ASSIGN_OR_RETURN(std::string img, ReadMaybeGzip(images_path));
  RECTRAIN_ASSIGN_OR_RETURN(std::string lab, ReadMaybeGzip(labels_path));
  const auto* ip = reinterpret_cast<const unsigned char*>(img.data());
  const auto* lp = reinterpret_cast<const unsigned char*>(lab.data());
  if (img.size() < 16 || BigEndian32(ip) != kImagesMagic) {
    return InvalidArgumentError(images_path + " is not an IDX image file (expected the magic 0x00000803 in its first 4 "
                                "bytes, and 16 header bytes; got " + std::to_string(img.size()) + " bytes)");
  }
  if (lab.size() < 8 || BigEndian32(lp) != kLabelsMagic) {
    return InvalidArgumentError(labels_path + " is not an IDX label file (expected the magic 0x00000801 in its first 4 "
                                "bytes, and 8 header bytes)");
  }
  const int64_t count = BigEndian32(ip + 4), h = BigEndian32(ip + 8), w = BigEndian32(ip + 12);
  // Each side bounded before the product (two 32-bit sides overflow an int64 product: found by
  // fuzz/idx_reader_fuzzer.cc, IdxReader.HugeImageSidesAreAnError).
  if (h < 1 || w < 1 || h > kMaxPixels || w > kMaxPixels || h * w > kMaxPixels) {
    return InvalidArgumentError(images_path + ": images of " + std::to_string(h) + " x " + std::to_string(w) +
                                " pixels (at most " + std::to_string(kMaxPixels) + " per image)");
  }
  const int64_t want = 16 + count * h * w;
  if (static_cast<int64_t>(img.size()) != want) {
    return DataLossError(images_path + ": the header says " + std::to_string(count) + " images of " + std::to_string(h) +
                         " x " + std::to_string(w) + " (" + std::to_string(want) + " bytes) but the file has " +
                         std::to_string(img.size()) + " bytes (truncated or damaged)");
  }
  const int64_t label_count = BigEndian32(lp + 4);
  if (label_count != count) {
    return InvalidArgumentError(labels_path + " has " + std::to_string(label_count) + " labels but " + images_path +
                                " has " + std::to_string(count) + " images");
  }
  if (static_cast<int64_t>(lab.size()) != 8 + count) {
    return DataLossError(labels_path + ": the header says " + std::to_string(count) + " labels (" +
                         std::to_string(8 + count) + " bytes) but the file has " + std::to_string(lab.size()) + " bytes");
  }
  if (d->files > 0 && d->pixels != h * w) {
    return InvalidArgumentError(images_path + " has images of " + std::to_string(h * w) + " pixels, the earlier files " +
                                std::to_string(d->pixels) + "; every file of a split must have one image size");
  }
  d->pixels = h * w;
  d->images.insert(d->images.end(), img.begin() + 16, img.end());
  d->labels.insert(d->labels.end(), lab.begin() + 8, lab.end());
  d->rows += count;
  d->file_bytes += static_cast<int64_t>(img.size() + lab.size());
  ++d->files;
  return OkStatus();
}

class IdxBatchReader final : public BatchReader {
 public:
  IdxBatchReader(std::shared_ptr<const IdxData> data, const ReadOptions& options, std::vector<uint32_t> order,
                 double load_seconds)
      : data_(std::move(data)), options_(options), order_(std::move(order)) {
    for (int64_t p = 0; p < data_->pixels; ++p) dense_names_.push_back("px" + std::to_string(p));
    next_ = std::min<int64_t>(options_.skip_rows, static_cast<int64_t>(order_.size()));
    stats_.rows_skipped = next_;
    stats_.files = data_->files;
    stats_.bytes_read = data_->file_bytes;
    stats_.parse_seconds = load_seconds;
  }

  Result<std::optional<Batch>> Next() override {
    const int64_t n = std::min<int64_t>(options_.batch_size, static_cast<int64_t>(order_.size()) - next_);
    if (n <= 0) return std::optional<Batch>();
    Batch b;
    if (!spare_.empty()) {
      b = std::move(spare_.back());
      spare_.pop_back();
    }
    const int64_t px = data_->pixels;
    b.size = n;
    b.num_dense = static_cast<int>(px);
    b.labels.resize(static_cast<size_t>(n));
    b.dense.resize(static_cast<size_t>(n * px));
    b.sparse.clear();
    b.group_keys.clear();
    b.source.clear();
    b.first_line = 0;
    constexpr float kScale = 1.0f / 255.0f;
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t row = order_[static_cast<size_t>(next_ + i)];
      b.labels[static_cast<size_t>(i)] = static_cast<float>(data_->labels[row]);
      const uint8_t* src = data_->images.data() + static_cast<int64_t>(row) * px;
      float* dst = b.dense.data() + i * px;
      for (int64_t p = 0; p < px; ++p) dst[p] = static_cast<float>(src[p]) * kScale;
    }
    next_ += n;
    stats_.rows_read += n;
    return std::optional<Batch>(std::move(b));
  }
  void Recycle(Batch&& batch) override {
    if (spare_.size() < 4) spare_.push_back(std::move(batch));
  }
  ReaderStats Stats() const override { return stats_; }
  const std::vector<std::string>& dense_names() const override { return dense_names_; }
  const std::vector<std::string>& sparse_names() const override { return sparse_names_; }

 private:
  std::shared_ptr<const IdxData> data_;
  const ReadOptions options_;
  const std::vector<uint32_t> order_;
  int64_t next_ = 0;
  ReaderStats stats_;
  std::vector<std::string> dense_names_, sparse_names_;
  std::vector<Batch> spare_;
};

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

bool LooksLikeIdx(const std::vector<std::string>& paths) {
  return !paths.empty() && std::all_of(paths.begin(), paths.end(), [](const std::string& p) {
    return p.find("images-idx3") != std::string::npos && (EndsWith(p, "-ubyte") || EndsWith(p, "-ubyte.gz"));
  });
}

Result<std::string> IdxLabelsPath(const std::string& images_path) {
  const size_t at = images_path.rfind("images-idx3");
  if (at == std::string::npos) {
    return InvalidArgumentError("data.format idx: " + images_path + " is not named like an IDX image file "
                                "(...-images-idx3-ubyte[.gz]); its labels are read from the matching "
                                "...-labels-idx1-ubyte[.gz]");
  }
  std::string labels = images_path;
  labels.replace(at, std::string("images-idx3").size(), "labels-idx1");
  return labels;
}

Result<std::unique_ptr<BatchReader>> OpenIdxReader(const DataConfig& config, const ReadOptions& options) {
  RECTRAIN_RETURN_IF_ERROR(ValidateRankShare(options));
  if (options.batch_size <= 0) return InvalidArgumentError("batch_size must be > 0, got " + std::to_string(options.batch_size));
  if (!config.transforms.empty() || !config.filters.empty() || config.negative_downsampling != 1.0) {
    return InvalidArgumentError("data.format idx reads pixels as they are (pixel / 255): features.transforms, "
                                "data.filters and data.negative_downsampling do not apply; remove them");
  }
  RECTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> paths, io::ExpandPaths(config.files));
  Stopwatch sw;
  auto data = std::make_shared<IdxData>();
  for (const std::string& p : paths) RECTRAIN_RETURN_IF_ERROR(LoadPair(p, data.get()));
  if (data->rows > int64_t{0xffffffff}) return InvalidArgumentError("data.format idx: more than 2^32 images");
  // Units of kUnitRows rows, ordered and shared out by the planner; a shuffled pass also
  // permutes every row of the share.
  const int64_t units = (data->rows + kUnitRows - 1) / kUnitRows;
  std::vector<int64_t> weights(static_cast<size_t>(units), kUnitRows);
  if (units > 0) weights.back() = data->rows - (units - 1) * kUnitRows;
  std::vector<uint32_t> order;
  for (int64_t u : PlanPassUnits(weights, options.shuffle, options.seed, options.epoch, options.rank, options.world)) {
    for (int64_t r = u * kUnitRows; r < std::min(data->rows, (u + 1) * kUnitRows); ++r) order.push_back(static_cast<uint32_t>(r));
  }
  if (options.shuffle) {
    Rng rng(DeriveSeed(DeriveSeed(options.seed, 0x4944585253ULL /* "IDXRS" */), static_cast<uint64_t>(options.epoch)));
    for (int64_t i = static_cast<int64_t>(order.size()) - 1; i > 0; --i) {
      std::swap(order[static_cast<size_t>(i)], order[rng.Below(static_cast<uint64_t>(i + 1))]);
    }
  }
  return std::unique_ptr<BatchReader>(std::make_unique<IdxBatchReader>(std::move(data), options, std::move(order), sw.Seconds()));
}

}  // namespace rectrain::data::internal

// rectrain/data/internal/idx_reader.h (internal to data/): the IDX format of MNIST-style image
// datasets (data.format idx; docs/formats/idx.md), e.g. Debian's dataset-fashion-mnist under
// /usr/share/datasets/fashion-mnist/. Each file of data.train / data.valid is an image file
// (magic 0x00000803: count, rows, cols, then uint8 pixels), plain or gzipped; its labels are read
// from the file of the same name with "images-idx3" replaced by "labels-idx1" (magic 0x00000801:
// count, then uint8 labels). A row is rows×cols dense features px0, px1, ... (pixel / 255) and the
// label (the class index, for model.num_classes >= 2); there are no categorical fields.
//
// The files are read into memory when the reader opens (47 MB for Fashion-MNIST's training
// set). Passes follow the pass planner (data/pass_plan.h): units of 1024 rows, a rank's share of
// them, shuffled (units, then every row of the share) by (seed, epoch); skip_rows and Recycle()
// work as for the other readers.
//
// Errors name the file and what is wrong: a bad magic ("not an IDX image file"), a truncated or
// over-long payload (with the byte counts), image and label files of different counts, a missing
// labels file (with the path it looked for).
// Thread safety: a reader is used by one thread.
#pragma once

#include <memory>
#include <string>

#include "rectrain/base/result.h"
#include "rectrain/data/reader.h"

namespace rectrain::data::internal {

// True when every path names an IDX image file (…-images-idx3-ubyte, optionally .gz).
bool LooksLikeIdx(const std::vector<std::string>& paths);

// The labels file of an image file, or InvalidArgument when the name has no "images-idx3".
Result<std::string> IdxLabelsPath(const std::string& images_path);

Result<std::unique_ptr<BatchReader>> OpenIdxReader(const DataConfig& config, const ReadOptions& options);

}  // namespace rectrain::data::internal

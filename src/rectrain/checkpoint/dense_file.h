// rectrain/checkpoint/dense_file.h: the dense-parameter file, dense.bin (format:
// docs/formats/checkpoint.md "dense.bin"): every dense parameter by name and size, then the dense
// optimizer's state, with a checksum. Training checkpoints write it with the optimizer state; a
// serving model (serve/model_package.h) without.
//
// Thread safety: the functions are reentrant; the spans must not change while they run.
#pragma once

#include <span>
#include <string>

#include "rectrain/base/status.h"
#include "rectrain/optim/optimizer.h"

namespace rectrain::checkpoint {

// Writes params then the optimizer state spans to `path`, atomically (temp file + rename).
[[nodiscard]] Status WriteDenseFile(const std::string& path, std::span<const optim::ParamRef> params,
                                    std::span<const std::span<float>> optimizer_state);

// Fills params (and the optimizer state unless `optimizer_state` is empty). Errors: NotFound;
// DataLoss (bad magic, checksum mismatch, truncation); InvalidArgument (a parameter's name or
// size differs from the model's, naming both; another number of optimizer state tensors).
[[nodiscard]] Status ReadDenseFile(const std::string& path, std::span<const optim::ParamRef> params,
                                   std::span<const std::span<float>> optimizer_state);

}  // namespace rectrain::checkpoint

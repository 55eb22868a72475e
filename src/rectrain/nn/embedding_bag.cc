#include "rectrain/nn/embedding_bag.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace rectrain::nn {

EmbeddingBag::EmbeddingBag(std::vector<EmbeddingBagTable> tables,
                           std::vector<EmbeddingBagField> fields)
    : tables_(std::move(tables)), fields_(std::move(fields)) {
  for (const EmbeddingBagTable& t : tables_) {
    RECTRAIN_CHECK(t.lead >= 0 && t.lead <= 1 && t.dim >= 1 && t.lead <= t.dim) << t.name;
    has_lead_ = has_lead_ || t.lead == 1;
  }
  for (const EmbeddingBagField& f : fields_) {
    RECTRAIN_CHECK(f.table >= 0 && f.table < static_cast<int>(tables_.size())) << f.name;
    const EmbeddingBagTable& t = tables_[f.table];
    out_width_ = std::max(out_width_, f.out_col + t.dim - t.lead);
  }
  offsets_.resize(fields_.size());
  indices_.resize(fields_.size());
  num_unique_.resize(tables_.size());
}

namespace {

// The inputs' counts and the outputs' shapes (lead_size < 0: the model has no first-order output).
Status CheckForwardShapes(int64_t batch, size_t got_tables, size_t tables, size_t got_fields, size_t fields,
                          tensor::MatrixView out, int64_t out_width, int64_t lead_size) {
  if (got_tables != tables) {
    return InvalidArgumentError("expected " + std::to_string(tables) +
                                " pulled tables, got " + std::to_string(got_tables));
  }
  if (got_fields != fields) {
    return InvalidArgumentError("expected " + std::to_string(fields) +
                                " categorical fields, got " + std::to_string(got_fields));
  }
  if (out.rows != batch || out.cols < out_width) {
    return InvalidArgumentError("embedding output is [" + std::to_string(out.rows) + " x " +
                                std::to_string(out.cols) + "], need [" + std::to_string(batch) +
                                " x " + std::to_string(out_width) + "]");
  }
  if (lead_size >= 0 && lead_size != batch) {
    return InvalidArgumentError("first-order output has " + std::to_string(lead_size) +
                                " entries, need batch_size = " + std::to_string(batch));
  }
  return OkStatus();
}

// The rows pulled for `table` match its dim and count.
Status CheckPulledTable(const EmbeddingBagTable& table, const PulledTable& p) {
  if (p.dim != table.dim) {
    return InvalidArgumentError("table " + table.name + ": pulled rows have dim " +
                                std::to_string(p.dim) + ", the model expects " +
                                std::to_string(table.dim));
  }
  if (p.num_unique < 0 || static_cast<int64_t>(p.rows.size()) != p.num_unique * p.dim) {
    return InvalidArgumentError("table " + table.name + ": " +
                                std::to_string(p.rows.size()) + " pulled floats for " +
                                std::to_string(p.num_unique) + " rows of dim " +
                                std::to_string(p.dim));
  }
  return OkStatus();
}

// A field's indices are one per row (single-valued) or CSR offsets over the batch.
Status CheckFieldIndices(const std::string& name, const FieldIndices& fi, int64_t batch) {
  if (fi.offsets.empty()) {
    if (static_cast<int64_t>(fi.rows.size()) != batch) {
      return InvalidArgumentError("field " + name + ": single-valued (no offsets) with " +
                                  std::to_string(fi.rows.size()) +
                                  " indices, expected batch_size = " + std::to_string(batch));
    }
  } else {
    if (static_cast<int64_t>(fi.offsets.size()) != batch + 1 || fi.offsets.front() != 0 ||
        fi.offsets.back() != static_cast<int64_t>(fi.rows.size())) {
      return InvalidArgumentError(
          "field " + name + ": CSR offsets must have batch_size + 1 = " +
          std::to_string(batch + 1) + " entries from 0 to the number of indices (" +
          std::to_string(fi.rows.size()) + "), got " + std::to_string(fi.offsets.size()) +
          " entries");
    }
  }
  return OkStatus();
}

}  // namespace

Status EmbeddingBag::Forward(int64_t batch, std::span<const PulledTable> tables,
                             std::span<const FieldIndices> fields, tensor::MatrixView out,
                             std::span<float> lead, const ComputeContext& compute) {
  RECTRAIN_RETURN_IF_ERROR(CheckForwardShapes(batch, tables.size(), tables_.size(), fields.size(), fields_.size(), out,
                                              out_width_, has_lead_ ? static_cast<int64_t>(lead.size()) : -1));
  for (size_t t = 0; t < tables_.size(); ++t) {
    RECTRAIN_RETURN_IF_ERROR(CheckPulledTable(tables_[t], tables[t]));
    num_unique_[t] = tables[t].num_unique;
  }
  for (size_t f = 0; f < fields_.size(); ++f) {
    const FieldIndices& fi = fields[f];
    RECTRAIN_RETURN_IF_ERROR(CheckFieldIndices(fields_[f].name, fi, batch));
    offsets_[f].assign(fi.offsets.begin(), fi.offsets.end());
    indices_[f].assign(fi.rows.begin(), fi.rows.end());
  }
  batch_ = batch;

  return ParallelFor(compute, batch, 64, [&](int64_t b0, int64_t b1) -> Status {
    if (has_lead_) std::fill(lead.begin() + b0, lead.begin() + b1, 0.0f);
    for (size_t f = 0; f < fields_.size(); ++f) {
      const EmbeddingBagField& field = fields_[f];
      const EmbeddingBagTable& table = tables_[field.table];
      const int64_t dim = table.dim;
      const int lead_cols = table.lead;
      const int64_t width = dim - lead_cols;
      const int64_t nu = num_unique_[field.table];
      const float* rows = tables[field.table].rows.data();
      const int32_t* idx = indices_[f].data();
      auto bad_index = [&](int64_t i, int64_t u) {
        return InvalidArgumentError("field " + field.name + " row " + std::to_string(i) +
                                    ": index " + std::to_string(u) + " out of range [0, " +
                                    std::to_string(nu) + ") of table " + table.name);
      };
      if (offsets_[f].empty()) {
        for (int64_t i = b0; i < b1; ++i) {
          const int64_t u = idx[i];
          if (u < 0 || u >= nu) return bad_index(i, u);
          const float* src = rows + u * dim;
          if (lead_cols) lead[i] += src[0];
          // width 0 (an LR table holds only its lead column): out may have no storage at all.
          if (width > 0) std::memcpy(out.row(i) + field.out_col, src + lead_cols, sizeof(float) * width);
        }
        continue;
      }
      const int32_t* offs = offsets_[f].data();
      for (int64_t i = b0; i < b1; ++i) {
        const int64_t begin = offs[i], end = offs[i + 1];
        if (end < begin) {
          return InvalidArgumentError("field " + field.name + ": CSR offsets decrease at row " +
                                      std::to_string(i));
        }
        float* dst = out.row(i) + field.out_col;
        if (width > 0) std::memset(dst, 0, sizeof(float) * width);
        float lead_sum = 0.0f;
        for (int64_t k = begin; k < end; ++k) {
          const int64_t u = idx[k];
          if (u < 0 || u >= nu) return bad_index(i, u);
          const float* src = rows + u * dim;
          lead_sum += lead_cols ? src[0] : 0.0f;
          const float* e = src + lead_cols;
          for (int64_t d = 0; d < width; ++d) dst[d] += e[d];
        }
        if (field.mean && end > begin) {
          const float inv = 1.0f / static_cast<float>(end - begin);
          for (int64_t d = 0; d < width; ++d) dst[d] *= inv;
          lead_sum *= inv;
        }
        if (lead_cols) lead[i] += lead_sum;
      }
    }
    return OkStatus();
  });
}

Status EmbeddingBag::Backward(tensor::ConstMatrixView dout, std::span<const float> dlead,
                              std::span<const std::span<float>> table_grads,
                              const ComputeContext& compute) {
  if (batch_ < 0) return FailedPreconditionError("EmbeddingBag::Backward before Forward");
  const int64_t batch = batch_;
  if (dout.rows != batch || dout.cols < out_width_) {
    return InvalidArgumentError("embedding gradient is [" + std::to_string(dout.rows) + " x " +
                                std::to_string(dout.cols) + "], need [" + std::to_string(batch) +
                                " x " + std::to_string(out_width_) + "]");
  }
  if (has_lead_ && static_cast<int64_t>(dlead.size()) != batch) {
    return InvalidArgumentError("first-order gradient has " + std::to_string(dlead.size()) +
                                " entries, need " + std::to_string(batch));
  }
  if (table_grads.size() != tables_.size()) {
    return InvalidArgumentError("expected " + std::to_string(tables_.size()) +
                                " table gradients, got " + std::to_string(table_grads.size()));
  }
  for (size_t t = 0; t < tables_.size(); ++t) {
    if (static_cast<int64_t>(table_grads[t].size()) != num_unique_[t] * tables_[t].dim) {
      return InvalidArgumentError("table " + tables_[t].name + ": gradient has " +
                                  std::to_string(table_grads[t].size()) + " floats, need " +
                                  std::to_string(num_unique_[t]) + " x " +
                                  std::to_string(tables_[t].dim));
    }
  }
  for (size_t t = 0; t < tables_.size(); ++t) {
    const int64_t dim = tables_[t].dim;
    const int lead_cols = tables_[t].lead;
    const int64_t width = dim - lead_cols;
    float* grads = table_grads[t].data();
    ParallelForEach(compute, num_unique_[t], 256, [&](int, int64_t u0, int64_t u1) {
      std::memset(grads + u0 * dim, 0, sizeof(float) * static_cast<size_t>((u1 - u0) * dim));
      for (size_t f = 0; f < fields_.size(); ++f) {
        const EmbeddingBagField& field = fields_[f];
        if (field.table != static_cast<int>(t)) continue;
        const int32_t* idx = indices_[f].data();
        const int64_t col = field.out_col;
        if (offsets_[f].empty()) {
          for (int64_t i = 0; i < batch; ++i) {
            const int64_t u = idx[i];
            if (u < u0 || u >= u1) continue;
            float* g = grads + u * dim;
            if (lead_cols) g[0] += dlead[i];
            const float* src = dout.row(i) + col;
            float* ge = g + lead_cols;
            for (int64_t d = 0; d < width; ++d) ge[d] += src[d];
          }
          continue;
        }
        const int32_t* offs = offsets_[f].data();
        for (int64_t i = 0; i < batch; ++i) {
          const int64_t begin = offs[i], end = offs[i + 1];
          if (end <= begin) continue;
          const float w = field.mean ? 1.0f / static_cast<float>(end - begin) : 1.0f;
          const float* src = dout.row(i) + col;
          for (int64_t k = begin; k < end; ++k) {
            const int64_t u = idx[k];
            if (u < u0 || u >= u1) continue;
            float* g = grads + u * dim;
            if (lead_cols) g[0] += w * dlead[i];
            float* ge = g + lead_cols;
            for (int64_t d = 0; d < width; ++d) ge[d] += w * src[d];
          }
        }
      }
    });
  }
  return OkStatus();
}

}  // namespace rectrain::nn

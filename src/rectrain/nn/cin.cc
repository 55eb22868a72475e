#include "rectrain/nn/cin.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "rectrain/base/check.h"
#include "rectrain/kernels/gemm.h"
#include "rectrain/nn/init.h"
#include "rectrain/nn/internal/parallel_util.h"

namespace rectrain::nn {

CompressedInteraction::CompressedInteraction(std::string name, int64_t fields, int64_t dim,
                                             std::vector<int> layer_sizes, uint64_t seed)
    : name_(std::move(name)), fields_(fields), dim_(dim) {
  RECTRAIN_CHECK(fields >= 1 && dim >= 1 && !layer_sizes.empty());
  int64_t in = fields;
  for (size_t k = 0; k < layer_sizes.size(); ++k) {
    RECTRAIN_CHECK(layer_sizes[k] >= 1);
    CinLayer l;
    l.in = in;
    l.size = layer_sizes[k];
    const int64_t K = in * fields;
    l.weight.Resize(l.size, K);
    InitUniform(l.weight.span(), std::sqrt(6.0 / static_cast<double>(K + l.size)),
                ParamSeed(seed, name_ + "." + std::to_string(k + 1) + ".weight"));
    l.weight_grad.ResizeZeroed(l.size, K);
    out_ += l.size;
    in = l.size;
    layers_.push_back(std::move(l));
  }
}

std::string CompressedInteraction::type() const {
  std::string s = "cin(fields=" + std::to_string(fields_) + ",dim=" + std::to_string(dim_) + ",layers=[";
  for (size_t k = 0; k < layers_.size(); ++k) s += (k ? "," : "") + std::to_string(layers_[k].size);
  return s + "])";
}

// Rows per block: Zᵏ of a block stays near 2M floats (8 MB, cache-friendly GEMM operands).
int64_t CompressedInteraction::BlockRows() const {
  int64_t k_max = 1;
  for (const CinLayer& l : layers_) k_max = std::max(k_max, l.in * fields_);
  return std::max<int64_t>(1, (int64_t{1} << 21) / (k_max * dim_));
}

void CompressedInteraction::BuildZ(const CinLayer& layer, const float* prev, int64_t r0, int64_t r1,
                                   float* z, const ComputeContext& compute) const {
  const int64_t F = fields_, D = dim_, H = layer.in, K = H * F;
  internal::ForRows(compute, (r1 - r0) * D, K, [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t global = r0 * D + q;
      const float* p = prev + global * H;
      const float* x0 = x0_.data() + global * F;
      float* out = z + q * K;
      for (int64_t i = 0; i < H; ++i) {
        const float a = p[i];
        for (int64_t j = 0; j < F; ++j) out[i * F + j] = a * x0[j];
      }
    }
  });
}

Status CompressedInteraction::Forward(ConstMatrixView x, MatrixView y, const LayerContext& ctx) {
  RECTRAIN_RETURN_IF_ERROR(CheckForwardShapes(*this, x, y));
  const int64_t B = x.rows, F = fields_, D = dim_;
  x0_.Resize(B * D, F);
  internal::ForRows(ctx.compute, B, F * D, [&](int64_t r0, int64_t r1) {
    for (int64_t b = r0; b < r1; ++b) {
      const float* v = x.row(b);
      for (int64_t d = 0; d < D; ++d) {
        float* out = x0_.row(b * D + d);
        for (int64_t j = 0; j < F; ++j) out[j] = v[j * D + d];
      }
    }
  });
  for (CinLayer& l : layers_) l.maps.Resize(B * D, l.size);
  const int64_t block = BlockRows();
  for (int64_t r0 = 0; r0 < B; r0 += block) {
    const int64_t r1 = std::min(B, r0 + block), m = (r1 - r0) * D;
    const float* prev = x0_.data();
    for (CinLayer& l : layers_) {
      const int64_t K = l.in * F;
      z_.Resize(m, K);
      BuildZ(l, prev, r0, r1, z_.data(), ctx.compute);
      kernels::Gemm(false, true, m, l.size, K, 1.0f, z_.data(), K, l.weight.data(), K, 0.0f,
                    l.maps.row(r0 * D), l.size);
      prev = l.maps.data();
    }
  }
  // Sum pooling over d.
  internal::ForRows(ctx.compute, B, out_ * D, [&](int64_t r0, int64_t r1) {
    for (int64_t b = r0; b < r1; ++b) {
      float* out = y.row(b);
      for (const CinLayer& l : layers_) {
        std::fill(out, out + l.size, 0.0f);
        for (int64_t d = 0; d < D; ++d) {
          const float* m = l.maps.row(b * D + d);
          for (int64_t h = 0; h < l.size; ++h) out[h] += m[h];
        }
        out += l.size;
      }
    }
  });
  return OkStatus();
}

Status CompressedInteraction::Backward(ConstMatrixView x, ConstMatrixView y, MatrixView dy,
                                       MatrixView dx, const LayerContext& ctx) {
  RECTRAIN_RETURN_IF_ERROR(CheckBackwardShapes(*this, x, y, dy, dx));
  const int64_t B = x.rows, F = fields_, D = dim_;
  const int L = static_cast<int>(layers_.size());
  for (CinLayer& l : layers_) l.weight_grad.SetZero();
  const int64_t block = BlockRows();
  for (int64_t r0 = 0; r0 < B; r0 += block) {
    const int64_t r1 = std::min(B, r0 + block), m = (r1 - r0) * D;
    dx0_.Resize(m, F);
    dx0_.SetZero();
    int64_t col = out_;  // the columns of dy that belong to layer k
    for (int k = L - 1; k >= 0; --k) {
      CinLayer& l = layers_[static_cast<size_t>(k)];
      col -= l.size;
      // Gᵏ = pooled gradient spread over d (+ what layer k+1 sent back, in gprev_ swapped in).
      if (k == L - 1) {
        g_.Resize(m, l.size);
        g_.SetZero();
      } else {
        std::swap(g_, gprev_);
      }
      internal::ForRows(ctx.compute, r1 - r0, l.size * D, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
          const float* g = dy.row(r0 + b) + col;
          for (int64_t d = 0; d < D; ++d) {
            float* out = g_.row(b * D + d);
            for (int64_t h = 0; h < l.size; ++h) out[h] += g[h];
          }
        }
      });
      const float* prev = k == 0 ? x0_.data() : layers_[static_cast<size_t>(k - 1)].maps.data();
      const int64_t K = l.in * F;
      z_.Resize(m, K);
      BuildZ(l, prev, r0, r1, z_.data(), ctx.compute);
      kernels::Gemm(true, false, l.size, K, m, 1.0f, g_.data(), l.size, z_.data(), K, 1.0f,
                    l.weight_grad.data(), K);
      dz_.Resize(m, K);
      kernels::Gemm(false, false, m, K, l.size, 1.0f, g_.data(), l.size, l.weight.data(), K, 0.0f,
                    dz_.data(), K);
      if (k > 0) {
        gprev_.Resize(m, l.in);
        gprev_.SetZero();
      }
      internal::ForRows(ctx.compute, m, K, [&](int64_t q0, int64_t q1) {
        for (int64_t q = q0; q < q1; ++q) {
          const int64_t global = r0 * D + q;
          const float* p = prev + global * l.in;
          const float* x0 = x0_.row(global);
          const float* dzq = dz_.row(q);
          float* dx0 = dx0_.row(q);
          float* dp = k > 0 ? gprev_.row(q) : dx0;  // layer 1: X^{k−1} is X⁰ itself
          for (int64_t i = 0; i < l.in; ++i) {
            const float* dzi = dzq + i * F;
            float s = 0.0f;
            for (int64_t j = 0; j < F; ++j) {
              s += dzi[j] * x0[j];
              dx0[j] += dzi[j] * p[i];
            }
            dp[i] += s;
          }
        }
      });
    }
    if (dx.data == nullptr) continue;
    internal::ForRows(ctx.compute, r1 - r0, F * D, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        float* out = dx.row(r0 + b);
        for (int64_t d = 0; d < D; ++d) {
          const float* g = dx0_.row(b * D + d);
          for (int64_t j = 0; j < F; ++j) out[j * D + d] = g[j];
        }
      }
    });
  }
  return OkStatus();
}

std::vector<optim::ParamRef> CompressedInteraction::Params() {
  std::vector<optim::ParamRef> out;
  for (size_t k = 0; k < layers_.size(); ++k) {
    out.push_back({name_ + "." + std::to_string(k + 1) + ".weight", layers_[k].weight.span(),
                   layers_[k].weight_grad.span(), true});
  }
  return out;
}

}  // namespace rectrain::nn

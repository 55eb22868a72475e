#include "rectrain/testing/layer_check.h"

#include <span>

#include "rectrain/base/random.h"
#include "rectrain/tensor/tensor.h"

namespace rectrain::testing {

std::vector<GradCheckResult> CheckLayerGradients(nn::Layer& layer,
                                                 const LayerCheckOptions& options) {
  const int64_t rows = options.batch, in = layer.in_features(), out = layer.out_features();
  const int64_t ld = in + options.pad;
  std::vector<float> x(static_cast<size_t>(rows * ld), 0.0f);
  Rng rng(options.seed);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < in; ++c) {
      x[r * ld + c] = static_cast<float>(rng.Normal() * options.input_scale);
    }
  }
  tensor::Tensor y(rows, out), dy(rows, out), dx(rows, in);
  nn::LayerContext ctx{ComputeContext{options.num_threads}, true, options.seed + 1};
  const tensor::ConstMatrixView xv{x.data(), rows, in, ld};
  Projection proj(rows * out, options.seed + 2);

  auto forward = [&]() -> double {
    Status s = layer.Forward(xv, y.view(), ctx);
    RECTRAIN_CHECK(s.ok()) << s;
    return proj(y.span());
  };
  forward();
  std::copy(proj.weights().begin(), proj.weights().end(), dy.data());
  Status s = layer.Backward(xv, y.view(), dy.view(), dx.view(), ctx);
  RECTRAIN_CHECK(s.ok()) << s;

  std::vector<GradCheckResult> results;
  // Input: compare against dx, perturbing the strided x in place through a dense gather.
  {
    std::vector<float> analytic(dx.span().begin(), dx.span().end());
    std::vector<float> packed(static_cast<size_t>(rows * in));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < in; ++c) packed[r * in + c] = x[r * ld + c];
    }
    auto loss = [&]() -> double {
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < in; ++c) x[r * ld + c] = packed[r * in + c];
      }
      return forward();
    };
    results.push_back(CheckGradient(layer.name() + ".input", packed, analytic, loss,
                                    options.grad));
    loss();  // leave x equal to the unperturbed input for the parameter checks
  }
  // Parameters: snapshot the analytic gradients first (Forward does not touch them, but be
  // independent of that).
  for (const optim::ParamRef& p : layer.Params()) {
    std::vector<float> analytic(p.grad.begin(), p.grad.end());
    results.push_back(CheckGradient(p.name, p.value, analytic, forward, options.grad));
  }
  return results;
}

SyntheticBatch::SyntheticBatch(const nn::ModelSpec& spec, int64_t batch, uint64_t seed,
                               const SyntheticOptions& options)
    : batch_(batch) {
  Rng rng(seed);
  for (const auto& table : spec.tables) {
    num_unique_.push_back(options.num_unique);
    dims_.push_back(table.dim);
    std::vector<float> rows(static_cast<size_t>(options.num_unique * table.dim));
    for (float& v : rows) v = static_cast<float>(rng.Normal() * options.row_scale);
    rows_.push_back(std::move(rows));
  }
  dense_.resize(static_cast<size_t>(batch * spec.num_dense));
  for (float& v : dense_) v = static_cast<float>(rng.Normal());
  for (size_t f = 0; f < spec.fields.size(); ++f) {
    const int64_t nu = num_unique_[spec.fields[f].table];
    std::vector<int32_t> offsets, indices;
    if (options.multi_valued && f % 2 == 1) {
      offsets.push_back(0);
      for (int64_t r = 0; r < batch; ++r) {
        const int64_t len = static_cast<int64_t>(rng.Below(4));
        for (int64_t k = 0; k < len; ++k) indices.push_back(static_cast<int32_t>(rng.Below(nu)));
        offsets.push_back(static_cast<int32_t>(indices.size()));
      }
    } else {
      for (int64_t r = 0; r < batch; ++r) indices.push_back(static_cast<int32_t>(rng.Below(nu)));
    }
    offsets_.push_back(std::move(offsets));
    indices_.push_back(std::move(indices));
  }
  for (size_t t = 0; t < rows_.size(); ++t) {
    pulled_.push_back({rows_[t], num_unique_[t], dims_[t]});
  }
  for (size_t f = 0; f < indices_.size(); ++f) fields_.push_back({offsets_[f], indices_[f]});
}

nn::ForwardInput SyntheticBatch::input() const {
  nn::ForwardInput in;
  in.batch_size = batch_;
  in.dense = dense_;
  in.tables = pulled_;
  in.fields = fields_;
  in.seed = 12345;
  return in;
}

std::vector<GradCheckResult> CheckModelGradients(nn::Model& model, SyntheticBatch& batch,
                                                 const GradCheckOptions& options,
                                                 int num_threads) {
  const ComputeContext compute{num_threads};
  const int64_t n = batch.batch_size() * model.num_outputs();
  std::vector<float> logits(static_cast<size_t>(n));
  Projection proj(n, 99);
  auto forward = [&]() -> double {
    Status s = model.Forward(batch.input(), /*training=*/true, logits, compute);
    RECTRAIN_CHECK(s.ok()) << s;
    return proj(logits);
  };
  forward();
  const nn::ModelSpec& spec = model.spec();
  std::vector<std::vector<float>> grads;
  std::vector<std::span<float>> grad_spans;
  for (size_t t = 0; t < spec.tables.size(); ++t) {
    grads.emplace_back(batch.rows()[t].size(), -7.0f);  // poison: Backward must overwrite
  }
  for (auto& g : grads) grad_spans.emplace_back(g);
  Status s = model.Backward(proj.weights(), grad_spans, compute);
  RECTRAIN_CHECK(s.ok()) << s;

  std::vector<GradCheckResult> results;
  for (const optim::ParamRef& p : model.Params()) {
    std::vector<float> analytic(p.grad.begin(), p.grad.end());
    results.push_back(CheckGradient(p.name, p.value, analytic, forward, options));
  }
  for (size_t t = 0; t < spec.tables.size(); ++t) {
    results.push_back(CheckGradient("table:" + spec.tables[t].name, batch.rows()[t], grads[t],
                                    forward, options));
  }
  return results;
}

}  // namespace rectrain::testing

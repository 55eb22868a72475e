// The model zoo. lr, fm, wide_deep, deepfm, dcn_v2, xdeepfm, autoint and fwfm are instances of one
// ComposedModel:
//
//   x0 = [ pooled embeddings of every field | dense features ]          [B × (Σ emb dims + nd)]
//   logit = first_order + fm + field_net + deep
//     first_order = Σ_f w_f(id) + linear(dense)   (w_f: column 0 of the field's table row)
//     fm          = FM second-order interaction over the field embeddings (needs equal dims)
//     field_net   = Dense(CompressedInteraction(field embeddings)) (xdeepfm), or
//                   Dense(FieldSelfAttention^L(field embeddings)) (autoint), or
//                   Dense(DotInteraction(field embeddings)) (fwfm: a weight per field pair);
//                   equal dims
//     deep        = MLP(x0), or for dcn_v2 MLP(CrossNetwork(x0)) (stacked)
// dlrm (bottom MLP, dot interaction, top MLP) and mlp have their own classes below.
// See docs/models.md for the equations and config keys per type.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "rectrain/kernels/gemm.h"
#include "rectrain/nn/activation.h"
#include "rectrain/nn/attention.h"
#include "rectrain/nn/cin.h"
#include "rectrain/nn/cross.h"
#include "rectrain/nn/dense.h"
#include "rectrain/nn/embedding_bag.h"
#include "rectrain/nn/fm.h"
#include "rectrain/nn/interaction.h"
#include "rectrain/nn/internal/parallel_util.h"
#include "rectrain/nn/layer_norm.h"
#include "rectrain/nn/model_config.h"
#include "rectrain/nn/sequential.h"

namespace rectrain::nn {
namespace {

// model.type is a string in the config (the YAML value); MakeModel parses it once into a
// ModelType (kModelTypes, below the models), so a misspelt type in the code is a compile error,
// not a silent false.
enum class ModelType { kLr, kFm, kWideDeep, kDeepFm, kDcnV2, kXDeepFm, kAutoInt, kFwFm, kDlrm, kDin, kMmoe, kMlp };

struct Parts {
  bool first_order = false;
  std::unique_ptr<FmInteraction> fm;  // over columns [0, F·D) of x0
  std::unique_ptr<Sequential> field_net;  // columns [0, F·D) of x0 -> [B × 1]: CIN or attention
  std::unique_ptr<Sequential> deep;   // x0 -> [B × 1]
};

// The shape checks every model's Forward starts with: a batch size >= 0, `outputs` logits per
// row, and batch × num_dense dense features. InvalidArgument names the mismatch.
Status CheckForwardInput(const ForwardInput& input, std::span<const float> logits, int64_t outputs, int64_t num_dense) {
  const int64_t batch = input.batch_size;
  if (batch < 0) return InvalidArgumentError("batch_size " + std::to_string(batch) + " < 0");
  if (static_cast<int64_t>(logits.size()) != batch * outputs) {
    return InvalidArgumentError("logits has " + std::to_string(logits.size()) + " entries, need batch_size" +
                                (outputs == 1 ? " = " + std::to_string(batch)
                                              : " x " + std::to_string(outputs) + " = " + std::to_string(batch * outputs)));
  }
  if (static_cast<int64_t>(input.dense.size()) != batch * num_dense) {
    return InvalidArgumentError("dense features: got " + std::to_string(input.dense.size()) +
                                " floats, expected batch_size x num_dense = " + std::to_string(batch) + " x " +
                                std::to_string(num_dense));
  }
  return OkStatus();
}

// Backward's check of dlogits against the last Forward's rows × outputs.
Status CheckDlogits(std::span<const float> dlogits, int64_t expected) {
  if (static_cast<int64_t>(dlogits.size()) == expected) return OkStatus();
  return InvalidArgumentError("dlogits has " + std::to_string(dlogits.size()) + " entries, need " + std::to_string(expected));
}

// Copies the batch's dense features [batch × num_dense] into columns [col, col + num_dense) of
// x0 (the tail of the deep input, after the embeddings the bag wrote).
void CopyDenseInto(const ComputeContext& compute, std::span<const float> dense, int64_t batch, int64_t num_dense,
                   tensor::Tensor& x0, int64_t col) {
  if (num_dense == 0) return;
  internal::ForRows(compute, batch, x0.cols(), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      std::memcpy(x0.row(r) + col, dense.data() + r * num_dense, sizeof(float) * static_cast<size_t>(num_dense));
    }
  });
}

class ComposedModel final : public Model {
 public:
  ComposedModel(std::string name, ModelSpec spec, std::unique_ptr<EmbeddingBag> bag,
                int64_t emb_width, Parts parts, uint64_t seed, GemmPrecision precision)
      : name_(std::move(name)),
        spec_(std::move(spec)),
        bag_(std::move(bag)),
        emb_width_(emb_width),
        num_dense_(spec_.num_dense),
        first_order_(parts.first_order),
        fm_(std::move(parts.fm)),
        field_net_(std::move(parts.field_net)),
        deep_(std::move(parts.deep)),
        precision_(precision) {
    if (first_order_) {
      if (num_dense_ > 0) {
        // Zero-initialised, like the first-order embedding column: a random start puts
        // logits of several units on raw (log1p) dense values, which Adam at 1e-3 needs far
        // more than an epoch to undo (lr on easy data: valid AUC 0.56 instead of 0.79).
        linear_ = std::make_unique<Dense>("linear", num_dense_, 1, Activation::kNone,
                                          WeightInit::kZeros, seed);
      } else {
        bias_.ResizeZeroed(1, 1);
        bias_grad_.ResizeZeroed(1, 1);
      }
    }
  }

  std::string name() const override { return name_; }
  const ModelSpec& spec() const override { return spec_; }

  Status Forward(const ForwardInput& input, bool training, std::span<float> logits,
                 const ComputeContext& compute) override {
    RECTRAIN_RETURN_IF_ERROR(CheckForwardInput(input, logits, 1, num_dense_));
    const int64_t batch = input.batch_size;
    ctx_ = LayerContext{compute, training, input.seed, precision_, input.row_offset};
    batch_ = -1;  // invalid until this Forward succeeds
    const int64_t width = emb_width_ + num_dense_;
    x0_.Resize(batch, width);
    lead_.Resize(batch, 1);
    RECTRAIN_RETURN_IF_ERROR(
        bag_->Forward(batch, input.tables, input.fields, x0_.view(), lead_.span(), compute))
        << "model " << name_;
    CopyDenseInto(compute, input.dense, batch, num_dense_, x0_, emb_width_);
    const bool has_lead = bag_->has_lead();
    if (linear_) {
      linear_out_.Resize(batch, 1);
      RECTRAIN_RETURN_IF_ERROR(
          linear_->Forward(x0_.view().Cols(emb_width_, num_dense_), linear_out_.view(), ctx_));
    }
    if (fm_) {
      fm_out_.Resize(batch, 1);
      RECTRAIN_RETURN_IF_ERROR(
          fm_->Forward(x0_.view().Cols(0, fm_->in_features()), fm_out_.view(), ctx_));
    }
    if (field_net_) {
      field_out_.Resize(batch, 1);
      RECTRAIN_RETURN_IF_ERROR(
          field_net_->Forward(x0_.view().Cols(0, field_net_->in_features()), field_out_.view(), ctx_));
    }
    if (deep_) {
      deep_out_.Resize(batch, 1);
      RECTRAIN_RETURN_IF_ERROR(deep_->Forward(x0_.view(), deep_out_.view(), ctx_));
    }
    const float bias = bias_.size() ? bias_.data()[0] : 0.0f;
    internal::ForRows(compute, batch, 4, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        float z = has_lead ? lead_.data()[r] : 0.0f;
        if (first_order_) z += linear_ ? linear_out_.data()[r] : bias;
        if (fm_) z += fm_out_.data()[r];
        if (field_net_) z += field_out_.data()[r];
        if (deep_) z += deep_out_.data()[r];
        logits[r] = z;
      }
    });
    batch_ = batch;
    return OkStatus();
  }

  Status Backward(std::span<const float> dlogits, std::span<const std::span<float>> table_grads,
                  const ComputeContext& compute) override {
    if (batch_ < 0) return FailedPreconditionError("model " + name_ + ": Backward before Forward");
    const int64_t batch = batch_;
    if (static_cast<int64_t>(dlogits.size()) != batch) {
      return InvalidArgumentError("dlogits has " + std::to_string(dlogits.size()) +
                                  " entries, need batch_size = " + std::to_string(batch));
    }
    ctx_.compute = compute;
    const tensor::ConstMatrixView dz = {dlogits.data(), batch, 1, 1};
    if (first_order_) {
      if (linear_) {
        scratch_.Resize(batch, 1);
        std::memcpy(scratch_.data(), dlogits.data(), sizeof(float) * batch);
        RECTRAIN_RETURN_IF_ERROR(linear_->Backward(x0_.view().Cols(emb_width_, num_dense_),
                                                   linear_out_.view(), scratch_.view(),
                                                   MatrixView{}, ctx_));
      } else {
        double sum = 0;
        for (float g : dlogits) sum += g;
        bias_grad_.data()[0] = static_cast<float>(sum);
      }
    }
    const int64_t width = emb_width_ + num_dense_;
    const bool need_dx0 = emb_width_ > 0;
    dx0_.Resize(batch, need_dx0 ? width : 0);
    if (deep_) {
      scratch_.Resize(batch, 1);
      std::memcpy(scratch_.data(), dlogits.data(), sizeof(float) * batch);
      RECTRAIN_RETURN_IF_ERROR(deep_->Backward(x0_.view(), deep_out_.view(), scratch_.view(),
                                               need_dx0 ? dx0_.view() : MatrixView{}, ctx_));
    }
    if (fm_) {
      const int64_t fw = fm_->in_features();
      RECTRAIN_RETURN_IF_ERROR(fm_->BackwardInto(x0_.view().Cols(0, fw), dz,
                                                 dx0_.view().Cols(0, fw),
                                                 /*accumulate=*/deep_ != nullptr, ctx_));
    }
    if (field_net_) {
      const int64_t cw = field_net_->in_features();
      scratch_.Resize(batch, 1);
      std::memcpy(scratch_.data(), dlogits.data(), sizeof(float) * batch);
      field_dx_.Resize(batch, cw);
      RECTRAIN_RETURN_IF_ERROR(field_net_->Backward(x0_.view().Cols(0, cw), field_out_.view(),
                                              scratch_.view(), field_dx_.view(), ctx_));
      const bool add = deep_ != nullptr || fm_ != nullptr;
      if (!add && width > cw) dx0_.SetZero();
      internal::ForRows(compute, batch, cw, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          float* out = dx0_.row(r);
          const float* g = field_dx_.row(r);
          for (int64_t c = 0; c < cw; ++c) out[c] = add ? out[c] + g[c] : g[c];
        }
      });
    }
    if (need_dx0 && !deep_ && !fm_ && !field_net_) dx0_.SetZero();
    RECTRAIN_RETURN_IF_ERROR(bag_->Backward(dx0_.view(), dlogits, table_grads, compute))
        << "model " << name_;
    return OkStatus();
  }

  std::vector<optim::ParamRef> Params() override {
    std::vector<optim::ParamRef> params;
    if (linear_) params = linear_->Params();
    if (bias_.size()) params.push_back({"linear.bias", bias_.span(), bias_grad_.span(), false});
    if (field_net_) {
      for (auto& p : field_net_->Params()) params.push_back(std::move(p));
    }
    if (deep_) {
      for (auto& p : deep_->Params()) params.push_back(std::move(p));
    }
    return params;
  }

 private:
  std::string name_;
  ModelSpec spec_;
  std::unique_ptr<EmbeddingBag> bag_;
  int64_t emb_width_;
  int64_t num_dense_;
  bool first_order_;
  std::unique_ptr<FmInteraction> fm_;
  std::unique_ptr<Sequential> field_net_;  // cin (xdeepfm), self-attention (autoint), weighted dots (fwfm)
  std::unique_ptr<Sequential> deep_;
  GemmPrecision precision_;
  std::unique_ptr<Dense> linear_;      // first-order linear over the dense features
  tensor::Tensor bias_, bias_grad_;    // first-order bias when there are no dense features

  LayerContext ctx_;
  int64_t batch_ = -1;
  tensor::Tensor x0_, dx0_, lead_, linear_out_, fm_out_, field_out_, field_dx_, deep_out_, scratch_;
};

// dlrm (Naumov et al., 2019): the dense features go through a bottom MLP to one vector of the
// embedding dim D; it and the F field embeddings meet in the pairwise dot interaction, whose
// output (the bottom vector and the F(F+1)/2 dots) feeds the top MLP:
//   z = [ bottom(dense) | v_1 .. v_F ]   [B × (F+1)·D]   (without dense features: [v_1 .. v_F])
//   logit = top( DotInteraction(z) )
// The embedding bag writes the field embeddings straight into z's columns after the bottom
// vector; no first-order term (lead 0).
class DlrmModel final : public Model {
 public:
  DlrmModel(ModelSpec spec, std::unique_ptr<EmbeddingBag> bag, int dim,
            std::unique_ptr<Sequential> bottom, std::unique_ptr<DotInteraction> interaction,
            std::unique_ptr<Sequential> top, GemmPrecision precision)
      : spec_(std::move(spec)),
        bag_(std::move(bag)),
        dim_(dim),
        num_dense_(spec_.num_dense),
        bottom_(std::move(bottom)),
        interaction_(std::move(interaction)),
        top_(std::move(top)),
        precision_(precision) {}

  std::string name() const override { return "dlrm"; }
  const ModelSpec& spec() const override { return spec_; }

  Status Forward(const ForwardInput& input, bool training, std::span<float> logits,
                 const ComputeContext& compute) override {
    RECTRAIN_RETURN_IF_ERROR(CheckForwardInput(input, logits, 1, num_dense_));
    const int64_t batch = input.batch_size;
    ctx_ = LayerContext{compute, training, input.seed, precision_, input.row_offset};
    batch_ = -1;
    z_.Resize(batch, interaction_->in_features());
    if (bottom_) {
      bottom_out_.Resize(batch, dim_);
      RECTRAIN_RETURN_IF_ERROR(bottom_->Forward(DenseView(input.dense, batch), bottom_out_.view(), ctx_));
      internal::ForRows(compute, batch, dim_, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) std::memcpy(z_.row(r), bottom_out_.row(r), sizeof(float) * static_cast<size_t>(dim_));
      });
    }
    if (!spec_.fields.empty()) {
      RECTRAIN_RETURN_IF_ERROR(bag_->Forward(batch, input.tables, input.fields, z_.view(), {}, compute)) << "model dlrm";
    }
    inter_.Resize(batch, interaction_->out_features());
    RECTRAIN_RETURN_IF_ERROR(interaction_->Forward(z_.view(), inter_.view(), ctx_));
    out_.Resize(batch, 1);
    RECTRAIN_RETURN_IF_ERROR(top_->Forward(inter_.view(), out_.view(), ctx_));
    std::memcpy(logits.data(), out_.data(), sizeof(float) * static_cast<size_t>(batch));
    if (num_dense_ > 0) {  // the bottom MLP's Backward reads its input again; the span may not outlive the call
      dense_.Resize(batch, num_dense_);
      std::memcpy(dense_.data(), input.dense.data(), sizeof(float) * input.dense.size());
    }
    batch_ = batch;
    return OkStatus();
  }

  Status Backward(std::span<const float> dlogits, std::span<const std::span<float>> table_grads,
                  const ComputeContext& compute) override {
    if (batch_ < 0) return FailedPreconditionError("model dlrm: Backward before Forward");
    RECTRAIN_RETURN_IF_ERROR(CheckDlogits(dlogits, batch_));
    ctx_.compute = compute;
    scratch_.Resize(batch_, 1);
    std::memcpy(scratch_.data(), dlogits.data(), sizeof(float) * dlogits.size());
    dinter_.Resize(batch_, interaction_->out_features());
    RECTRAIN_RETURN_IF_ERROR(top_->Backward(inter_.view(), out_.view(), scratch_.view(), dinter_.view(), ctx_));
    dz_.Resize(batch_, interaction_->in_features());
    RECTRAIN_RETURN_IF_ERROR(interaction_->Backward(z_.view(), inter_.view(), dinter_.view(), dz_.view(), ctx_));
    if (bottom_) {
      dbottom_.Resize(batch_, dim_);
      internal::ForRows(compute, batch_, dim_, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) std::memcpy(dbottom_.row(r), dz_.row(r), sizeof(float) * static_cast<size_t>(dim_));
      });
      RECTRAIN_RETURN_IF_ERROR(bottom_->Backward(dense_.view(), bottom_out_.view(), dbottom_.view(), MatrixView{}, ctx_));
    }
    if (!spec_.fields.empty()) {
      RECTRAIN_RETURN_IF_ERROR(bag_->Backward(dz_.view(), {}, table_grads, compute)) << "model dlrm";
    }
    return OkStatus();
  }

  std::vector<optim::ParamRef> Params() override {
    std::vector<optim::ParamRef> params;
    if (bottom_) params = bottom_->Params();
    for (auto& p : top_->Params()) params.push_back(std::move(p));
    return params;
  }

 private:
  ConstMatrixView DenseView(std::span<const float> dense, int64_t batch) const {
    return {dense.data(), batch, num_dense_, num_dense_};
  }

  ModelSpec spec_;
  std::unique_ptr<EmbeddingBag> bag_;
  int64_t dim_;
  int64_t num_dense_;
  std::unique_ptr<Sequential> bottom_;  // null without dense features
  std::unique_ptr<DotInteraction> interaction_;
  std::unique_ptr<Sequential> top_;
  GemmPrecision precision_;
  LayerContext ctx_;
  int64_t batch_ = -1;
  tensor::Tensor dense_, z_, dz_, bottom_out_, dbottom_, inter_, dinter_, out_, scratch_;
};

// din (Zhou et al., "Deep Interest Network for Click-Through Rate Prediction", KDD 2018): the
// target item's embedding t attends over the embeddings h_1..h_L of the row's behaviour
// sequence (a multi-valued field kept in order; its ids hashed like the item's, hash_as). An
// activation unit, a small MLP over [h, t, h − t, h ⊙ t], gives each h_p a weight w_p (no
// softmax, as in the paper, so the sum keeps the intensity of the interest); the user-interest
// vector u = Σ_p w_p h_p joins the other fields' pooled embeddings and the dense features:
//   x0 = [ pooled embeddings of every field but the sequence | u | dense ]   logit = MLP(x0)
// Variable lengths come from the field's CSR offsets, so no padding enters the sum (an empty
// sequence is one missing id, learnt like any row). Tables have no first-order column.
class DinModel final : public Model {
 public:
  DinModel(ModelSpec spec, std::unique_ptr<EmbeddingBag> bag, int history_field, int64_t target_col, int64_t dim,
           std::unique_ptr<Sequential> unit, std::unique_ptr<Sequential> top, GemmPrecision precision)
      : spec_(std::move(spec)),
        bag_(std::move(bag)),
        history_(history_field),
        table_(spec_.fields[static_cast<size_t>(history_field)].table),
        target_col_(target_col),
        dim_(dim),
        emb_width_(bag_->out_width()),
        num_dense_(spec_.num_dense),
        unit_(std::move(unit)),
        top_(std::move(top)),
        precision_(precision) {}

  std::string name() const override { return "din"; }
  const ModelSpec& spec() const override { return spec_; }

  Status Forward(const ForwardInput& input, bool training, std::span<float> logits,
                 const ComputeContext& compute) override {
    RECTRAIN_RETURN_IF_ERROR(CheckForwardInput(input, logits, 1, num_dense_));
    const int64_t batch = input.batch_size;
    if (input.fields.size() != spec_.fields.size() || input.tables.size() != spec_.tables.size()) {
      return InvalidArgumentError("model din: expected " + std::to_string(spec_.fields.size()) + " fields and " +
                                  std::to_string(spec_.tables.size()) + " tables");
    }
    ctx_ = LayerContext{compute, training, input.seed, precision_, input.row_offset};
    batch_ = -1;
    const int64_t D = dim_, width = emb_width_ + D + num_dense_;
    x0_.Resize(batch, width);
    std::vector<FieldIndices> others;
    for (size_t f = 0; f < input.fields.size(); ++f) {
      if (static_cast<int>(f) != history_) others.push_back(input.fields[f]);
    }
    RECTRAIN_RETURN_IF_ERROR(bag_->Forward(batch, input.tables, others, x0_.view(), {}, compute)) << "model din";
    // The sequence, copied (Backward needs it; the input spans only live for this call).
    const FieldIndices& seq = input.fields[static_cast<size_t>(history_)];
    const PulledTable& pulled = input.tables[static_cast<size_t>(table_)];
    offsets_.assign(static_cast<size_t>(batch) + 1, 0);
    if (seq.offsets.empty()) {
      if (static_cast<int64_t>(seq.rows.size()) != batch) return InvalidArgumentError("model din: field " + spec_.fields[static_cast<size_t>(history_)].name + ": expected one index per row");
      for (int64_t r = 0; r <= batch; ++r) offsets_[static_cast<size_t>(r)] = static_cast<int32_t>(r);
    } else {
      if (static_cast<int64_t>(seq.offsets.size()) != batch + 1) return InvalidArgumentError("model din: field " + spec_.fields[static_cast<size_t>(history_)].name + ": offsets size");
      offsets_.assign(seq.offsets.begin(), seq.offsets.end());
    }
    items_.assign(seq.rows.begin(), seq.rows.end());
    const int64_t P = static_cast<int64_t>(items_.size());
    hist_.Resize(P, D);  // h_p, gathered: Backward needs them and the pulled rows are the caller's
    for (int64_t p = 0; p < P; ++p) {
      const int32_t i = items_[static_cast<size_t>(p)];
      if (i < 0 || i >= pulled.num_unique) return InvalidArgumentError("model din: sequence index " + std::to_string(i) + " out of range");
      std::memcpy(hist_.row(p), pulled.rows.data() + static_cast<int64_t>(i) * pulled.dim, sizeof(float) * static_cast<size_t>(D));
    }
    unit_in_.Resize(P, 4 * D);
    internal::ForRows(compute, batch, 4 * D * 4, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* t = x0_.row(r) + target_col_;
        for (int32_t p = offsets_[static_cast<size_t>(r)]; p < offsets_[static_cast<size_t>(r) + 1]; ++p) {
          const float* hp = hist_.row(p);
          float* a = unit_in_.row(p);
          for (int64_t d = 0; d < D; ++d) {
            a[d] = hp[d];
            a[D + d] = t[d];
            a[2 * D + d] = hp[d] - t[d];
            a[3 * D + d] = hp[d] * t[d];
          }
        }
      }
    });
    weights_.Resize(P, 1);
    RECTRAIN_RETURN_IF_ERROR(unit_->Forward(unit_in_.view(), weights_.view(), ctx_));
    const float* dense = input.dense.data();
    internal::ForRows(compute, batch, width, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        float* u = x0_.row(r) + emb_width_;
        std::fill(u, u + D, 0.0f);
        for (int32_t p = offsets_[static_cast<size_t>(r)]; p < offsets_[static_cast<size_t>(r) + 1]; ++p) {
          const float w = weights_.data()[p];
          const float* hp = hist_.row(p);
          for (int64_t d = 0; d < D; ++d) u[d] += w * hp[d];
        }
        if (num_dense_ > 0) std::memcpy(u + D, dense + r * num_dense_, sizeof(float) * static_cast<size_t>(num_dense_));
      }
    });
    out_.Resize(batch, 1);
    RECTRAIN_RETURN_IF_ERROR(top_->Forward(x0_.view(), out_.view(), ctx_));
    std::memcpy(logits.data(), out_.data(), sizeof(float) * static_cast<size_t>(batch));
    batch_ = batch;
    return OkStatus();
  }

  Status Backward(std::span<const float> dlogits, std::span<const std::span<float>> table_grads,
                  const ComputeContext& compute) override {
    if (batch_ < 0) return FailedPreconditionError("model din: Backward before Forward");
    RECTRAIN_RETURN_IF_ERROR(CheckDlogits(dlogits, batch_));
    ctx_.compute = compute;
    const int64_t D = dim_, P = static_cast<int64_t>(items_.size());
    scratch_.Resize(batch_, 1);
    std::memcpy(scratch_.data(), dlogits.data(), sizeof(float) * dlogits.size());
    dx0_.Resize(batch_, x0_.cols());
    RECTRAIN_RETURN_IF_ERROR(top_->Backward(x0_.view(), out_.view(), scratch_.view(), dx0_.view(), ctx_));
    // u = Σ w_p h_p:  dw_p = <du, h_p>,  dh_p = w_p du.
    dw_.Resize(P, 1);
    dh_.Resize(P, D);
    internal::ForRows(compute, batch_, 2 * D * 4, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* du = dx0_.row(r) + emb_width_;
        for (int32_t p = offsets_[static_cast<size_t>(r)]; p < offsets_[static_cast<size_t>(r) + 1]; ++p) {
          const float* hp = hist_.row(p);
          const float w = weights_.data()[p];
          float s = 0.0f;
          for (int64_t d = 0; d < D; ++d) {
            s += du[d] * hp[d];
            dh_.row(p)[d] = w * du[d];
          }
          dw_.data()[p] = s;
        }
      }
    });
    dunit_.Resize(P, 4 * D);
    RECTRAIN_RETURN_IF_ERROR(unit_->Backward(unit_in_.view(), weights_.view(), dw_.view(), dunit_.view(), ctx_));
    // a = [h, t, h − t, h ⊙ t]: dh += a0 + a2 + a3 ⊙ t;  dt += a1 − a2 + a3 ⊙ h (into x0's target columns).
    internal::ForRows(compute, batch_, 4 * D * 4, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* t = x0_.row(r) + target_col_;
        float* dt = dx0_.row(r) + target_col_;
        for (int32_t p = offsets_[static_cast<size_t>(r)]; p < offsets_[static_cast<size_t>(r) + 1]; ++p) {
          const float* hp = hist_.row(p);
          const float* g = dunit_.row(p);
          float* dh = dh_.row(p);
          for (int64_t d = 0; d < D; ++d) {
            dh[d] += g[d] + g[2 * D + d] + g[3 * D + d] * t[d];
            dt[d] += g[D + d] - g[2 * D + d] + g[3 * D + d] * hp[d];
          }
        }
      }
    });
    RECTRAIN_RETURN_IF_ERROR(bag_->Backward(dx0_.view(), {}, table_grads, compute)) << "model din";
    // The sequence's rows, in (row, position) order: a fixed sum order, the same for any thread count.
    float* grad = table_grads[static_cast<size_t>(table_)].data();
    for (int64_t p = 0; p < P; ++p) {
      float* g = grad + static_cast<int64_t>(items_[static_cast<size_t>(p)]) * D;
      const float* dh = dh_.row(p);
      for (int64_t d = 0; d < D; ++d) g[d] += dh[d];
    }
    return OkStatus();
  }

  std::vector<optim::ParamRef> Params() override {
    std::vector<optim::ParamRef> params = unit_->Params();
    for (auto& p : top_->Params()) params.push_back(std::move(p));
    return params;
  }

 private:
  ModelSpec spec_;
  std::unique_ptr<EmbeddingBag> bag_;  // every field but the sequence
  int history_;                        // index of the sequence field in spec_.fields
  int table_;                          // its table (shared with the target's)
  int64_t target_col_;                 // the target's columns in x0
  int64_t dim_;
  int64_t emb_width_;                  // the bag's columns; u follows, then the dense features
  int64_t num_dense_;
  std::unique_ptr<Sequential> unit_;   // activation unit [P × 4D] -> [P × 1]
  std::unique_ptr<Sequential> top_;
  GemmPrecision precision_;
  LayerContext ctx_;
  int64_t batch_ = -1;
  std::vector<int32_t> offsets_, items_;
  tensor::Tensor hist_, x0_, dx0_, unit_in_, weights_, dw_, dh_, dunit_, out_, scratch_;
};

// mmoe (Ma et al., "Modeling Task Relationships in Multi-task Learning with Multi-gate
// Mixture-of-Experts", KDD 2018): E experts (MLPs over x0 = [pooled embeddings | dense]) are
// shared by T binary tasks; task t mixes them with its own softmax gate and feeds its tower:
//   h_e = expert_e(x0) [B × H],  g_t = softmax(x0 · G_t + c_t) [B × E],
//   m_t = Σ_e g_te h_e,  logit_t = tower_t(m_t)                   logits [B × T], row-major
// Backward: dm_t from the tower; dg_te = <dm_t, h_e>, dh_e += g_te dm_t; the gate's softmax
// dz_t = g_t ⊙ (dg_t − <g_t, dg_t>); x0 gets every expert's and gate's input gradient (summed
// in a fixed order: experts, then gates).
class MmoeModel final : public Model {
 public:
  MmoeModel(ModelSpec spec, std::unique_ptr<EmbeddingBag> bag, int64_t emb_width, std::vector<std::unique_ptr<Sequential>> experts,
            std::vector<std::unique_ptr<Dense>> gates, std::vector<std::unique_ptr<Sequential>> towers, GemmPrecision precision)
      : spec_(std::move(spec)),
        bag_(std::move(bag)),
        emb_width_(emb_width),
        num_dense_(spec_.num_dense),
        experts_(std::move(experts)),
        gates_(std::move(gates)),
        towers_(std::move(towers)),
        precision_(precision) {}

  std::string name() const override { return "mmoe"; }
  const ModelSpec& spec() const override { return spec_; }
  int num_outputs() const override { return static_cast<int>(towers_.size()); }
  int num_tasks() const override { return static_cast<int>(towers_.size()); }

  Status Forward(const ForwardInput& input, bool training, std::span<float> logits,
                 const ComputeContext& compute) override {
    const int64_t batch = input.batch_size, T = num_tasks(), E = static_cast<int64_t>(experts_.size());
    RECTRAIN_RETURN_IF_ERROR(CheckForwardInput(input, logits, T, num_dense_));
    ctx_ = LayerContext{compute, training, input.seed, precision_, input.row_offset};
    batch_ = -1;
    const int64_t width = emb_width_ + num_dense_;
    x0_.Resize(batch, width);
    if (emb_width_ > 0) {
      RECTRAIN_RETURN_IF_ERROR(bag_->Forward(batch, input.tables, input.fields, x0_.view(), {}, compute)) << "model mmoe";
    }
    CopyDenseInto(compute, input.dense, batch, num_dense_, x0_, emb_width_);
    const int64_t H = experts_[0]->out_features();
    expert_out_.resize(static_cast<size_t>(E));
    for (int64_t e = 0; e < E; ++e) {
      expert_out_[static_cast<size_t>(e)].Resize(batch, H);
      RECTRAIN_RETURN_IF_ERROR(experts_[static_cast<size_t>(e)]->Forward(x0_.view(), expert_out_[static_cast<size_t>(e)].view(), ctx_));
    }
    gate_.resize(static_cast<size_t>(T));
    mix_.resize(static_cast<size_t>(T));
    tower_out_.resize(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t) {
      tensor::Tensor& g = gate_[static_cast<size_t>(t)];
      g.Resize(batch, E);
      RECTRAIN_RETURN_IF_ERROR(gates_[static_cast<size_t>(t)]->Forward(x0_.view(), g.view(), ctx_));
      tensor::Tensor& m = mix_[static_cast<size_t>(t)];
      m.Resize(batch, H);
      internal::ForRows(compute, batch, E * H, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          float* z = g.row(r);  // logits -> softmax in place
          const float mx = *std::max_element(z, z + E);
          float sum = 0.0f;
          for (int64_t e = 0; e < E; ++e) sum += (z[e] = std::exp(z[e] - mx));
          for (int64_t e = 0; e < E; ++e) z[e] /= sum;
          float* out = m.row(r);
          std::fill(out, out + H, 0.0f);
          for (int64_t e = 0; e < E; ++e) {
            const float* h = expert_out_[static_cast<size_t>(e)].row(r);
            for (int64_t k = 0; k < H; ++k) out[k] += z[e] * h[k];
          }
        }
      });
      tensor::Tensor& o = tower_out_[static_cast<size_t>(t)];
      o.Resize(batch, 1);
      RECTRAIN_RETURN_IF_ERROR(towers_[static_cast<size_t>(t)]->Forward(m.view(), o.view(), ctx_));
      for (int64_t r = 0; r < batch; ++r) logits[static_cast<size_t>(r * T + t)] = o.data()[r];
    }
    batch_ = batch;
    return OkStatus();
  }

  Status Backward(std::span<const float> dlogits, std::span<const std::span<float>> table_grads,
                  const ComputeContext& compute) override {
    if (batch_ < 0) return FailedPreconditionError("model mmoe: Backward before Forward");
    const int64_t batch = batch_, T = num_tasks(), E = static_cast<int64_t>(experts_.size());
    RECTRAIN_RETURN_IF_ERROR(CheckDlogits(dlogits, batch * T));
    ctx_.compute = compute;
    const int64_t H = experts_[0]->out_features(), width = x0_.cols();
    dexpert_.resize(static_cast<size_t>(E));
    for (auto& d : dexpert_) d.ResizeZeroed(batch, H);
    dx0_.ResizeZeroed(batch, width);
    scratch_dx_.Resize(batch, width);
    auto add_dx = [&]() {
      internal::ForRows(compute, batch, width, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          float* out = dx0_.row(r);
          const float* g = scratch_dx_.row(r);
          for (int64_t c = 0; c < width; ++c) out[c] += g[c];
        }
      });
    };
    for (int64_t t = 0; t < T; ++t) {
      scratch_.Resize(batch, 1);
      for (int64_t r = 0; r < batch; ++r) scratch_.data()[r] = dlogits[static_cast<size_t>(r * T + t)];
      dmix_.Resize(batch, H);
      RECTRAIN_RETURN_IF_ERROR(towers_[static_cast<size_t>(t)]->Backward(mix_[static_cast<size_t>(t)].view(), tower_out_[static_cast<size_t>(t)].view(),
                                                                         scratch_.view(), dmix_.view(), ctx_));
      const tensor::Tensor& g = gate_[static_cast<size_t>(t)];
      dgate_.Resize(batch, E);
      internal::ForRows(compute, batch, E * H * 2, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const float* dm = dmix_.row(r);
          const float* gr = g.row(r);
          float* dz = dgate_.row(r);
          float dot = 0.0f;
          for (int64_t e = 0; e < E; ++e) {
            const float* h = expert_out_[static_cast<size_t>(e)].row(r);
            float* dh = dexpert_[static_cast<size_t>(e)].row(r);
            float s = 0.0f;
            for (int64_t k = 0; k < H; ++k) {
              s += dm[k] * h[k];
              dh[k] += gr[e] * dm[k];
            }
            dz[e] = s;
            dot += gr[e] * s;
          }
          for (int64_t e = 0; e < E; ++e) dz[e] = gr[e] * (dz[e] - dot);
        }
      });
      // The gate's Dense saw softmax outputs replaced in place; its Backward reads only x and dy.
      RECTRAIN_RETURN_IF_ERROR(gates_[static_cast<size_t>(t)]->Backward(x0_.view(), g.view(), dgate_.view(), scratch_dx_.view(), ctx_));
      add_dx();
    }
    for (int64_t e = 0; e < E; ++e) {
      RECTRAIN_RETURN_IF_ERROR(experts_[static_cast<size_t>(e)]->Backward(x0_.view(), expert_out_[static_cast<size_t>(e)].view(),
                                                                          dexpert_[static_cast<size_t>(e)].view(), scratch_dx_.view(), ctx_));
      add_dx();
    }
    if (emb_width_ > 0) {
      RECTRAIN_RETURN_IF_ERROR(bag_->Backward(dx0_.view(), {}, table_grads, compute)) << "model mmoe";
    }
    return OkStatus();
  }

  std::vector<optim::ParamRef> Params() override {
    std::vector<optim::ParamRef> params;
    for (auto& e : experts_) for (auto& p : e->Params()) params.push_back(std::move(p));
    for (auto& g : gates_) for (auto& p : g->Params()) params.push_back(std::move(p));
    for (auto& t : towers_) for (auto& p : t->Params()) params.push_back(std::move(p));
    return params;
  }

 private:
  ModelSpec spec_;
  std::unique_ptr<EmbeddingBag> bag_;
  int64_t emb_width_;
  int64_t num_dense_;
  std::vector<std::unique_ptr<Sequential>> experts_;
  std::vector<std::unique_ptr<Dense>> gates_;  // x0 -> [B × E] logits (softmax applied after)
  std::vector<std::unique_ptr<Sequential>> towers_;
  GemmPrecision precision_;
  LayerContext ctx_;
  int64_t batch_ = -1;
  tensor::Tensor x0_, dx0_, scratch_dx_, scratch_, dmix_, dgate_;
  std::vector<tensor::Tensor> expert_out_, dexpert_, gate_, mix_, tower_out_;
};

// mlp: logits = MLP([pooled embeddings | dense]) with num_outputs logits per row — a plain
// DNN for CTR (1 output) or a softmax classifier (num_classes outputs), e.g. the image MLP of
// examples/fashion_mnist_mlp.yaml (dense pixels only, no embedding tables).
class MlpModel final : public Model {
 public:
  MlpModel(ModelSpec spec, std::unique_ptr<EmbeddingBag> bag, int64_t emb_width, std::unique_ptr<Sequential> deep,
           int outputs, GemmPrecision precision)
      : spec_(std::move(spec)),
        bag_(std::move(bag)),
        emb_width_(emb_width),
        num_dense_(spec_.num_dense),
        deep_(std::move(deep)),
        outputs_(outputs),
        precision_(precision) {}

  std::string name() const override { return "mlp"; }
  const ModelSpec& spec() const override { return spec_; }
  int num_outputs() const override { return outputs_; }

  Status Forward(const ForwardInput& input, bool training, std::span<float> logits,
                 const ComputeContext& compute) override {
    RECTRAIN_RETURN_IF_ERROR(CheckForwardInput(input, logits, outputs_, num_dense_));
    const int64_t batch = input.batch_size;
    ctx_ = LayerContext{compute, training, input.seed, precision_, input.row_offset};
    batch_ = -1;
    const int64_t width = emb_width_ + num_dense_;
    x0_.Resize(batch, width);
    if (emb_width_ > 0) {
      RECTRAIN_RETURN_IF_ERROR(bag_->Forward(batch, input.tables, input.fields, x0_.view(), {}, compute))
          << "model mlp";
    }
    CopyDenseInto(compute, input.dense, batch, num_dense_, x0_, emb_width_);
    out_.Resize(batch, outputs_);
    RECTRAIN_RETURN_IF_ERROR(deep_->Forward(x0_.view(), out_.view(), ctx_));
    std::memcpy(logits.data(), out_.data(), sizeof(float) * static_cast<size_t>(batch * outputs_));
    batch_ = batch;
    return OkStatus();
  }

  Status Backward(std::span<const float> dlogits, std::span<const std::span<float>> table_grads,
                  const ComputeContext& compute) override {
    if (batch_ < 0) return FailedPreconditionError("model mlp: Backward before Forward");
    RECTRAIN_RETURN_IF_ERROR(CheckDlogits(dlogits, batch_ * outputs_));
    ctx_.compute = compute;
    scratch_.Resize(batch_, outputs_);
    std::memcpy(scratch_.data(), dlogits.data(), sizeof(float) * dlogits.size());
    dx0_.Resize(batch_, emb_width_ > 0 ? emb_width_ + num_dense_ : 0);
    RECTRAIN_RETURN_IF_ERROR(deep_->Backward(x0_.view(), out_.view(), scratch_.view(),
                                             emb_width_ > 0 ? dx0_.view() : MatrixView{}, ctx_));
    if (emb_width_ > 0) {
      RECTRAIN_RETURN_IF_ERROR(bag_->Backward(dx0_.view(), {}, table_grads, compute)) << "model mlp";
    }
    return OkStatus();
  }

  std::vector<optim::ParamRef> Params() override { return deep_->Params(); }

 private:
  ModelSpec spec_;
  std::unique_ptr<EmbeddingBag> bag_;
  int64_t emb_width_;
  int64_t num_dense_;
  std::unique_ptr<Sequential> deep_;
  int outputs_;
  GemmPrecision precision_;
  LayerContext ctx_;
  int64_t batch_ = -1;
  tensor::Tensor x0_, dx0_, out_, scratch_;
};

// ---- Building a model from its config: validate everything, plan the tables, build by type ----

// A config's errors, collected so that one call reports all of them.
class ModelErrors {
 public:
  void Add(std::string message) { messages_.push_back(std::move(message)); }
  void Add(const Status& s) {
    if (!s.ok()) messages_.push_back(s.message());
  }
  // OK, the one error as it is, or "invalid model (N errors):" with one indented line each.
  Status ToStatus() const {
    if (messages_.empty()) return OkStatus();
    if (messages_.size() == 1) return InvalidArgumentError(messages_[0]);
    std::string s = "invalid model (" + std::to_string(messages_.size()) + " errors):";
    for (const std::string& m : messages_) s += "\n  " + m;
    return InvalidArgumentError(s);
  }

 private:
  std::vector<std::string> messages_;
};

// What every check and builder reads: the config, its parsed type and the schema.
struct ModelInput {
  const ModelConfig& config;
  ModelType type;
  const std::vector<std::string>& sparse_names;
  int num_dense;

  int num_fields() const { return static_cast<int>(sparse_names.size()); }
  // The position of categorical field `n`, or -1.
  int FieldIndex(const std::string& n) const {
    auto it = std::find(sparse_names.begin(), sparse_names.end(), n);
    return it == sparse_names.end() ? -1 : static_cast<int>(it - sparse_names.begin());
  }
  std::string FieldList() const {
    std::string fields;
    for (const std::string& n : sparse_names) fields += (fields.empty() ? "" : ", ") + n;
    return fields;
  }
};

// Every entry of a list of layer sizes (model.KEY) must be >= 1.
Status CheckLayerSizes(const char* key, const std::vector<int>& sizes) {
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 1) {
      return InvalidArgumentError(std::string("model.") + key + "[" + std::to_string(i) + "] must be >= 1, got " + std::to_string(sizes[i]));
    }
  }
  return OkStatus();
}

// field_dims and field_pooling: keys that are fields of the schema, values the model can use.
void CheckFieldKeys(const ModelInput& in, const char* type_name, bool equal_dims_required, ModelErrors& errors) {
  const ModelConfig& c = in.config;
  if (!c.field_dims.empty() && in.type == ModelType::kLr) {
    errors.Add("model.field_dims is not used by model type \"lr\" (it has no embeddings); remove it");
  } else if (!c.field_dims.empty() && equal_dims_required) {
    errors.Add("model.field_dims is not supported by model type \"" + std::string(type_name) +
               "\": its interaction needs every field to have the same dim; set "
               "model.embedding_dim instead, or use wide_deep or dcn_v2");
  } else {
    for (const auto& [field, dim] : c.field_dims) {
      if (in.FieldIndex(field) < 0) {
        errors.Add("model.field_dims: \"" + field + "\" is not a categorical field of the schema");
      } else if (dim < 1) {
        errors.Add("model.field_dims." + field + " must be >= 1, got " + std::to_string(dim));
      }
    }
  }
  for (const auto& [field, pooling] : c.field_pooling) {
    if (in.FieldIndex(field) < 0) {
      errors.Add("model.field_pooling: \"" + field + "\" is not a categorical field of the schema");
    }
  }
}

// The checks every model type shares.
void CheckCommon(const ModelInput& in, const char* type_name, bool equal_dims_required, ModelErrors& errors) {
  const ModelConfig& c = in.config;
  if (c.precision == GemmPrecision::kBf16 && !kernels::Bf16GemmAvailable()) {
    errors.Add("model.precision: bf16 needs a CPU with AVX512_BF16 (oneDNN emulates it elsewhere, "
               "slower than fp32); this CPU lacks it, so use model.precision: fp32");
  }
  if (in.sparse_names.empty() && in.num_dense == 0) {
    errors.Add("model " + std::string(type_name) + ": the schema has no categorical and no dense features");
  }
  std::set<std::string> names;
  for (const std::string& n : in.sparse_names) {
    if (!names.insert(n).second) errors.Add("categorical field \"" + n + "\" appears twice in the schema");
  }
  if (c.embedding_dim < 1) {
    errors.Add("model.embedding_dim must be >= 1, got " + std::to_string(c.embedding_dim));
  }
  CheckFieldKeys(in, type_name, equal_dims_required, errors);
  errors.Add(CheckLayerSizes("hidden", c.hidden));
  if (!(c.dropout >= 0.0f && c.dropout < 1.0f)) {
    errors.Add("model.dropout must be in [0, 1), got " + std::to_string(c.dropout));
  }
  if (c.num_classes < 1 || c.num_classes > 100000) {
    errors.Add("model.num_classes must be in [1, 100000], got " + std::to_string(c.num_classes));
  }
  if (in.type != ModelType::kMmoe && c.num_tasks != 1) {
    errors.Add("model.task_labels needs model.type mmoe (a multi-task model); \"" + std::string(type_name) + "\" predicts one label");
  }
  if (c.num_classes > 1 && in.type != ModelType::kMlp) {
    errors.Add("model.num_classes " + std::to_string(c.num_classes) + " needs model.type mlp (a softmax "
               "classifier); \"" + type_name + "\" has one logit (CTR)");
  }
  errors.Add(CheckLayerSizes("bottom", c.bottom));
}

void CheckMmoe(const ModelInput& in, ModelErrors& errors) {
  const ModelConfig& c = in.config;
  if (c.num_tasks < 2 || c.num_tasks > 64) {
    errors.Add("model mmoe needs 2 to 64 tasks: the label plus model.task_labels (got " + std::to_string(c.num_tasks) + " task(s))");
  }
  if (c.num_experts < 1 || c.num_experts > 1024) {
    errors.Add("model.num_experts must be in [1, 1024], got " + std::to_string(c.num_experts));
  }
  if (c.expert_hidden.empty()) errors.Add("model.expert_hidden must name at least one layer size (an expert's output is its last)");
  errors.Add(CheckLayerSizes("expert_hidden", c.expert_hidden));
  errors.Add(CheckLayerSizes("tower_hidden", c.tower_hidden));
}

void CheckXDeepFm(const ModelInput& in, ModelErrors& errors) {
  if (in.config.cin_layers.empty()) errors.Add("model.cin_layers must name at least one layer size for xdeepfm");
  errors.Add(CheckLayerSizes("cin_layers", in.config.cin_layers));
  if (in.sparse_names.empty()) errors.Add("model xdeepfm needs categorical fields (its CIN crosses field embeddings)");
}

void CheckAutoInt(const ModelInput& in, ModelErrors& errors) {
  const ModelConfig& c = in.config;
  if (c.attention_layers < 1 || c.attention_heads < 1 || c.attention_head_dim < 1) {
    errors.Add("model.attention_layers, model.attention_heads and model.attention_head_dim must be >= 1 for autoint, got " +
               std::to_string(c.attention_layers) + ", " + std::to_string(c.attention_heads) + ", " +
               std::to_string(c.attention_head_dim));
  }
  if (in.sparse_names.empty()) errors.Add("model autoint needs categorical fields (its attention runs over field embeddings)");
}

void CheckFwFm(const ModelInput& in, ModelErrors& errors) {
  if (in.num_fields() < 2) errors.Add("model fwfm needs at least 2 categorical fields (it weights the dot product of every field pair)");
}

void CheckDin(const ModelInput& in, ModelErrors& errors) {
  const ModelConfig& c = in.config;
  errors.Add(CheckLayerSizes("attention_hidden", c.attention_hidden));
  if (c.target_field.empty() || c.history_field.empty()) {
    errors.Add("model din needs model.target_field (the item a row is about) and model.history_field (the user's "
               "behaviour sequence of such items, e.g. split('|', 20) | hash_as(ITEM)); categorical fields: " + in.FieldList());
    return;
  }
  const int target = in.FieldIndex(c.target_field), history = in.FieldIndex(c.history_field);
  if (target < 0) errors.Add("model.target_field: \"" + c.target_field + "\" is not a categorical field (" + in.FieldList() + ")");
  if (history < 0) errors.Add("model.history_field: \"" + c.history_field + "\" is not a categorical field (" + in.FieldList() + ")");
  if (target >= 0 && target == history) {
    errors.Add("model.history_field must differ from model.target_field (both are \"" + c.target_field + "\")");
  }
  if (c.field_pooling.count(c.history_field)) {
    errors.Add("model.field_pooling." + c.history_field + ": din pools its history by attention; remove the pooling");
  }
}

void CheckDlrm(const ModelInput& in, ModelErrors& errors) {
  if (in.num_fields() + (in.num_dense > 0 ? 1 : 0) < 2) {
    errors.Add("model dlrm needs at least two vectors to interact: two categorical fields, or one and dense features");
  }
}

void CheckDcnV2(const ModelInput& in, ModelErrors& errors) {
  if (in.config.cross_layers < 1) {
    errors.Add("model.cross_layers must be >= 1 for dcn_v2, got " + std::to_string(in.config.cross_layers));
  }
}

// The embedding side every model type shares: the tables (one per distinct dim), the fields'
// places in x0, and the bag that pools them.
struct EmbeddingPlan {
  ModelSpec spec;
  std::unique_ptr<EmbeddingBag> bag;
  int64_t emb_width = 0;    // pooled embedding columns of x0
  int history_field = -1;   // din: the field pooled by attention, not by the bag
  int64_t target_col = -1;  // din: the target field's first column in x0
};

// `lead`: the first-order weight rides in column 0 of the same row (1) or not (0). lr has one
// table of dim 1 (its fields' embedding dims are 0).
EmbeddingPlan PlanEmbeddings(const ModelInput& in, int lead, const embedding::EmbeddingTableConfig& table_template) {
  const ModelConfig& c = in.config;
  std::vector<int> emb_dims(in.sparse_names.size());
  for (size_t f = 0; f < in.sparse_names.size(); ++f) {
    auto it = c.field_dims.find(in.sparse_names[f]);
    emb_dims[f] = in.type == ModelType::kLr ? 0 : (it != c.field_dims.end() ? it->second : c.embedding_dim);
  }
  std::vector<int> distinct(emb_dims.begin(), emb_dims.end());
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());

  EmbeddingPlan plan;
  plan.spec.num_dense = in.num_dense;
  std::vector<EmbeddingBagTable> bag_tables;
  for (int d : distinct) {
    embedding::EmbeddingTableConfig table = table_template;
    table.dim = d + lead;
    if (distinct.size() > 1) table.name = table_template.name + "_d" + std::to_string(d);
    bag_tables.push_back({table.name, table.dim, lead});
    plan.spec.tables.push_back(std::move(table));
  }
  const int target_field = in.type == ModelType::kDin ? in.FieldIndex(c.target_field) : -1;
  plan.history_field = in.type == ModelType::kDin ? in.FieldIndex(c.history_field) : -1;
  std::vector<EmbeddingBagField> bag_fields;
  // dlrm: the bottom MLP's vector comes first in the interaction input, the fields after it.
  const int64_t first_col = in.type == ModelType::kDlrm && in.num_dense > 0 ? c.embedding_dim : 0;
  int64_t col = first_col;
  for (size_t f = 0; f < in.sparse_names.size(); ++f) {
    const int t = static_cast<int>(std::lower_bound(distinct.begin(), distinct.end(), emb_dims[f]) - distinct.begin());
    auto pit = c.field_pooling.find(in.sparse_names[f]);
    const Pooling pooling = pit == c.field_pooling.end() ? Pooling::kSum : pit->second;
    plan.spec.fields.push_back({in.sparse_names[f], t, pooling});
    if (static_cast<int>(f) == plan.history_field) continue;
    if (static_cast<int>(f) == target_field) plan.target_col = col;
    bag_fields.push_back({in.sparse_names[f], t, pooling == Pooling::kMean, col});
    col += emb_dims[f];
  }
  plan.emb_width = col - first_col;
  plan.bag = std::make_unique<EmbeddingBag>(std::move(bag_tables), std::move(bag_fields));
  return plan;
}

// Appends Dense+ReLU layers "<prefix>.<k>" of the given sizes (He init) from width `in`;
// returns the last width. The plain stacks of dlrm's bottom, din's activation unit and mmoe's
// experts and towers (AddMlp adds LayerNorm/dropout and the logit layer besides).
int64_t AddReluLayers(Sequential& s, const std::string& prefix, int64_t in, const std::vector<int>& sizes, uint64_t seed) {
  for (size_t k = 0; k < sizes.size(); ++k) {
    s.Add(std::make_unique<Dense>(prefix + "." + std::to_string(k), in, sizes[k], Activation::kRelu, WeightInit::kHe, seed));
    in = sizes[k];
  }
  return in;
}

// Hidden blocks of the deep part: Dense [+ LayerNorm + ReLU | fused ReLU] [+ Dropout], then
// the logit layer "mlp.out".
void AddMlp(const ModelConfig& config, int64_t in, Sequential& deep, int64_t out = 1) {
  for (size_t i = 0; i < config.hidden.size(); ++i) {
    const std::string prefix = "mlp." + std::to_string(i);
    const int64_t h = config.hidden[i];
    if (config.layer_norm) {
      deep.Add(std::make_unique<Dense>(prefix, in, h, Activation::kNone, WeightInit::kHe,
                                       config.seed));
      deep.Add(std::make_unique<LayerNorm>(prefix + ".ln", h));
      deep.Add(std::make_unique<Relu>(prefix + ".relu", h));
    } else {
      deep.Add(std::make_unique<Dense>(prefix, in, h, Activation::kRelu, WeightInit::kHe,
                                       config.seed));
    }
    if (config.dropout > 0.0f) {
      deep.Add(std::make_unique<Dropout>(prefix + ".dropout", h, config.dropout));
    }
    in = h;
  }
  deep.Add(std::make_unique<Dense>("mlp.out", in, out, Activation::kNone, WeightInit::kXavier,
                                   config.seed));
}

std::unique_ptr<Model> BuildDin(const ModelInput& in, EmbeddingPlan plan) {
  const ModelConfig& c = in.config;
  const int64_t dim = c.embedding_dim;
  auto unit = std::make_unique<Sequential>("attention_unit");
  const int64_t width = AddReluLayers(*unit, "attention_unit", 4 * dim, c.attention_hidden, c.seed);
  unit->Add(std::make_unique<Dense>("attention_unit.out", width, 1, Activation::kNone, WeightInit::kXavier, c.seed));
  auto top = std::make_unique<Sequential>("deep");
  AddMlp(c, plan.emb_width + dim + in.num_dense, *top);
  return std::make_unique<DinModel>(std::move(plan.spec), std::move(plan.bag), plan.history_field, plan.target_col, dim,
                                    std::move(unit), std::move(top), c.precision);
}

std::unique_ptr<Model> BuildDlrm(const ModelInput& in, EmbeddingPlan plan) {
  const ModelConfig& c = in.config;
  const int dim = c.embedding_dim;
  std::unique_ptr<Sequential> bottom;
  if (in.num_dense > 0) {
    bottom = std::make_unique<Sequential>("bottom");
    const int64_t width = AddReluLayers(*bottom, "bottom", in.num_dense, c.bottom, c.seed);
    bottom->Add(std::make_unique<Dense>("bottom.out", width, dim, Activation::kRelu, WeightInit::kHe, c.seed));
  }
  const int64_t vectors = in.num_fields() + (in.num_dense > 0 ? 1 : 0);
  auto interaction = std::make_unique<DotInteraction>("interaction", vectors, dim, /*keep_first=*/in.num_dense > 0);
  auto top = std::make_unique<Sequential>("top");
  AddMlp(c, interaction->out_features(), *top);
  return std::make_unique<DlrmModel>(std::move(plan.spec), std::move(plan.bag), dim, std::move(bottom),
                                     std::move(interaction), std::move(top), c.precision);
}

std::unique_ptr<Model> BuildMmoe(const ModelInput& in, EmbeddingPlan plan) {
  const ModelConfig& c = in.config;
  const int64_t width = plan.emb_width + in.num_dense;
  std::vector<std::unique_ptr<Sequential>> experts;
  for (int e = 0; e < c.num_experts; ++e) {
    const std::string prefix = "expert." + std::to_string(e);
    auto ex = std::make_unique<Sequential>(prefix);
    AddReluLayers(*ex, prefix, width, c.expert_hidden, c.seed);
    experts.push_back(std::move(ex));
  }
  std::vector<std::unique_ptr<Dense>> gates;
  std::vector<std::unique_ptr<Sequential>> towers;
  for (int t = 0; t < c.num_tasks; ++t) {
    const std::string g = "gate." + std::to_string(t), tw = "tower." + std::to_string(t);
    gates.push_back(std::make_unique<Dense>(g, width, c.num_experts, Activation::kNone, WeightInit::kXavier, c.seed));
    auto tower = std::make_unique<Sequential>(tw);
    const int64_t tower_width = AddReluLayers(*tower, tw, c.expert_hidden.back(), c.tower_hidden, c.seed);
    tower->Add(std::make_unique<Dense>(tw + ".out", tower_width, 1, Activation::kNone, WeightInit::kXavier, c.seed));
    towers.push_back(std::move(tower));
  }
  return std::make_unique<MmoeModel>(std::move(plan.spec), std::move(plan.bag), plan.emb_width, std::move(experts),
                                     std::move(gates), std::move(towers), c.precision);
}

std::unique_ptr<Model> BuildMlp(const ModelInput& in, EmbeddingPlan plan) {
  const ModelConfig& c = in.config;
  auto deep = std::make_unique<Sequential>("deep");
  AddMlp(c, plan.emb_width + in.num_dense, *deep, c.num_classes);
  return std::make_unique<MlpModel>(std::move(plan.spec), std::move(plan.bag), plan.emb_width, std::move(deep),
                                    c.num_classes, c.precision);
}

// The network over the field embeddings of xdeepfm (CIN), autoint (self-attention) and fwfm
// (weighted pair dot products); null for the other composed types.
std::unique_ptr<Sequential> MakeFieldNet(const ModelInput& in) {
  const ModelConfig& c = in.config;
  const int64_t fields = in.num_fields();
  std::unique_ptr<Sequential> net;
  if (in.type == ModelType::kXDeepFm) {
    net = std::make_unique<Sequential>("cin");
    auto cin = std::make_unique<CompressedInteraction>("cin", fields, c.embedding_dim, c.cin_layers, c.seed);
    const int64_t pooled = cin->out_features();
    net->Add(std::move(cin));
    net->Add(std::make_unique<Dense>("cin.out", pooled, 1, Activation::kNone, WeightInit::kXavier, c.seed));
  } else if (in.type == ModelType::kAutoInt) {
    net = std::make_unique<Sequential>("attention");
    int64_t dim = c.embedding_dim;
    for (int l = 0; l < c.attention_layers; ++l) {
      net->Add(std::make_unique<FieldSelfAttention>("attention." + std::to_string(l), fields, dim, c.attention_heads,
                                                    c.attention_head_dim, c.seed));
      dim = static_cast<int64_t>(c.attention_heads) * c.attention_head_dim;
    }
    net->Add(std::make_unique<Dense>("attention.out", fields * dim, 1, Activation::kNone, WeightInit::kXavier, c.seed));
  } else if (in.type == ModelType::kFwFm) {
    net = std::make_unique<Sequential>("fwfm");
    auto dots = std::make_unique<DotInteraction>("fwfm.dots", fields, c.embedding_dim, /*keep_first=*/false);
    const int64_t pairs = dots->out_features();
    net->Add(std::move(dots));
    net->Add(std::make_unique<Dense>("fwfm.pair_weights", pairs, 1, Activation::kNone, WeightInit::kXavier, c.seed));
  }
  return net;
}

// lr, fm, wide_deep, deepfm, dcn_v2, xdeepfm, autoint and fwfm: one ComposedModel (top of file).
std::unique_ptr<Model> BuildComposed(const ModelInput& in, const char* type_name, EmbeddingPlan plan) {
  const ModelConfig& c = in.config;
  const ModelType type = in.type;
  Parts parts;
  parts.first_order = type != ModelType::kDcnV2 && type != ModelType::kAutoInt;
  if (type == ModelType::kFm || type == ModelType::kDeepFm) {
    parts.fm = std::make_unique<FmInteraction>("fm", in.num_fields(), c.embedding_dim);
  }
  parts.field_net = MakeFieldNet(in);
  // autoint and fwfm without hidden layers are the plain models; with them a DNN runs beside
  // (AutoInt+, and FwFM's deep variant).
  if (type == ModelType::kWideDeep || type == ModelType::kDeepFm || type == ModelType::kDcnV2 || type == ModelType::kXDeepFm ||
      ((type == ModelType::kAutoInt || type == ModelType::kFwFm) && !c.hidden.empty())) {
    const int64_t width = plan.emb_width + in.num_dense;
    parts.deep = std::make_unique<Sequential>("deep");
    if (type == ModelType::kDcnV2) parts.deep->Add(std::make_unique<CrossNetwork>("cross", width, c.cross_layers, c.seed));
    AddMlp(c, width, *parts.deep);
  }
  return std::make_unique<ComposedModel>(type_name, std::move(plan.spec), std::move(plan.bag), plan.emb_width,
                                         std::move(parts), c.seed, c.precision);
}

// The registry: one row per model type, with what its checks and its embedding plan need.
struct ModelTypeEntry {
  ModelType type;
  const char* name;
  int lead;                 // 1: the first-order weight rides in column 0 of each table row
  bool equal_dims;          // its interaction (FM, CIN, attention, dots) needs one dim for all fields
  void (*check)(const ModelInput&, ModelErrors&);  // the type's own checks, or null
};
constexpr ModelTypeEntry kModelTypes[] = {
    {ModelType::kLr, "lr", 1, false, nullptr},
    {ModelType::kFm, "fm", 1, true, nullptr},
    {ModelType::kWideDeep, "wide_deep", 1, false, nullptr},
    {ModelType::kDeepFm, "deepfm", 1, true, nullptr},
    {ModelType::kDcnV2, "dcn_v2", 0, false, CheckDcnV2},
    {ModelType::kXDeepFm, "xdeepfm", 1, true, CheckXDeepFm},
    {ModelType::kAutoInt, "autoint", 0, true, CheckAutoInt},
    {ModelType::kFwFm, "fwfm", 1, true, CheckFwFm},
    {ModelType::kDlrm, "dlrm", 0, true, CheckDlrm},
    {ModelType::kDin, "din", 0, true, CheckDin},
    {ModelType::kMmoe, "mmoe", 0, false, CheckMmoe},
    {ModelType::kMlp, "mlp", 0, false, nullptr}};

std::string JoinTypes() {
  std::string s;
  for (const ModelTypeEntry& t : kModelTypes) s += (s.empty() ? "" : ", ") + std::string(t.name);
  return s;
}

std::unique_ptr<Model> BuildModel(const ModelInput& in, const ModelTypeEntry& entry, EmbeddingPlan plan) {
  switch (in.type) {
    case ModelType::kDin: return BuildDin(in, std::move(plan));
    case ModelType::kDlrm: return BuildDlrm(in, std::move(plan));
    case ModelType::kMmoe: return BuildMmoe(in, std::move(plan));
    case ModelType::kMlp: return BuildMlp(in, std::move(plan));
    default: return BuildComposed(in, entry.name, std::move(plan));
  }
}

}  // namespace

std::vector<std::string> ModelTypes() {
  std::vector<std::string> names;
  for (const ModelTypeEntry& t : kModelTypes) names.emplace_back(t.name);
  return names;
}

Result<std::unique_ptr<Model>> MakeModel(const ModelConfig& config,
                                         const std::vector<std::string>& sparse_names,
                                         int num_dense,
                                         const embedding::EmbeddingTableConfig& table_template) {
  const auto entry = std::find_if(std::begin(kModelTypes), std::end(kModelTypes),
                                  [&](const ModelTypeEntry& t) { return config.type == t.name; });
  if (entry == std::end(kModelTypes)) {
    return InvalidArgumentError("model.type: unknown model type \"" + config.type + "\"; valid types: " + JoinTypes());
  }
  if (num_dense < 0) {
    return InvalidArgumentError("num_dense must be >= 0, got " + std::to_string(num_dense));
  }
  const ModelInput in{config, entry->type, sparse_names, num_dense};
  ModelErrors errors;
  CheckCommon(in, entry->name, entry->equal_dims, errors);
  if (entry->check != nullptr) entry->check(in, errors);
  RECTRAIN_RETURN_IF_ERROR(errors.ToStatus());
  return BuildModel(in, *entry, PlanEmbeddings(in, entry->lead, table_template));
}

}  // namespace rectrain::nn

// End-to-end tests of the model zoo: gradient checks of every model (dense params AND the
// sparse table-row gradients), a DeepFM forward against a naive loop, table layout, errors.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "rectrain/nn/loss.h"
#include "rectrain/nn/model_config.h"
#include "rectrain/testing/layer_check.h"

namespace rectrain::nn {
namespace {

const std::vector<std::string> kFields = {"C1", "C2", "C3"};

embedding::EmbeddingTableConfig Template() {
  embedding::EmbeddingTableConfig t;
  t.name = "emb";
  return t;
}

std::unique_ptr<Model> Make(const ModelConfig& config, int num_dense = 2) {
  auto m = MakeModel(config, kFields, num_dense, Template());
  RECTRAIN_CHECK(m.ok()) << m.status();
  return std::move(m).value();
}

ModelConfig SmallConfig(const std::string& type) {
  ModelConfig c;
  c.type = type;
  c.embedding_dim = 3;
  c.hidden = {5, 4};
  c.cross_layers = 2;
  c.cin_layers = {3, 2};
  c.attention_layers = 2;
  c.attention_heads = 2;
  c.attention_head_dim = 2;
  c.bottom = {4};
  c.target_field = "C1";   // din: C2 is the behaviour sequence (multi-valued in the
  c.history_field = "C2";  // multi-valued cases, with empty bags too)
  c.attention_hidden = {5};
  if (type == "mmoe") {
    c.num_tasks = 2;
    c.num_experts = 3;
    c.expert_hidden = {8};
    c.tower_hidden = {4};
  }
  c.seed = 11;
  return c;
}

struct ModelCase {
  std::string name;
  ModelConfig config;
  bool multi_valued = false;
  int num_dense = 2;
};

void PrintTo(const ModelCase& c, std::ostream* os) { *os << c.name; }

std::vector<ModelCase> Cases() {
  std::vector<ModelCase> cases;
  for (const std::string& type : ModelTypes()) {
    cases.push_back({type, SmallConfig(type)});
    ModelCase multi{type + "_multivalued", SmallConfig(type), true};
    multi.config.field_pooling = {{type == "din" ? "C3" : "C2", Pooling::kMean}};
    cases.push_back(multi);
  }
  ModelCase nodense{"lr_nodense", SmallConfig("lr"), false, 0};
  cases.push_back(nodense);
  ModelCase autoint_plain{"autoint_no_dnn", SmallConfig("autoint")};  // AutoInt without the DNN
  autoint_plain.config.hidden = {};
  cases.push_back(autoint_plain);
  ModelCase fwfm_plain{"fwfm_no_dnn", SmallConfig("fwfm")};  // FwFM without the DNN
  fwfm_plain.config.hidden = {};
  cases.push_back(fwfm_plain);
  ModelCase dlrm_nodense{"dlrm_nodense", SmallConfig("dlrm"), false, 0};  // fields only: no bottom MLP
  cases.push_back(dlrm_nodense);
  ModelCase dlrm_deep{"dlrm_bottom2_dropout", SmallConfig("dlrm")};
  dlrm_deep.config.bottom = {7, 5};
  dlrm_deep.config.hidden = {8, 6};
  dlrm_deep.config.dropout = 0.2f;
  cases.push_back(dlrm_deep);
  ModelCase dfm{"deepfm_ln_dropout", SmallConfig("deepfm")};
  dfm.config.layer_norm = true;
  dfm.config.dropout = 0.25f;
  cases.push_back(dfm);
  // A softmax classifier: 4 logits per row, with and without embeddings, and dense only.
  ModelCase softmax{"mlp_softmax4", SmallConfig("mlp")};
  softmax.config.num_classes = 4;
  cases.push_back(softmax);
  ModelCase softmax_dropout{"mlp_softmax4_dropout", softmax.config};
  softmax_dropout.config.dropout = 0.2f;
  cases.push_back(softmax_dropout);
  for (std::string type : {"wide_deep", "dcn_v2"}) {
    ModelCase c{type + "_field_dims", SmallConfig(type)};
    c.config.field_dims = {{"C2", 2}, {"C3", 4}};
    cases.push_back(c);
  }
  return cases;
}

class ModelGradTest : public ::testing::TestWithParam<ModelCase> {};

TEST_P(ModelGradTest, DenseAndSparseGradientsMatchFiniteDifferences) {
  const ModelCase& mc = GetParam();
  for (int threads : {1, 2}) {
    auto model = Make(mc.config, mc.num_dense);
    testing::SyntheticOptions so;
    so.multi_valued = mc.multi_valued;
    testing::SyntheticBatch batch(model->spec(), 6, 3, so);
    const auto results = testing::CheckModelGradients(*model, batch, {}, threads);
    EXPECT_EQ(results.size(), model->Params().size() + model->spec().tables.size());
    for (const auto& r : results) {
      EXPECT_TRUE(r.ok()) << mc.name << " threads=" << threads << ": " << r.ToString();
    }
  }
}

TEST_P(ModelGradTest, GradientThroughTheLossMatchesFiniteDifferences) {
  const ModelCase& mc = GetParam();
  auto model = Make(mc.config, mc.num_dense);
  // Biases start at 0: a row whose previous layer is all dead would sit exactly on the ReLU
  // kink of every bias. Move them off zero.
  for (auto& p : model->Params()) {
    if (p.name.ends_with("bias")) {
      for (size_t i = 0; i < p.value.size(); ++i) p.value[i] += 0.05f * static_cast<float>(i + 1);
    }
  }
  testing::SyntheticBatch batch(model->spec(), 5, 8);
  const int k = model->num_outputs();
  std::vector<float> labels = {1, 0, 0, 1, 0}, logits(5 * k), dlogits(5 * k);
  if (k > 1) labels = {1, 3, 0, 2, 1};
  const ComputeContext compute{1};
  const bool multi_task = model->num_tasks() > 1;
  const std::vector<float> weights(static_cast<size_t>(k), 0.75f);
  if (multi_task) {
    labels.resize(5 * k);
    for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<float>((i * 7 + i / 3) % 2);
  }
  auto ce = [&](std::span<float> d) {
    if (multi_task) return MultiTaskSigmoidCrossEntropy(logits, k, labels, weights, d, {}, {}, compute);
    return k > 1 ? SoftmaxCrossEntropy(logits, k, labels, d, {}, compute)
                 : SigmoidCrossEntropy(logits, labels, d, {}, compute);
  };
  auto loss = [&] {
    RECTRAIN_CHECK(model->Forward(batch.input(), true, logits, compute).ok());
    return ce({});
  };
  loss();
  ce(dlogits);
  std::vector<std::vector<float>> grads;
  std::vector<std::span<float>> spans;
  for (auto& rows : batch.rows()) grads.emplace_back(rows.size());
  for (auto& g : grads) spans.emplace_back(g);
  ASSERT_TRUE(model->Backward(dlogits, spans, compute).ok());
  testing::GradCheckOptions opts;
  opts.atol = 1e-4;  // mean loss over 5 rows: gradients are small
  for (auto& p : model->Params()) {
    std::vector<float> analytic(p.grad.begin(), p.grad.end());
    const auto r = testing::CheckGradient(p.name, p.value, analytic, loss, opts);
    EXPECT_TRUE(r.ok()) << mc.name << ": " << r.ToString();
  }
  const auto r = testing::CheckGradient("table0", batch.rows()[0], grads[0], loss, opts);
  EXPECT_TRUE(r.ok()) << mc.name << ": " << r.ToString();
}

INSTANTIATE_TEST_SUITE_P(Models, ModelGradTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<ModelCase>& p) { return p.param.name; });

std::map<std::string, std::span<float>> ParamsByName(Model& m) {
  std::map<std::string, std::span<float>> out;
  for (auto& p : m.Params()) out[p.name] = p.value;
  return out;
}

TEST(DeepFmTest, ForwardMatchesNaiveLoopOnTwoRows) {
  ModelConfig c = SmallConfig("deepfm");
  c.hidden = {4};
  auto model = Make(c);
  testing::SyntheticBatch batch(model->spec(), 2, 21);
  std::vector<float> logits(2);
  ASSERT_TRUE(model->Forward(batch.input(), false, logits, ComputeContext{1}).ok());
  auto p = ParamsByName(*model);
  const int D = 3, F = 3, nd = 2, H = 4, in = F * D + nd;
  const std::vector<float>& rows = batch.rows()[0];  // one table, dim D + 1
  for (int i = 0; i < 2; ++i) {
    std::vector<double> x0;
    double first = 0;
    std::vector<std::vector<double>> v(F, std::vector<double>(D));
    for (int f = 0; f < F; ++f) {
      const int u = batch.indices(f)[i];
      first += rows[u * (D + 1)];
      for (int d = 0; d < D; ++d) {
        v[f][d] = rows[u * (D + 1) + 1 + d];
        x0.push_back(v[f][d]);
      }
    }
    for (int k = 0; k < nd; ++k) {
      const double xd = batch.dense()[i * nd + k];
      x0.push_back(xd);
      first += xd * p["linear.weight"][k];
    }
    first += p["linear.bias"][0];
    double fm = 0;
    for (int f = 0; f < F; ++f) {
      for (int g = f + 1; g < F; ++g) {
        for (int d = 0; d < D; ++d) fm += v[f][d] * v[g][d];
      }
    }
    double deep = p["mlp.out.bias"][0];
    for (int h = 0; h < H; ++h) {
      double z = p["mlp.0.bias"][h];
      for (int k = 0; k < in; ++k) z += x0[k] * p["mlp.0.weight"][k * H + h];
      deep += std::max(0.0, z) * p["mlp.out.weight"][h];
    }
    EXPECT_NEAR(logits[i], first + fm + deep, 1e-5) << "row " << i;
  }
}

// The first-order linear term over the dense features starts at zero, like the first-order
// embedding column: a random start on raw log1p values (up to ~15) gave logits of several
// units that Adam at 1e-3 could not undo within an epoch (lr on easy data: AUC 0.56, not 0.78).
TEST(ModelZooTest, FirstOrderDenseTermStartsAtZero) {
  for (const std::string type : {"lr", "fm", "wide_deep", "deepfm"}) {
    auto model = Make(SmallConfig(type));
    auto p = ParamsByName(*model);
    ASSERT_EQ(p.count("linear.weight"), 1u) << type;
    for (float w : p["linear.weight"]) EXPECT_EQ(w, 0.0f) << type;
    for (float b : p["linear.bias"]) EXPECT_EQ(b, 0.0f) << type;
  }
  // An untrained lr with zero rows predicts exactly 0.5 whatever the dense values.
  auto lr = Make(SmallConfig("lr"));
  testing::SyntheticBatch batch(lr->spec(), 4, 5);
  for (auto& rows : batch.rows()) std::fill(rows.begin(), rows.end(), 0.0f);
  for (float& x : batch.dense()) x = 12.0f;
  std::vector<float> logits(4, 1.0f);
  ASSERT_TRUE(lr->Forward(batch.input(), false, logits, ComputeContext{1}).ok());
  for (float z : logits) EXPECT_EQ(z, 0.0f);
}

TEST(ModelZooTest, TableLayoutAndParamNames) {
  auto deepfm = Make(SmallConfig("deepfm"));
  ASSERT_EQ(deepfm->spec().tables.size(), 1u);
  EXPECT_EQ(deepfm->spec().tables[0].name, "emb");
  EXPECT_EQ(deepfm->spec().tables[0].dim, 4);  // first-order weight + 3
  EXPECT_EQ(deepfm->spec().fields.size(), 3u);
  EXPECT_EQ(deepfm->spec().fields[1].name, "C2");
  EXPECT_EQ(deepfm->spec().num_dense, 2);
  EXPECT_EQ(deepfm->name(), "deepfm");
  std::vector<std::string> names;
  for (auto& p : deepfm->Params()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"linear.weight", "linear.bias", "mlp.0.weight",
                                             "mlp.0.bias", "mlp.1.weight", "mlp.1.bias",
                                             "mlp.out.weight", "mlp.out.bias"}));

  auto lr = Make(SmallConfig("lr"));
  EXPECT_EQ(lr->spec().tables[0].dim, 1);

  ModelConfig wd = SmallConfig("wide_deep");
  wd.field_dims = {{"C1", 8}};
  auto wide = Make(wd);
  ASSERT_EQ(wide->spec().tables.size(), 2u);
  EXPECT_EQ(wide->spec().tables[0].name, "emb_d3");
  EXPECT_EQ(wide->spec().tables[0].dim, 4);
  EXPECT_EQ(wide->spec().tables[1].name, "emb_d8");
  EXPECT_EQ(wide->spec().tables[1].dim, 9);
  EXPECT_EQ(wide->spec().fields[0].table, 1);
  EXPECT_EQ(wide->spec().fields[2].table, 0);

  auto dcn = Make(SmallConfig("dcn_v2"));
  EXPECT_EQ(dcn->spec().tables[0].dim, 3);  // no first-order column
  EXPECT_EQ(dcn->Params()[0].name, "cross.0.weight");
}

TEST(ModelZooTest, EveryErrorOfAConfigIsReportedAtOnce) {
  ModelConfig c = SmallConfig("din");
  c.hidden = {8, 0};
  c.dropout = 1.5f;
  c.history_field = "C9";
  c.field_pooling = {{"C4", Pooling::kSum}};
  auto m = MakeModel(c, kFields, 2, Template());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(m.status().message(),
            "invalid model (4 errors):\n"
            "  model.field_pooling: \"C4\" is not a categorical field of the schema\n"
            "  model.hidden[1] must be >= 1, got 0\n"
            "  model.dropout must be in [0, 1), got 1.500000\n"
            "  model.history_field: \"C9\" is not a categorical field (C1, C2, C3)");
}

TEST(ModelZooTest, ErrorsNameTheKey) {
  const auto tmpl = Template();
  auto err = [&](const ModelConfig& c, int nd = 2) {
    auto m = MakeModel(c, kFields, nd, tmpl);
    EXPECT_FALSE(m.ok());
    return m.ok() ? std::string() : m.status().message();
  };
  EXPECT_EQ(ModelTypes(), (std::vector<std::string>{"lr", "fm", "wide_deep", "deepfm", "dcn_v2", "xdeepfm", "autoint", "fwfm", "dlrm", "din", "mmoe", "mlp"}));
  ModelConfig c = SmallConfig("deepfn");
  EXPECT_EQ(err(c), "model.type: unknown model type \"deepfn\"; valid types: lr, fm, wide_deep, "
                    "deepfm, dcn_v2, xdeepfm, autoint, fwfm, dlrm, din, mmoe, mlp");
  c = SmallConfig("deepfm");
  c.field_dims = {{"C1", 8}};
  EXPECT_EQ(err(c), "model.field_dims is not supported by model type \"deepfm\": its "
                    "interaction needs every field to have the same dim; set "
                    "model.embedding_dim instead, or use wide_deep or dcn_v2");
  for (const char* type : {"xdeepfm", "autoint", "fwfm", "dlrm", "din"}) {
    c = SmallConfig(type);
    c.field_dims = {{"C1", 8}};
    EXPECT_NE(err(c).find(std::string("model type \"") + type + "\""), std::string::npos) << type;
  }
  c = SmallConfig("xdeepfm");
  c.cin_layers = {4, 0};
  EXPECT_EQ(err(c), "model.cin_layers[1] must be >= 1, got 0");
  c.cin_layers = {};
  EXPECT_EQ(err(c), "model.cin_layers must name at least one layer size for xdeepfm");
  c = SmallConfig("autoint");
  c.attention_heads = 0;
  EXPECT_EQ(err(c), "model.attention_layers, model.attention_heads and model.attention_head_dim must be >= 1 for autoint, got 2, 0, 2");
  EXPECT_EQ(MakeModel(SmallConfig("autoint"), {}, 3, tmpl).status().message(),
            "model autoint needs categorical fields (its attention runs over field embeddings)");
  c = SmallConfig("din");
  c.history_field = "";
  EXPECT_NE(err(c).find("model din needs model.target_field"), std::string::npos) << err(c);
  c.history_field = "C9";
  EXPECT_EQ(err(c), "model.history_field: \"C9\" is not a categorical field (C1, C2, C3)");
  c.history_field = "C1";
  EXPECT_EQ(err(c), "model.history_field must differ from model.target_field (both are \"C1\")");
  c.history_field = "C2";
  c.field_pooling = {{"C2", Pooling::kMean}};
  EXPECT_EQ(err(c), "model.field_pooling.C2: din pools its history by attention; remove the pooling");
  c = SmallConfig("mmoe");
  c.num_tasks = 1;
  EXPECT_EQ(err(c), "model mmoe needs 2 to 64 tasks: the label plus model.task_labels (got 1 task(s))");
  c = SmallConfig("mmoe");
  c.expert_hidden = {};
  EXPECT_EQ(err(c), "model.expert_hidden must name at least one layer size (an expert's output is its last)");
  c = SmallConfig("mmoe");
  c.tower_hidden = {0};
  EXPECT_EQ(err(c), "model.tower_hidden[0] must be >= 1, got 0");
  c = SmallConfig("deepfm");
  c.num_tasks = 2;
  EXPECT_EQ(err(c), "model.task_labels needs model.type mmoe (a multi-task model); \"deepfm\" predicts one label");
  c = SmallConfig("dlrm");
  c.bottom = {0};
  EXPECT_EQ(err(c), "model.bottom[0] must be >= 1, got 0");
  EXPECT_EQ(MakeModel(SmallConfig("dlrm"), {"C1"}, 0, tmpl).status().message(),
            "model dlrm needs at least two vectors to interact: two categorical fields, or one and dense features");
  EXPECT_EQ(MakeModel(SmallConfig("fwfm"), {"C1"}, 3, tmpl).status().message(),
            "model fwfm needs at least 2 categorical fields (it weights the dot product of every field pair)");
  EXPECT_EQ(MakeModel(SmallConfig("xdeepfm"), {}, 3, tmpl).status().message(),
            "model xdeepfm needs categorical fields (its CIN crosses field embeddings)");
  c = SmallConfig("fm");
  c.field_dims = {{"C1", 8}};
  EXPECT_NE(err(c).find("model type \"fm\""), std::string::npos);
  c.type = "wide_deep";
  c.field_dims = {{"C9", 8}};
  EXPECT_EQ(err(c), "model.field_dims: \"C9\" is not a categorical field of the schema");
  c.field_dims = {{"C1", 0}};
  EXPECT_EQ(err(c), "model.field_dims.C1 must be >= 1, got 0");
  c = SmallConfig("deepfm");
  c.hidden = {400, 0};
  EXPECT_EQ(err(c), "model.hidden[1] must be >= 1, got 0");
  c = SmallConfig("deepfm");
  c.dropout = 1.0f;
  EXPECT_EQ(err(c), "model.dropout must be in [0, 1), got 1.000000");
  c = SmallConfig("deepfm");
  c.embedding_dim = 0;
  EXPECT_EQ(err(c), "model.embedding_dim must be >= 1, got 0");
  c = SmallConfig("deepfm");
  c.num_classes = 10;
  EXPECT_EQ(err(c), "model.num_classes 10 needs model.type mlp (a softmax classifier); \"deepfm\" has one logit (CTR)");
  c = SmallConfig("mlp");
  c.num_classes = 0;
  EXPECT_EQ(err(c), "model.num_classes must be in [1, 100000], got 0");
  c = SmallConfig("dcn_v2");
  c.cross_layers = 0;
  EXPECT_EQ(err(c), "model.cross_layers must be >= 1 for dcn_v2, got 0");
  c = SmallConfig("lr");
  c.field_dims = {{"C1", 2}};
  EXPECT_EQ(err(c), "model.field_dims is not used by model type \"lr\" (it has no embeddings); "
                    "remove it");
  auto dup = MakeModel(SmallConfig("lr"), {"C1", "C1"}, 0, tmpl);
  EXPECT_EQ(dup.status().message(), "categorical field \"C1\" appears twice in the schema");
}

TEST(ModelZooTest, ForwardErrorsAndBatchSizeChanges) {
  auto model = Make(SmallConfig("deepfm"));
  std::vector<float> g(4);
  std::vector<std::span<float>> grads = {g};
  EXPECT_EQ(model->Backward(std::vector<float>(3), grads, ComputeContext{1}).code(),
            StatusCode::kFailedPrecondition);
  testing::SyntheticBatch big(model->spec(), 9, 1), small(model->spec(), 4, 2);
  std::vector<float> logits(9);
  ASSERT_TRUE(model->Forward(big.input(), true, logits, ComputeContext{2}).ok());
  std::vector<float> small_logits(4), again(4);
  ASSERT_TRUE(model->Forward(small.input(), true, small_logits, ComputeContext{2}).ok());
  auto fresh = Make(SmallConfig("deepfm"));
  ASSERT_TRUE(fresh->Forward(small.input(), true, again, ComputeContext{2}).ok());
  EXPECT_EQ(small_logits, again);  // same seed, same params, buffer reuse is invisible

  ForwardInput bad = small.input();
  std::vector<float> short_dense(3);
  bad.dense = short_dense;
  EXPECT_EQ(model->Forward(bad, true, small_logits, ComputeContext{1}),
            InvalidArgumentError("dense features: got 3 floats, expected batch_size x num_dense "
                                 "= 4 x 2"));
  EXPECT_EQ(model->Forward(small.input(), true, logits, ComputeContext{1}),
            InvalidArgumentError("logits has 9 entries, need batch_size = 4"));
}

}  // namespace
}  // namespace rectrain::nn

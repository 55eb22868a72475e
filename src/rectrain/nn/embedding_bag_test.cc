#include "rectrain/nn/embedding_bag.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "rectrain/base/random.h"

namespace rectrain::nn {
namespace {

// Two tables: "a" dim 4 with a first-order lead column (3 embedding columns), "b" dim 2 without.
// Fields: f0 -> a single-valued sum, f1 -> a multi-valued mean, f2 -> b multi-valued sum.
struct Fixture {
  const int64_t batch = 5;
  std::vector<float> rows_a, rows_b;
  std::vector<int32_t> idx0 = {0, 2, 2, 1, 3};
  std::vector<int32_t> off1 = {0, 2, 2, 5, 6, 7};  // row 1 has an empty bag
  std::vector<int32_t> idx1 = {1, 1, 0, 2, 3, 3, 0};
  std::vector<int32_t> off2 = {0, 1, 3, 3, 4, 5};
  std::vector<int32_t> idx2 = {0, 1, 2, 2, 0};
  std::vector<PulledTable> tables;
  std::vector<FieldIndices> fields;
  EmbeddingBag bag{{{"a", 4, 1}, {"b", 2, 0}},
                   {{"f0", 0, false, 0}, {"f1", 0, true, 3}, {"f2", 1, false, 6}}};

  Fixture() {
    Rng rng(1);
    rows_a.resize(4 * 4);
    rows_b.resize(3 * 2);
    for (float& v : rows_a) v = static_cast<float>(rng.Normal());
    for (float& v : rows_b) v = static_cast<float>(rng.Normal());
    tables = {{rows_a, 4, 4}, {rows_b, 3, 2}};
    fields = {{{}, idx0}, {off1, idx1}, {off2, idx2}};
  }
};

TEST(EmbeddingBagTest, ForwardMatchesNaivePooling) {
  Fixture fx;
  EXPECT_EQ(fx.bag.out_width(), 8);
  tensor::Tensor out(fx.batch, 10);  // two tail columns the bag must not touch
  for (float& v : out.span()) v = 42.0f;
  std::vector<float> lead(fx.batch);
  ASSERT_TRUE(fx.bag.Forward(fx.batch, fx.tables, fx.fields, out.view(), lead, ComputeContext{2})
                  .ok());
  for (int64_t i = 0; i < fx.batch; ++i) {
    // f0
    const float* r0 = &fx.rows_a[fx.idx0[i] * 4];
    double expect_lead = r0[0];
    for (int d = 0; d < 3; ++d) EXPECT_FLOAT_EQ(out.row(i)[d], r0[1 + d]);
    // f1 (mean)
    const int n1 = fx.off1[i + 1] - fx.off1[i];
    for (int d = 0; d < 4; ++d) {
      double s = 0;
      for (int k = fx.off1[i]; k < fx.off1[i + 1]; ++k) s += fx.rows_a[fx.idx1[k] * 4 + d];
      const double m = n1 ? s / n1 : 0.0;
      if (d == 0) {
        expect_lead += m;
      } else {
        EXPECT_NEAR(out.row(i)[3 + d - 1], m, 1e-6) << "row " << i;
      }
    }
    // f2 (sum, no lead)
    for (int d = 0; d < 2; ++d) {
      double s = 0;
      for (int k = fx.off2[i]; k < fx.off2[i + 1]; ++k) s += fx.rows_b[fx.idx2[k] * 2 + d];
      EXPECT_NEAR(out.row(i)[6 + d], s, 1e-6);
    }
    EXPECT_NEAR(lead[i], expect_lead, 1e-6);
    EXPECT_EQ(out.row(i)[8], 42.0f);
    EXPECT_EQ(out.row(i)[9], 42.0f);
  }
}

TEST(EmbeddingBagTest, BackwardMatchesNaiveScatterAndIsThreadCountInvariant) {
  Fixture fx;
  tensor::Tensor out(fx.batch, 8), dout(fx.batch, 8);
  std::vector<float> lead(fx.batch), dlead(fx.batch);
  Rng rng(2);
  for (float& v : dout.span()) v = static_cast<float>(rng.Normal());
  for (float& v : dlead) v = static_cast<float>(rng.Normal());
  ASSERT_TRUE(fx.bag.Forward(fx.batch, fx.tables, fx.fields, out.view(), lead, ComputeContext{1})
                  .ok());
  std::vector<float> ga(16, -1.0f), gb(6, -1.0f);
  std::vector<std::span<float>> grads = {ga, gb};
  ASSERT_TRUE(fx.bag.Backward(dout.view(), dlead, grads, ComputeContext{1}).ok());

  std::vector<double> ea(16, 0.0), eb(6, 0.0);
  for (int64_t i = 0; i < fx.batch; ++i) {
    const int u0 = fx.idx0[i];
    ea[u0 * 4] += dlead[i];
    for (int d = 0; d < 3; ++d) ea[u0 * 4 + 1 + d] += dout.row(i)[d];
    const int n1 = fx.off1[i + 1] - fx.off1[i];
    for (int k = fx.off1[i]; k < fx.off1[i + 1]; ++k) {
      ea[fx.idx1[k] * 4] += dlead[i] / n1;
      for (int d = 0; d < 3; ++d) ea[fx.idx1[k] * 4 + 1 + d] += dout.row(i)[3 + d] / n1;
    }
    for (int k = fx.off2[i]; k < fx.off2[i + 1]; ++k) {
      for (int d = 0; d < 2; ++d) eb[fx.idx2[k] * 2 + d] += dout.row(i)[6 + d];
    }
  }
  for (int j = 0; j < 16; ++j) EXPECT_NEAR(ga[j], ea[j], 1e-5) << j;
  for (int j = 0; j < 6; ++j) EXPECT_NEAR(gb[j], eb[j], 1e-5) << j;

  // Larger random case: 1 vs 3 threads, bit-identical.
  const int64_t batch = 3000, nu = 700;
  std::vector<float> rows(nu * 4);
  for (float& v : rows) v = static_cast<float>(rng.Normal());
  std::vector<int32_t> idx(batch);
  for (auto& v : idx) v = static_cast<int32_t>(rng.Below(nu));
  EmbeddingBag bag({{"a", 4, 1}}, {{"f", 0, false, 0}, {"g", 0, false, 3}});
  std::vector<PulledTable> tables = {{rows, nu, 4}};
  std::vector<FieldIndices> fields = {{{}, idx}, {{}, idx}};
  tensor::Tensor o(batch, 6), g(batch, 6);
  for (float& v : g.span()) v = static_cast<float>(rng.Normal());
  std::vector<float> l(batch), dl(batch, 0.5f);
  std::vector<float> g1(nu * 4), g3(nu * 4);
  std::vector<std::span<float>> s1 = {g1}, s3 = {g3};
  ASSERT_TRUE(bag.Forward(batch, tables, fields, o.view(), l, ComputeContext{3}).ok());
  ASSERT_TRUE(bag.Backward(g.view(), dl, s3, ComputeContext{3}).ok());
  ASSERT_TRUE(bag.Backward(g.view(), dl, s1, ComputeContext{1}).ok());
  EXPECT_EQ(g1, g3);
}

TEST(EmbeddingBagTest, BadInputsAreInvalidArgumentNamingTheFieldOrTable) {
  Fixture fx;
  tensor::Tensor out(fx.batch, 8);
  std::vector<float> lead(fx.batch);
  fx.idx0[3] = 4;  // out of range for table a (4 rows)
  Status s = fx.bag.Forward(fx.batch, fx.tables, fx.fields, out.view(), lead, ComputeContext{1});
  EXPECT_EQ(s, InvalidArgumentError("field f0 row 3: index 4 out of range [0, 4) of table a"));
  fx.idx0[3] = -1;
  s = fx.bag.Forward(fx.batch, fx.tables, fx.fields, out.view(), lead, ComputeContext{2});
  EXPECT_EQ(s, InvalidArgumentError("field f0 row 3: index -1 out of range [0, 4) of table a"));
  fx.idx0[3] = 0;

  fx.off2[5] = 4;  // last offset must equal the number of indices (5)
  fx.fields[2].offsets = fx.off2;
  s = fx.bag.Forward(fx.batch, fx.tables, fx.fields, out.view(), lead, ComputeContext{1});
  EXPECT_EQ(s, InvalidArgumentError("field f2: CSR offsets must have batch_size + 1 = 6 entries "
                                    "from 0 to the number of indices (5), got 6 entries"));
  fx.off2[5] = 5;
  fx.off2[2] = 0;  // decreasing
  s = fx.bag.Forward(fx.batch, fx.tables, fx.fields, out.view(), lead, ComputeContext{1});
  EXPECT_EQ(s, InvalidArgumentError("field f2: CSR offsets decrease at row 1"));
  fx.off2[2] = 3;

  fx.tables[1].dim = 3;
  s = fx.bag.Forward(fx.batch, fx.tables, fx.fields, out.view(), lead, ComputeContext{1});
  EXPECT_EQ(s, InvalidArgumentError("table b: pulled rows have dim 3, the model expects 2"));
  fx.tables[1].dim = 2;

  std::vector<int32_t> short_idx = {0, 1};
  fx.fields[0].rows = short_idx;
  s = fx.bag.Forward(fx.batch, fx.tables, fx.fields, out.view(), lead, ComputeContext{1});
  EXPECT_EQ(s, InvalidArgumentError("field f0: single-valued (no offsets) with 2 indices, "
                                    "expected batch_size = 5"));
  std::vector<FieldIndices> two(fx.fields.begin(), fx.fields.begin() + 2);
  s = fx.bag.Forward(fx.batch, fx.tables, two, out.view(), lead, ComputeContext{1});
  EXPECT_EQ(s, InvalidArgumentError("expected 3 categorical fields, got 2"));
}

}  // namespace
}  // namespace rectrain::nn

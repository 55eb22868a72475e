// DeepFM forward + backward + loss at criteo-shape (26 fields × dim 16 + 13 dense, MLP
// 400-400-400, batch 4096) and seed-shape (26 × 32 + 50 dense), on 1 and 2 threads, with fp32
// and bf16 (model.precision) GEMMs.
// Reports samples/s (items_per_second, wall time) plus cpu_ms_per_step (process CPU time, all
// threads) and, in BM_DeepFmBreakdown, CPU milliseconds per piece of the step (counters *_ms),
// built from the same layers the model uses.
// BM_DotInteraction times the pairwise dot-product layer alone (FwFM and DLRM), forward and
// backward, at FwFM's criteo shape in examples/fwfm.yaml (39 fields × dim 16) and DLRM's (27).
// BM_FieldSelfAttention times one AutoInt interacting layer (examples/autoint.yaml: 26 fields,
// dim 16, 2 heads of 8), forward and backward.
// Run: OMP_WAIT_POLICY=passive ./model_benchmark (threads are set per case through
// ComputeContext and omp_set_num_threads, which oneDNN follows).
#include <omp.h>
#include <time.h>

#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "rectrain/base/random.h"
#include "rectrain/kernels/gemm.h"
#include "rectrain/nn/attention.h"
#include "rectrain/nn/dense.h"
#include "rectrain/nn/embedding_bag.h"
#include "rectrain/nn/fm.h"
#include "rectrain/nn/interaction.h"
#include "rectrain/nn/loss.h"
#include "rectrain/nn/model_config.h"

namespace rectrain::nn {
namespace {

constexpr int64_t kBatch = 4096;
constexpr int kFields = 26;

struct Shape {
  int dim;
  int num_dense;
};
Shape ShapeOf(int64_t arg) { return arg == 0 ? Shape{16, 13} : Shape{32, 50}; }

// Synthetic pulled rows and indices: ~30% of the 4096 × 26 occurrences are distinct ids.
struct Inputs {
  int64_t num_unique;
  std::vector<float> rows, dense, labels;
  std::vector<std::vector<int32_t>> idx;
  std::vector<PulledTable> tables;
  std::vector<FieldIndices> fields;
  ForwardInput input;

  Inputs(int dim, int num_dense, int64_t batch = kBatch) : num_unique(std::max<int64_t>(1, batch * kFields * 3 / 10)) {
    Rng rng(1);
    rows.resize(num_unique * (dim + 1));
    for (float& v : rows) v = static_cast<float>(rng.Normal() * 0.01);
    dense.resize(batch * num_dense);
    for (float& v : dense) v = static_cast<float>(rng.Uniform() * 3);
    labels.resize(batch);
    for (float& v : labels) v = rng.Uniform() < 0.25 ? 1.0f : 0.0f;
    idx.resize(kFields);
    for (auto& f : idx) {
      f.resize(batch);
      for (auto& v : f) v = static_cast<int32_t>(rng.Below(num_unique));
    }
    tables = {{rows, num_unique, dim + 1}};
    for (auto& f : idx) fields.push_back({{}, f});
    input = {batch, dense, tables, fields, 7};
  }
};

// Process CPU time (all threads). On a shared, oversubscribed machine this is far steadier
// than wall time: a descheduled thread accrues none. With 1 thread it approximates the
// uncontended wall time.
class CpuStopwatch {
 public:
  CpuStopwatch() { Reset(); }
  void Reset() { start_ = Now(); }
  double Seconds() const { return Now() - start_; }

 private:
  static double Now() {
    timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
  }
  double start_;
};

std::vector<std::string> FieldNames() {
  std::vector<std::string> names;
  for (int f = 0; f < kFields; ++f) names.push_back("C" + std::to_string(f + 1));
  return names;
}

// DeepFM with the default MLP (400-400-400) at `shape`, fp32 or bf16 GEMMs.
std::unique_ptr<Model> MakeDeepFm(const Shape& shape, bool bf16) {
  ModelConfig config;
  config.type = "deepfm";
  config.embedding_dim = shape.dim;
  config.precision = bf16 ? GemmPrecision::kBf16 : GemmPrecision::kFp32;
  embedding::EmbeddingTableConfig tmpl;
  return std::move(MakeModel(config, FieldNames(), shape.num_dense, tmpl)).value();
}

void BM_DeepFmStep(benchmark::State& state) {
  const Shape shape = ShapeOf(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  const bool bf16 = state.range(2) != 0;
  if (bf16 && !kernels::Bf16GemmAvailable()) {
    state.SkipWithError("no AVX512_BF16 on this CPU");
    return;
  }
  omp_set_num_threads(threads);
  const ComputeContext compute{threads};
  auto model = MakeDeepFm(shape, bf16);
  Inputs in(shape.dim, shape.num_dense);
  std::vector<float> logits(kBatch), dlogits(kBatch), grads(in.rows.size());
  std::vector<std::span<float>> grad_spans = {grads};
  auto step = [&] {
    RECTRAIN_CHECK(model->Forward(in.input, true, logits, compute).ok());
    benchmark::DoNotOptimize(SigmoidCrossEntropy(logits, in.labels, dlogits, {}, compute));
    RECTRAIN_CHECK(model->Backward(dlogits, grad_spans, compute).ok());
  };
  step();  // first touch of the activation buffers is not part of the steady state
  CpuStopwatch cpu;
  for (auto _ : state) step();
  state.counters["cpu_ms_per_step"] =
      benchmark::Counter(1e3 * cpu.Seconds() / static_cast<double>(state.iterations()));
  state.SetItemsProcessed(state.iterations() * kBatch);
}
// The forward pass alone (evaluation: no dropout, no backward) at the batch sizes a server
// scores, criteo shape on 1 and 2 threads: the floor under `rectrain serve`'s rows/s (docs/benchmarks.md
// "Serving").
void BM_DeepFmForward(benchmark::State& state) {
  const int64_t batch = state.range(0);
  const bool bf16 = state.range(1) != 0;
  const int threads = static_cast<int>(state.range(2));
  if (bf16 && !kernels::Bf16GemmAvailable()) {
    state.SkipWithError("no AVX512_BF16 on this CPU");
    return;
  }
  omp_set_num_threads(threads);
  const ComputeContext compute{threads};
  const Shape shape = ShapeOf(0);  // criteo
  auto model = MakeDeepFm(shape, bf16);
  Inputs in(shape.dim, shape.num_dense, batch);
  std::vector<float> logits(static_cast<size_t>(batch));
  RECTRAIN_CHECK(model->Forward(in.input, false, logits, compute).ok());
  for (auto _ : state) {
    RECTRAIN_CHECK(model->Forward(in.input, false, logits, compute).ok());
    benchmark::DoNotOptimize(logits.data());
  }
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_DeepFmForward)
    ->ArgNames({"batch", "bf16", "threads"})
    ->ArgsProduct({{1, 32, 256, 4096}, {0, 1}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

BENCHMARK(BM_DeepFmStep)
    ->ArgNames({"seed_shape", "threads", "bf16"})
    ->ArgsProduct({{0, 1}, {1, 2}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);

// The same step assembled from the layers, timing each piece.
void BM_DeepFmBreakdown(benchmark::State& state) {
  const Shape shape = ShapeOf(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  omp_set_num_threads(threads);
  LayerContext ctx{ComputeContext{threads}, true, 7};
  const int64_t emb = kFields * shape.dim, width = emb + shape.num_dense;
  Inputs in(shape.dim, shape.num_dense);
  std::vector<EmbeddingBagField> fields;
  for (int f = 0; f < kFields; ++f) fields.push_back({"C", 0, false, f * int64_t{shape.dim}});
  EmbeddingBag bag({{"emb", shape.dim + 1, 1}}, fields);
  FmInteraction fm("fm", kFields, shape.dim);
  std::vector<std::unique_ptr<Dense>> mlp;
  int64_t prev = width;
  for (int h = 0; h < 3; ++h) {
    mlp.push_back(std::make_unique<Dense>("mlp." + std::to_string(h), prev, 400,
                                          Activation::kRelu, WeightInit::kHe, 1));
    prev = 400;
  }
  mlp.push_back(std::make_unique<Dense>("mlp.out", 400, 1, Activation::kNone,
                                        WeightInit::kXavier, 1));
  tensor::Tensor x0(kBatch, width), dx0(kBatch, width), fm_out(kBatch, 1), lead(kBatch, 1);
  std::vector<tensor::Tensor> acts, grads;
  for (auto& d : mlp) {
    acts.emplace_back(kBatch, d->out_features());
    grads.emplace_back(kBatch, d->out_features());
  }
  std::vector<float> logits(kBatch), dlogits(kBatch), tgrad(in.rows.size());
  std::vector<std::span<float>> tgrads = {tgrad};
  // Warm-up step (first touch), then reset the timers.
  auto untimed = [&] {
    RECTRAIN_CHECK(bag.Forward(kBatch, in.tables, in.fields, x0.view(), lead.span(), ctx.compute).ok());
    ConstMatrixView x = x0.view();
    for (size_t l = 0; l < mlp.size(); ++l) {
      RECTRAIN_CHECK(mlp[l]->Forward(x, acts[l].view(), ctx).ok());
      x = acts[l].view();
    }
    for (size_t l = mlp.size(); l-- > 0;) {
      ConstMatrixView xin = l == 0 ? ConstMatrixView(x0.view()) : ConstMatrixView(acts[l - 1].view());
      MatrixView dxin = l == 0 ? dx0.view() : grads[l - 1].view();
      RECTRAIN_CHECK(mlp[l]->Backward(xin, acts[l].view(), grads[l].view(), dxin, ctx).ok());
    }
  };
  untimed();
  double t_emb_f = 0, t_fm_f = 0, t_mlp_f[4] = {}, t_loss = 0, t_mlp_b[4] = {}, t_fm_b = 0,
         t_emb_b = 0;
  int64_t steps = 0;
  for (auto _ : state) {
    CpuStopwatch sw;
    RECTRAIN_CHECK(bag.Forward(kBatch, in.tables, in.fields, x0.view(), lead.span(), ctx.compute).ok());
    t_emb_f += sw.Seconds();
    sw.Reset();
    RECTRAIN_CHECK(fm.Forward(x0.view().Cols(0, emb), fm_out.view(), ctx).ok());
    t_fm_f += sw.Seconds();
    ConstMatrixView x = x0.view();
    for (size_t l = 0; l < mlp.size(); ++l) {
      sw.Reset();
      RECTRAIN_CHECK(mlp[l]->Forward(x, acts[l].view(), ctx).ok());
      t_mlp_f[l] += sw.Seconds();
      x = acts[l].view();
    }
    sw.Reset();
    for (int64_t i = 0; i < kBatch; ++i) logits[i] = lead.data()[i] + fm_out.data()[i] + acts[3].data()[i];
    SigmoidCrossEntropy(logits, in.labels, dlogits, {}, ctx.compute);
    std::copy(dlogits.begin(), dlogits.end(), grads[3].data());
    t_loss += sw.Seconds();
    for (size_t l = mlp.size(); l-- > 0;) {
      sw.Reset();
      ConstMatrixView xin = l == 0 ? ConstMatrixView(x0.view()) : ConstMatrixView(acts[l - 1].view());
      MatrixView dxin = l == 0 ? dx0.view() : grads[l - 1].view();
      RECTRAIN_CHECK(mlp[l]->Backward(xin, acts[l].view(), grads[l].view(), dxin, ctx).ok());
      t_mlp_b[l] += sw.Seconds();
    }
    sw.Reset();
    RECTRAIN_CHECK(fm.BackwardInto(x0.view().Cols(0, emb), {dlogits.data(), kBatch, 1, 1},
                                   dx0.view().Cols(0, emb), true, ctx).ok());
    t_fm_b += sw.Seconds();
    sw.Reset();
    RECTRAIN_CHECK(bag.Backward(dx0.view(), dlogits, tgrads, ctx.compute).ok());
    t_emb_b += sw.Seconds();
    ++steps;
  }
  auto ms = [&](double t) { return benchmark::Counter(1e3 * t / static_cast<double>(steps)); };
  state.counters["emb_fwd_ms"] = ms(t_emb_f);
  state.counters["fm_fwd_ms"] = ms(t_fm_f);
  for (int l = 0; l < 4; ++l) {
    state.counters["mlp" + std::to_string(l) + "_fwd_ms"] = ms(t_mlp_f[l]);
    state.counters["mlp" + std::to_string(l) + "_bwd_ms"] = ms(t_mlp_b[l]);
  }
  state.counters["loss_ms"] = ms(t_loss);
  state.counters["fm_bwd_ms"] = ms(t_fm_b);
  state.counters["emb_bwd_ms"] = ms(t_emb_b);
  state.SetItemsProcessed(state.iterations() * kBatch);
}
BENCHMARK(BM_DeepFmBreakdown)
    ->ArgNames({"seed_shape", "threads"})
    ->Args({0, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);

void BM_DotInteraction(benchmark::State& state) {
  const int64_t vectors = state.range(0);
  const int64_t dim = 16;
  const bool backward = state.range(1) != 0;
  const int threads = static_cast<int>(state.range(2));
  omp_set_num_threads(threads);
  DotInteraction layer("dots", vectors, dim, /*keep_first=*/false);
  tensor::Tensor x, y, dy, dx;
  x.Resize(kBatch, layer.in_features());
  y.Resize(kBatch, layer.out_features());
  dy.Resize(kBatch, layer.out_features());
  dx.Resize(kBatch, layer.in_features());
  Rng rng(3);
  for (float& v : x.span()) v = static_cast<float>(rng.Normal() * 0.1);
  for (float& v : dy.span()) v = static_cast<float>(rng.Normal() * 1e-3);
  const LayerContext ctx{ComputeContext{threads}, true, 0, GemmPrecision::kFp32, 0};
  RECTRAIN_CHECK(layer.Forward(x.view(), y.view(), ctx).ok());
  for (auto _ : state) {
    if (backward) {
      RECTRAIN_CHECK(layer.Backward(x.view(), y.view(), dy.view(), dx.view(), ctx).ok());
      benchmark::DoNotOptimize(dx.data());
    } else {
      RECTRAIN_CHECK(layer.Forward(x.view(), y.view(), ctx).ok());
      benchmark::DoNotOptimize(y.data());
    }
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  // Multiply-adds per row: n(n-1)/2 dots of dim forward, twice that backward.
  const double macs = static_cast<double>(vectors * (vectors - 1) / 2 * dim) * (backward ? 2 : 1);
  state.counters["GFLOPS"] = benchmark::Counter(2.0 * macs * kBatch, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_DotInteraction)
    ->ArgNames({"vectors", "backward", "threads"})
    ->ArgsProduct({{27, 39}, {0, 1}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

void BM_FieldSelfAttention(benchmark::State& state) {
  const int64_t fields = 26, dim = 16;
  const int heads = 2, head_dim = 8;
  const bool backward = state.range(0) != 0;
  const int threads = static_cast<int>(state.range(1));
  omp_set_num_threads(threads);
  FieldSelfAttention layer("attn", fields, dim, heads, head_dim, /*seed=*/7);
  tensor::Tensor x, y, dy, dx;
  x.Resize(kBatch, layer.in_features());
  y.Resize(kBatch, layer.out_features());
  dy.Resize(kBatch, layer.out_features());
  dx.Resize(kBatch, layer.in_features());
  Rng rng(3);
  for (float& v : x.span()) v = static_cast<float>(rng.Normal() * 0.3);
  const LayerContext ctx{ComputeContext{threads}, true, 0, GemmPrecision::kFp32, 0};
  RECTRAIN_CHECK(layer.Forward(x.view(), y.view(), ctx).ok());
  for (auto _ : state) {
    if (backward) {
      state.PauseTiming();  // Backward uses dy as scratch
      for (float& v : dy.span()) v = 1e-3f;
      state.ResumeTiming();
      RECTRAIN_CHECK(layer.Backward(x.view(), y.view(), dy.view(), dx.view(), ctx).ok());
      benchmark::DoNotOptimize(dx.data());
    } else {
      RECTRAIN_CHECK(layer.Forward(x.view(), y.view(), ctx).ok());
      benchmark::DoNotOptimize(y.data());
    }
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  // Multiply-adds per row: the projection F·D·4W, scores and A·V 2·F·F·W; backward twice both.
  const int64_t width = heads * head_dim;
  const double macs = static_cast<double>(fields * dim * 4 * width + 2 * fields * fields * width) * (backward ? 2 : 1);
  state.counters["GFLOPS"] = benchmark::Counter(2.0 * macs * kBatch, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_FieldSelfAttention)
    ->ArgNames({"backward", "threads"})
    ->ArgsProduct({{0, 1}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace rectrain::nn

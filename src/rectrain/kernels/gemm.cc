#include "rectrain/kernels/gemm.h"

#include <dnnl.h>

#include <dnnl.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "rectrain/base/check.h"

namespace rectrain::kernels {
namespace {

// One matmul primitive per distinct (shape, strides, transposes, accumulate). The training
// step uses a handful of shapes, so the map stays small; creating a primitive costs far more
// than a lookup (oneDNN JIT-compiles a kernel per shape).
using MatmulKey = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool>;

struct Bf16Backend {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::mutex mu;
  std::map<MatmulKey, std::shared_ptr<dnnl::matmul>> primitives;
};

Bf16Backend& Backend() {
  static Bf16Backend* backend = new Bf16Backend();  // never destroyed: used until exit
  return *backend;
}

dnnl::memory::desc MatrixDesc(int64_t rows, int64_t cols, int64_t ld, bool transposed,
                              dnnl::memory::data_type type) {
  // A stored matrix X [rows × cols] with row stride ld; the operand is op(X).
  return transposed ? dnnl::memory::desc({cols, rows}, type, {1, ld})
                    : dnnl::memory::desc({rows, cols}, type, {ld, 1});
}

}  // namespace

bool Bf16GemmAvailable() {
  static const bool available = [] {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
    return (isa & bf16) == bf16;
  }();
  return available;
}

void GemmBf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const uint16_t* a,
              int64_t lda, const uint16_t* b, int64_t ldb, bool accumulate, float* c,
              int64_t ldc) {
  RECTRAIN_CHECK(m >= 0 && n >= 0 && k >= 0);
  RECTRAIN_CHECK(Bf16GemmAvailable()) << "GemmBf16 on a CPU without AVX512_BF16";
  if (m == 0 || n == 0) return;
  using dt = dnnl::memory::data_type;
  const auto a_md = trans_a ? MatrixDesc(k, m, lda, true, dt::bf16) : MatrixDesc(m, k, lda, false, dt::bf16);
  const auto b_md = trans_b ? MatrixDesc(n, k, ldb, true, dt::bf16) : MatrixDesc(k, n, ldb, false, dt::bf16);
  const auto c_md = MatrixDesc(m, n, ldc, false, dt::f32);
  Bf16Backend& be = Backend();
  std::shared_ptr<dnnl::matmul> prim;
  try {
    const MatmulKey key{trans_a, trans_b, m, n, k, lda, ldb, ldc, accumulate};
    {
      std::lock_guard<std::mutex> lock(be.mu);
      auto it = be.primitives.find(key);
      if (it != be.primitives.end()) prim = it->second;
    }
    if (!prim) {
      dnnl::primitive_attr attr;
      if (accumulate) {
        dnnl::post_ops ops;
        ops.append_sum(1.0f);
        attr.set_post_ops(ops);
      }
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), attr, be.engine);
      prim = std::make_shared<dnnl::matmul>(pd);
      std::lock_guard<std::mutex> lock(be.mu);
      be.primitives.emplace(key, prim);
    }
    dnnl::stream stream(be.engine);
    dnnl::memory am(a_md, be.engine, const_cast<uint16_t*>(a));
    dnnl::memory bm(b_md, be.engine, const_cast<uint16_t*>(b));
    dnnl::memory cm(c_md, be.engine, c);
    prim->execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
    stream.wait();
  } catch (const dnnl::error& e) {
    RECTRAIN_CHECK(false) << "oneDNN bf16 matmul " << m << "x" << n << "x" << k
                          << " failed: " << e.what() << " (status " << static_cast<int>(e.status)
                          << ")";
  }
}

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
          const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
          int64_t ldc) {
  RECTRAIN_CHECK(m >= 0 && n >= 0 && k >= 0);
  if (m == 0 || n == 0) return;
  dnnl_status_t st = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda,
                                b, ldb, beta, c, ldc);
  RECTRAIN_CHECK(st == dnnl_success) << "dnnl_sgemm failed with status " << static_cast<int>(st);
}

void GemmReference(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                   const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                   float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p) {
        const float av = trans_a ? a[p * lda + i] : a[i * lda + p];
        const float bv = trans_b ? b[j * ldb + p] : b[p * ldb + j];
        acc += static_cast<double>(av) * bv;
      }
      float& out = c[i * ldc + j];
      out = static_cast<float>(alpha * acc + (beta == 0.0f ? 0.0 : beta * out));
    }
  }
}

}  // namespace rectrain::kernels

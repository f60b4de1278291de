// Reductions inside a CUDA graph (compiled as CUDA when PK_ENABLE_CUDA; otherwise the test skips with a
// message). Once a stream's workspace has reached the size a call needs (one call outside the capture),
// the calls enqueue kernels only: no host allocation, no synchronisation, so they can be captured. The
// test captures a small device-wide sum, an argmax, a softmax and a layer_norm into one graph, replays
// it on two different inputs (uploaded between the replays) and checks every output against a
// double-precision reference on the CPU.
#include <pk/config.hpp>
#include <pk/reduction/norm.hpp>
#include <pk/reduction/reduce.hpp>
#include <pk/runtime.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <random>
#include <vector>

#if PK_ENABLE_CUDA && defined(__CUDACC__)
#include <cuda_runtime.h>

namespace {

#define CK(x) ASSERT_EQ((x), cudaSuccess) << #x

TEST(GraphCapture, ReductionsReplayOnNewInputs) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) GTEST_SKIP() << "no CUDA device: graph capture skipped";
  cudaStream_t cs;
  CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  pk::stream s;
  ASSERT_TRUE(pk::stream::cuda(cs, 0, s));
  // A device-wide input of a few waves of blocks at most (the small-input case) and 37 rows of 1000.
  constexpr std::int64_t n = 100003, rows = 37, cols = 1000;
  float *in = nullptr, *sum = nullptr, *x = nullptr, *y = nullptr, *z = nullptr, *w = nullptr, *b = nullptr;
  std::int64_t* arg = nullptr;
  CK(cudaMalloc(&in, n * sizeof(float)));
  CK(cudaMalloc(&sum, sizeof(float)));
  CK(cudaMalloc(&arg, sizeof(std::int64_t)));
  CK(cudaMalloc(&x, rows * cols * sizeof(float)));
  CK(cudaMalloc(&y, rows * cols * sizeof(float)));
  CK(cudaMalloc(&z, rows * cols * sizeof(float)));
  CK(cudaMalloc(&w, cols * sizeof(float)));
  CK(cudaMalloc(&b, cols * sizeof(float)));
  pk::rows_desc r{pk::reduction::dtype::f32, x, y, rows, cols};
  pk::norm_args ln;
  ln.rows = r;
  ln.rows.y = z;
  ln.weight = w;
  ln.bias = b;
  const auto enqueue = [&] {
    EXPECT_TRUE(pk::reduce(s, pk::reduce_op::sum, pk::reduction::dtype::f32, in, n, sum));
    EXPECT_TRUE(pk::reduce(s, pk::reduce_op::argmax, pk::reduction::dtype::f32, in, n, arg));
    EXPECT_TRUE(pk::softmax(s, r));
    EXPECT_TRUE(pk::layer_norm(s, ln));
  };
  // Inputs of one replay, drawn fresh; the seed is printed.
  const std::uint64_t seed = std::random_device{}();
  std::cout << "seed " << seed << "\n";
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  std::vector<float> hin(n), hx(rows * cols), hw(cols), hb(cols);
  const auto draw = [&] {
    for (auto& v : hin) v = d(rng);
    for (auto& v : hx) v = d(rng);
    for (auto& v : hw) v = d(rng);
    for (auto& v : hb) v = d(rng);
    ASSERT_EQ(cudaMemcpy(in, hin.data(), n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(x, hx.data(), hx.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(w, hw.data(), cols * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(b, hb.data(), cols * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    // Poisoned outputs: every element must be written by the replay.
    ASSERT_EQ(cudaMemset(sum, 0xff, sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMemset(arg, 0xff, sizeof(std::int64_t)), cudaSuccess);
    ASSERT_EQ(cudaMemset(y, 0xff, hx.size() * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMemset(z, 0xff, hx.size() * sizeof(float)), cudaSuccess);
  };
  const auto check = [&] {
    float got_sum = 0;
    std::int64_t got_arg = -1;
    std::vector<float> gy(hx.size()), gz(hx.size());
    ASSERT_EQ(cudaMemcpy(&got_sum, sum, sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(&got_arg, arg, sizeof(std::int64_t), cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(gy.data(), y, gy.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(gz.data(), z, gz.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    const double u = std::ldexp(1.0, -24);
    double ref = 0, abs_sum = 0;
    std::int64_t ref_arg = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      ref += hin[i];
      abs_sum += std::fabs(hin[i]);
      if (hin[i] > hin[ref_arg]) ref_arg = i;
    }
    // Summation error rule: (n - 1) u sum|x| bounds any order of fp32 additions.
    EXPECT_LE(std::fabs(got_sum - ref), (n - 1) * u * abs_sum);
    EXPECT_EQ(got_arg, ref_arg);  // the first maximum (random floats: ties are rare and resolved to the first)
    for (std::int64_t i = 0; i < rows; ++i) {
      const float* xr = hx.data() + i * cols;
      double m = -INFINITY, se = 0, mean = 0, var = 0;
      for (std::int64_t j = 0; j < cols; ++j) m = std::max(m, double(xr[j]));
      for (std::int64_t j = 0; j < cols; ++j) se += std::exp(xr[j] - m), mean += xr[j];
      mean /= cols;
      for (std::int64_t j = 0; j < cols; ++j) var += (xr[j] - mean) * (xr[j] - mean);
      const double rstd = 1 / std::sqrt(var / cols + 1e-5);
      for (std::int64_t j = 0; j < cols; ++j) {
        const double sm = std::exp(xr[j] - m) / se;
        // test_norm.cpp's rules: softmax ref ((cols + 8 + |x - m|) u + u); layer_norm first order.
        ASSERT_LE(std::fabs(gy[i * cols + j] - sm), sm * ((cols + 8 + std::fabs(xr[j] - m)) * u + u) + 1e-38)
            << "softmax row " << i << " col " << j;
        const double xhat = (xr[j] - mean) * rstd, lref = xhat * hw[j] + hb[j];
        const double tol = std::fabs(hw[j]) * rstd * (cols * u * 2 + 8 * u * std::fabs(xr[j] - mean)) +
                           std::fabs(hw[j] * xhat) * (cols + 8) * u + 4 * u * std::fabs(hb[j]) + std::fabs(lref) * u;
        ASSERT_LE(std::fabs(gz[i * cols + j] - lref), tol) << "layer_norm row " << i << " col " << j;
      }
    }
  };
  // The first call sizes the stream's workspace; then the capture.
  draw();
  enqueue();
  CK(cudaStreamSynchronize(cs));
  check();
  cudaGraph_t graph;
  CK(cudaStreamBeginCapture(cs, cudaStreamCaptureModeGlobal));
  enqueue();
  CK(cudaStreamEndCapture(cs, &graph));
  cudaGraphExec_t exec;
  CK(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 2; ++replay) {
    SCOPED_TRACE("replay " + std::to_string(replay));
    draw();
    CK(cudaGraphLaunch(exec, cs));
    CK(cudaStreamSynchronize(cs));
    check();
  }
  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(graph));
  for (void* p : {static_cast<void*>(in), static_cast<void*>(sum), static_cast<void*>(arg), static_cast<void*>(x),
                  static_cast<void*>(y), static_cast<void*>(z), static_cast<void*>(w), static_cast<void*>(b)})
    CK(cudaFree(p));
  CK(cudaStreamDestroy(cs));
}

}  // namespace

#else

TEST(GraphCapture, Skipped) { GTEST_SKIP() << "built without CUDA (PK_ENABLE_CUDA=OFF): graph capture skipped"; }

#endif

// PK_TUNING=tune on the GPU (compiled as CUDA when PK_ENABLE_CUDA; otherwise the test skips with a
// message): the first attention_forward of a problem with several fitting candidates measures them,
// stores the fastest in the tuning cache (a file of the test's own) and runs with it; its output is
// bit for bit the output of that winner forced by name and of the next call; a call with a forced policy
// and a call captured into a graph store nothing (their buckets stay empty).
#include <pk/archdb/family_plan.hpp>
#include <pk/archdb/tuning_cache.hpp>
#include <pk/attention/attention.hpp>
#include <pk/config.hpp>
#include <pk/portable/numeric.hpp>
#include <pk/runtime.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#if PK_ENABLE_CUDA && defined(__CUDACC__)
#include <cuda_runtime.h>

namespace {

#define CK(x) ASSERT_EQ((x), cudaSuccess) << #x

TEST(TuningGpu, FirstCallMeasuresStoresAndRunsTheWinner) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) GTEST_SKIP() << "no CUDA device: tuning skipped";
  const std::filesystem::path cache =
      std::filesystem::temp_directory_path() / ("pk_tuning_gpu_" + std::to_string(::getpid()) + ".json");
  std::filesystem::remove(cache);
  ASSERT_EQ(setenv("PK_TUNING_CACHE", cache.c_str(), 1), 0);
  ASSERT_EQ(setenv("PK_TUNING", "tune", 1), 0);
  pk::archdb::clear_plan_cache();

  pk::stream s;
  ASSERT_TRUE(pk::stream::cuda(nullptr, 0, s));
  // bf16, head_dim 64 (several candidates fit an H100/H200 and an A100), ragged sequence lengths.
  const std::int64_t b = 2, sq = 777, sk = 1031, h = 4, d = 64;
  pk::attention::attention_problem pr;
  pr.batch = static_cast<int>(b), pr.heads_q = pr.heads_kv = static_cast<int>(h), pr.head_dim = static_cast<int>(d);
  pr.seqlen_q = sq, pr.seqlen_k = sk;
  const pk::archdb::plan planned = pk::plan_attention(s.device(), pr);
  int fitting = 0;
  for (const auto& c : planned.all) fitting += c.fits ? 1 : 0;
  if (fitting < 2) GTEST_SKIP() << s.device().name << ": fewer than two fitting candidates, nothing to tune";

  const std::int64_t nq = b * sq * h * d, nk = b * sk * h * d;
  std::mt19937 rng(20261201);
  std::normal_distribution<float> dist;
  std::vector<std::uint16_t> hq(nq), hk(nk), hv(nk);
  for (auto* v : {&hq, &hk, &hv})
    for (auto& x : *v) x = pk::detail::float_to_bf16_bits(dist(rng));
  std::uint16_t *q = nullptr, *k = nullptr, *v = nullptr, *o1 = nullptr, *o2 = nullptr, *o3 = nullptr;
  CK(cudaMalloc(&q, nq * 2));
  CK(cudaMalloc(&k, nk * 2));
  CK(cudaMalloc(&v, nk * 2));
  for (auto** o : {&o1, &o2, &o3}) {
    CK(cudaMalloc(o, nq * 2));
    CK(cudaMemset(*o, 0xff, nq * 2));  // NaN bits: every element must be written
  }
  CK(cudaMemcpy(q, hq.data(), nq * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(k, hk.data(), nk * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(v, hv.data(), nk * 2, cudaMemcpyHostToDevice));
  pk::attention_args a;
  a.q = pk::contiguous(q, pk::dtype::bf16, {b, sq, h, d});
  a.k = pk::contiguous(k, pk::dtype::bf16, {b, sk, h, d});
  a.v = pk::contiguous(v, pk::dtype::bf16, {b, sk, h, d});

  // First call: measures, stores, runs the winner.
  a.out = pk::contiguous(o1, pk::dtype::bf16, {b, sq, h, d});
  ASSERT_TRUE(pk::attention_forward(s, a));
  ASSERT_TRUE(pk::synchronize(s));
  std::ifstream f(cache);
  ASSERT_TRUE(f.good()) << "no tuning cache written at " << cache;
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::string bucket = pk::attention::tuning_bucket(pr);
  EXPECT_NE(text.find(bucket), std::string::npos) << text;
  auto& tc = pk::archdb::tuning_cache::instance();
  const auto hit = tc.lookup(pk::archdb::tuning_key_of(s.device(), "attention", planned, bucket));
  ASSERT_TRUE(hit.has_value()) << text;
  bool winner_fits = false;
  for (const auto& c : planned.all) winner_fits |= c.fits && c.name == hit->winner;
  EXPECT_TRUE(winner_fits) << hit->winner;
  EXPECT_GT(hit->measured_us, 0.0);

  // The winner forced by name gives the same bits.
  a.out = pk::contiguous(o2, pk::dtype::bf16, {b, sq, h, d});
  a.policy = hit->winner.c_str();
  ASSERT_TRUE(pk::attention_forward(s, a));
  a.policy = nullptr;
  // A later call (the stored winner adopted) gives the same bits again.
  a.out = pk::contiguous(o3, pk::dtype::bf16, {b, sq, h, d});
  ASSERT_TRUE(pk::attention_forward(s, a));
  ASSERT_TRUE(pk::synchronize(s));
  std::vector<std::uint16_t> r1(nq), r2(nq), r3(nq);
  CK(cudaMemcpy(r1.data(), o1, nq * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(r2.data(), o2, nq * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(r3.data(), o3, nq * 2, cudaMemcpyDeviceToHost));
  EXPECT_EQ(std::memcmp(r1.data(), r2.data(), nq * 2), 0) << "tuned call differs from the winner forced by name";
  EXPECT_EQ(std::memcmp(r1.data(), r3.data(), nq * 2), 0) << "the adopting call differs from the tuned one";
  std::int64_t nan_bits = 0;
  for (auto x : r1) nan_bits += x == 0xffff ? 1 : 0;
  EXPECT_EQ(nan_bits, 0) << "elements left unwritten";

  // Neither a forced policy nor a captured call measures: shorter query sequences (other buckets).
  const auto stored = [&](std::int64_t len) {
    pk::attention::attention_problem p2 = pr;
    p2.seqlen_q = len;
    return tc.lookup(pk::archdb::tuning_key_of(s.device(), "attention", pk::plan_attention(s.device(), p2),
                                               pk::attention::tuning_bucket(p2)))
        .has_value();
  };
  a.q = pk::contiguous(q, pk::dtype::bf16, {b, 100, h, d});
  a.out = pk::contiguous(o1, pk::dtype::bf16, {b, 100, h, d});
  a.policy = hit->winner.c_str();
  ASSERT_TRUE(pk::attention_forward(s, a));
  a.policy = nullptr;
  ASSERT_TRUE(pk::synchronize(s));
  EXPECT_FALSE(stored(100)) << "a forced policy measured and stored";
  cudaStream_t cs;
  CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  pk::stream sc;
  ASSERT_TRUE(pk::stream::cuda(cs, 0, sc));
  a.q = pk::contiguous(q, pk::dtype::bf16, {b, 40, h, d});
  a.out = pk::contiguous(o1, pk::dtype::bf16, {b, 40, h, d});
  cudaGraph_t graph;
  CK(cudaStreamBeginCapture(cs, cudaStreamCaptureModeThreadLocal));
  const pk::status captured = pk::attention_forward(sc, a);
  CK(cudaStreamEndCapture(cs, &graph));
  EXPECT_TRUE(captured) << captured.to_string();
  EXPECT_FALSE(stored(40)) << "a captured call measured and stored";
  CK(cudaGraphDestroy(graph));
  CK(cudaStreamDestroy(cs));

  for (auto* p : {q, k, v, o1, o2, o3}) CK(cudaFree(p));
  unsetenv("PK_TUNING");
  unsetenv("PK_TUNING_CACHE");
  pk::archdb::clear_plan_cache();
  std::filesystem::remove(cache);
}

}  // namespace

#else

TEST(TuningGpu, Skipped) { GTEST_SKIP() << "built without CUDA (PK_ENABLE_CUDA=OFF): PK_TUNING=tune skipped"; }

#endif

// Reductions benchmark on the GPU: pk against CUB (DeviceReduce, DeviceSegmentedReduce) compiled into
// the same binary, and against the measured copy bandwidth (a D2D cudaMemcpy in the same process).
// Every number is the median of event-timed repetitions after warm-up, on random (never zero) data.
// Prints markdown tables; bench/reduction/torch_bench.py measures PyTorch on the same shapes.
//
//   build/red-cuda/bench/reduction/pk_bench_reduce [--quick | --segmented | --rows | --stream-order | --segmented-once LEN]
// --segmented: only the segmented tables, and the breakdowns (host enqueue against GPU time) of the segmented
// sums at 4096 and 65536 and of small sums.
// --rows: only the row operations' tables.
// --stream-order: a plain sum's speed with chunked against grid-strided tiles (no pk kernel).
#include <pk/reduction/norm.hpp>
#include <pk/reduction/reduce.hpp>
#include <pk/reduction/reduce_policy.hpp>

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <functional>
#include <type_traits>
#include <string>
#include <vector>

namespace {

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)
#define PK(x)                                                                           \
  do {                                                                                  \
    pk::status s_ = (x);                                                                \
    if (!s_) {                                                                          \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, s_.to_string().c_str()); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

__global__ void empty_kernel() {}

int reps = 30;        // timed repetitions per case (median reported)
constexpr int warmup = 5;

//! Median time in microseconds of `f` (enqueued on the default stream), event-timed per repetition.
double time_us(const std::function<void()>& f) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < warmup; ++i) f();
  std::vector<float> t;
  for (int i = 0; i < reps; ++i) {
    CK(cudaEventRecord(a));
    f();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1000.0f);
  }
  CK(cudaGetLastError());
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Random data in [-1, 1) (bf16/fp16 as 16-bit patterns, integers small) filled on the device.
__global__ void fill_kernel(void* p, std::int64_t n, int kind, unsigned seed) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n; i += std::int64_t{gridDim.x} * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    const float u = (h & 0xffffff) / 16777216.0f * 2.0f - 1.0f;
    switch (kind) {
      case 0: static_cast<double*>(p)[i] = u; break;
      case 1: static_cast<float*>(p)[i] = u; break;
      case 2: static_cast<__half*>(p)[i] = __float2half(u); break;
      case 3: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(u); break;
      case 4: static_cast<int*>(p)[i] = static_cast<int>(h % 1000) - 500; break;
      case 5: static_cast<long long*>(p)[i] = static_cast<long long>(h % 1000) - 500; break;
    }
  }
}
int kind_of(pk::reduction::dtype t) {
  using pk::reduction::dtype;
  switch (t) {
    case dtype::f64: return 0;
    case dtype::f32: return 1;
    case dtype::f16: return 2;
    case dtype::bf16: return 3;
    case dtype::i32: return 4;
    default: return 5;
  }
}
void fill(void* p, std::int64_t n, pk::reduction::dtype t, unsigned seed) {
  fill_kernel<<<1024, 256>>>(p, n, kind_of(t), seed);
  CK(cudaGetLastError());
}

struct to_float {
  __device__ float operator()(__nv_bfloat16 x) const { return __bfloat162float(x); }
  __device__ float operator()(__half x) const { return __half2float(x); }
};

double copy_gbps = 0;

void measure_copy() {
  const std::size_t bytes = std::size_t{1} << 32;  // 4 GiB, as ANCHORS.md
  void *a, *b;
  CK(cudaMalloc(&a, bytes));
  CK(cudaMalloc(&b, bytes));
  CK(cudaMemset(a, 1, bytes));
  const double us = time_us([&] { CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice)); });
  copy_gbps = 2.0 * bytes / us / 1e3;
  std::printf("## Copy bandwidth\n\nD2D cudaMemcpy 4 GiB: %.1f us, %.0f GB/s (read + write)\n\n", us, copy_gbps);
  CK(cudaFree(a));
  CK(cudaFree(b));
}

template <class CubIn, class CubOut>
void device_sum_case(pk::stream& s, pk::reduction::dtype t, std::int64_t n, void* in, void* out, void* cub_tmp,
                     std::size_t cub_tmp_bytes) {
  const int eb = pk::reduction::size_of(t);
  fill(in, n, t, 7);
  const double pk_us = time_us([&] { PK(pk::reduce(s, pk::reduce_op::sum, t, in, n, out)); });
  std::size_t tb = cub_tmp_bytes;
  double cub_us = 0;
  if constexpr (std::is_same_v<CubIn, __nv_bfloat16> || std::is_same_v<CubIn, __half>) {
    cub_us = time_us([&] {
      CK(cub::DeviceReduce::TransformReduce(cub_tmp, tb, static_cast<const CubIn*>(in), static_cast<float*>(out), n,
                                            ::cuda::std::plus<float>{}, to_float{}, 0.0f));
    });
  } else {
    cub_us = time_us([&] {
      CK(cub::DeviceReduce::Sum(cub_tmp, tb, static_cast<const CubIn*>(in), static_cast<CubOut*>(out), n));
    });
  }
  const double gbps = n * double(eb) / pk_us / 1e3;
  std::printf("| sum %s | 2^%d | %.1f | %.1f | %.2fx | %.0f | %.0f%% |\n", pk::reduction::to_string(t),
              static_cast<int>(std::log2(double(n))), pk_us, cub_us, cub_us / pk_us, gbps, 100.0 * gbps / copy_gbps);
}

void device_reduce_tables(pk::stream& s, bool quick) {
  using pk::reduction::dtype;
  const std::int64_t nmax = std::int64_t{1} << 28;
  void *in, *out, *cub_tmp;
  CK(cudaMalloc(&in, nmax * 8));
  CK(cudaMalloc(&out, 64));
  std::size_t tb = 0;
  CK(cub::DeviceReduce::Sum(nullptr, tb, static_cast<const double*>(in), static_cast<double*>(out), nmax));
  tb = std::max<std::size_t>(tb, 1 << 24);
  CK(cudaMalloc(&cub_tmp, tb));
  std::printf("## Device-wide sum (pk::reduce vs CUB DeviceReduce; 16-bit types: CUB TransformReduce, fp32 accumulate)\n\n");
  std::printf("| op | n | pk us | CUB us | CUB/pk | pk GB/s | %% of copy |\n|---|---|---|---|---|---|---|\n");
  std::vector<int> logs = quick ? std::vector<int>{20, 28} : std::vector<int>{16, 20, 24, 28};
  for (int lg : logs) {
    const std::int64_t n = std::int64_t{1} << lg;
    device_sum_case<float, float>(s, dtype::f32, n, in, out, cub_tmp, tb);
    device_sum_case<double, double>(s, dtype::f64, n, in, out, cub_tmp, tb);
    device_sum_case<__nv_bfloat16, float>(s, dtype::bf16, n, in, out, cub_tmp, tb);
    device_sum_case<__half, float>(s, dtype::f16, n, in, out, cub_tmp, tb);
    device_sum_case<int, int>(s, dtype::i32, n, in, out, cub_tmp, tb);
    device_sum_case<long long, long long>(s, dtype::i64, n, in, out, cub_tmp, tb);
  }
  // Small inputs: every candidate forced beside the plan, and the event-timed floor of one empty kernel.
  std::printf("\n### Small inputs, f32 sum: every candidate forced (us)\n\nempty kernel (launch floor): %.1f us\n\n| n | plan |",
              time_us([] { empty_kernel<<<1, 32>>>(); }));
  for (const auto& p : pk::reduction::reduce_candidates) std::printf(" %s |", pk::reduction::name_of(p).c_str());
  std::printf("\n|---|---|");
  for (std::size_t i = 0; i < pk::reduction::reduce_candidates.size(); ++i) std::printf("---|");
  std::printf("\n");
  for (int lg : {10, 14, 16, 18, 20}) {
    const std::int64_t n = std::int64_t{1} << lg;
    fill(in, n, dtype::f32, 5);
    const std::string plan = pk::reduction::plan_reduce(s.device(), n, 4).name;
    std::printf("| 2^%d | %s %.1f |", lg, plan.c_str(),
                time_us([&] { PK(pk::reduce(s, pk::reduce_op::sum, dtype::f32, in, n, out)); }));
    for (const auto& p : pk::reduction::reduce_candidates) {
      const std::string name = pk::reduction::name_of(p);
      pk::reduce_options o;
      o.policy = name.c_str();
      std::printf(" %.1f |", time_us([&] { PK(pk::reduce(s, pk::reduce_op::sum, dtype::f32, in, n, out, o)); }));
    }
    std::printf("\n");
  }
  std::printf("\n## Argmax, min, reproducible sum\n\n| op | n | pk us | anchor us | anchor/pk | pk GB/s | %% of copy |\n|---|---|---|---|---|---|---|\n");
  for (int lg : {24, 28}) {
    const std::int64_t n = std::int64_t{1} << lg;
    for (dtype t : {dtype::f32, dtype::bf16}) {
      fill(in, n, t, 11);
      const int eb = pk::reduction::size_of(t);
      const double pk_us = time_us([&] { PK(pk::reduce(s, pk::reduce_op::argmax, t, in, n, out)); });
      std::size_t b = tb;
      double cub_us = 0;
      if (t == dtype::f32) {
        cub_us = time_us([&] {
          CK(cub::DeviceReduce::ArgMax(cub_tmp, b, static_cast<const float*>(in), static_cast<float*>(out),
                                       static_cast<long long*>(out) + 1, n));
        });
      } else {
        cub_us = time_us([&] {
          CK(cub::DeviceReduce::ArgMax(cub_tmp, b, static_cast<const __nv_bfloat16*>(in),
                                       static_cast<__nv_bfloat16*>(out), static_cast<long long*>(out) + 1, n));
        });
      }
      const double gbps = n * double(eb) / pk_us / 1e3;
      std::printf("| argmax %s (anchor: CUB ArgMax) | 2^%d | %.1f | %.1f | %.2fx | %.0f | %.0f%% |\n",
                  pk::reduction::to_string(t), lg, pk_us, cub_us, cub_us / pk_us, gbps, 100.0 * gbps / copy_gbps);
    }
    for (dtype t : {dtype::f32, dtype::f64}) {
      fill(in, n, t, 13);
      const int eb = pk::reduction::size_of(t);
      pk::reduce_options o;
      o.reproducible = true;
      const double def_us = time_us([&] { PK(pk::reduce(s, pk::reduce_op::sum, t, in, n, out)); });
      const double rep_us = time_us([&] { PK(pk::reduce(s, pk::reduce_op::sum, t, in, n, out, o)); });
      const double gbps = n * double(eb) / rep_us / 1e3;
      std::printf("| reproducible sum %s (anchor: pk default sum) | 2^%d | %.1f | %.1f | %.2fx | %.0f | %.0f%% |\n",
                  pk::reduction::to_string(t), lg, rep_us, def_us, def_us / rep_us, gbps, 100.0 * gbps / copy_gbps);
    }
  }
  std::printf("\n");
  CK(cudaFree(in));
  CK(cudaFree(out));
  CK(cudaFree(cub_tmp));
}

// Segment lengths of the segmented table: uniform ones, then power-law ones (Pareto with exponent 1.2
// from 64 elements, capped at 2^20, fixed seed), each filling `total` elements.
std::vector<std::int64_t> segment_offsets(std::int64_t total, std::int64_t uniform_len) {
  std::vector<std::int64_t> h{0};
  if (uniform_len > 0) {
    for (std::int64_t i = 1; i * uniform_len <= total; ++i) h.push_back(i * uniform_len);
    return h;
  }
  unsigned long long z = 0x9e3779b97f4a7c15ull;
  while (h.back() < total) {
    z = z * 6364136223846793005ull + 1442695040888963407ull;
    const double u = static_cast<double>((z >> 11) + 1) / 9007199254740993.0;  // (0, 1]
    const std::int64_t len = std::min<std::int64_t>(std::int64_t{1} << 20, static_cast<std::int64_t>(64.0 * std::pow(u, -1.0 / 1.2)));
    h.push_back(std::min(total, h.back() + len));
  }
  return h;
}

// The segmented benches' device buffers: 2^26 f32 inputs, room for the offsets and outputs of segments of 64
// or more elements, CUB's temporary storage. The inputs are multiples of 1/16 in [-1/2, 1/2] without 0: every
// partial sum of at most 2^20 of them is a multiple of 2^-4 below 2^19, exact in fp32, so every summation order
// gives the double sum exactly, which `check` demands.
struct segmented_input {
  static constexpr std::int64_t total = std::int64_t{1} << 26;
  void *in, *out, *cub_tmp;
  std::int64_t* off;
  std::size_t cub_bytes = 1 << 24;
  std::vector<float> hin = std::vector<float>(static_cast<std::size_t>(total));
  std::vector<std::int64_t> h;  //!< the offsets on the device
  segmented_input() {
    CK(cudaMalloc(&in, total * 4));
    CK(cudaMalloc(&out, (total / 64 + 1) * 8));
    CK(cudaMalloc(&off, (total / 64 + 2) * 8));
    CK(cudaMalloc(&cub_tmp, cub_bytes));
    unsigned long long z = 17;
    for (float& v : hin) {
      z = z * 6364136223846793005ull + 1442695040888963407ull;
      const int k = static_cast<int>((z >> 33) % 16) - 8;
      v = static_cast<float>(k >= 0 ? k + 1 : k) / 16.0f;
    }
    CK(cudaMemcpy(in, hin.data(), total * 4, cudaMemcpyHostToDevice));
  }
  ~segmented_input() {
    CK(cudaFree(in));
    CK(cudaFree(out));
    CK(cudaFree(off));
    CK(cudaFree(cub_tmp));
  }
  //! Uploads the offsets of segment_offsets(total, len); returns the number of segments.
  std::int64_t segments_of(std::int64_t len) {
    h = segment_offsets(total, len);
    CK(cudaMemcpy(off, h.data(), h.size() * 8, cudaMemcpyHostToDevice));
    return static_cast<std::int64_t>(h.size()) - 1;
  }
  //! Every segment's f32 sum in `out` equals the host's double sum; exits with the segment otherwise.
  void check(const char* who) const {
    const std::int64_t segs = static_cast<std::int64_t>(h.size()) - 1;
    std::vector<float> got(static_cast<std::size_t>(segs));
    CK(cudaMemcpy(got.data(), out, segs * 4, cudaMemcpyDeviceToHost));
    for (std::int64_t i = 0; i < segs; ++i) {
      double want = 0;
      for (std::int64_t j = h[i]; j < h[i + 1]; ++j) want += hin[static_cast<std::size_t>(j)];
      if (static_cast<double>(got[i]) != want) {
        std::fprintf(stderr, "segmented sum (%s): segment %lld: got %g want %g\n", who, static_cast<long long>(i), got[i], want);
        std::exit(1);
      }
    }
  }
  //! CUB's segmented sum of the uploaded segments into `out`.
  void cub_sum() {
    std::size_t b = cub_bytes;
    CK(cub::DeviceSegmentedReduce::Sum(cub_tmp, b, static_cast<const float*>(in), static_cast<float*>(out),
                                       static_cast<int>(h.size()) - 1, off, off + 1));
  }
};

void segmented_table(pk::stream& s) {
  using pk::reduction::dtype;
  segmented_input si;
  std::printf("## Segmented sum, f32, 2^26 elements (pk::segmented_reduce vs CUB DeviceSegmentedReduce::Sum)\n\n");
  std::printf("Every candidate forced by name as well (planned / best: the plan's time over the fastest one's); "
              "inputs are multiples of 1/16 whose sums are exact in fp32, so every result must equal the host's double "
              "sum.\n\n");
  std::printf("| segment lengths | segments | pk us | CUB us | CUB/pk | pk GB/s | %% of copy | plan | planned / best | candidates (us) |\n"
              "|---|---|---|---|---|---|---|---|---|---|\n");
  for (std::int64_t len : {std::int64_t{64}, std::int64_t{256}, std::int64_t{4096}, std::int64_t{65536}, std::int64_t{1} << 20, std::int64_t{0}}) {
    const std::int64_t segs = si.segments_of(len);
    const pk::archdb::plan plan = pk::reduction::plan_segmented_reduce(s.device(), segs, pk::reduction::segmented_assumed_len, 4);
    const double pk_us =
        time_us([&] { PK(pk::segmented_reduce(s, pk::reduce_op::sum, dtype::f32, si.in, segs, si.off, si.out)); });
    si.check("plan");
    std::string cands;
    double best = pk_us;
    for (const auto& c : plan.all) {
      pk::reduce_options o;
      o.policy = c.name.c_str();
      const double us = time_us([&] { PK(pk::segmented_reduce(s, pk::reduce_op::sum, dtype::f32, si.in, segs, si.off, si.out, o)); });
      si.check(c.name.c_str());
      best = std::min(best, us);
      char buf[96];
      std::snprintf(buf, sizeof buf, "%s%s %.1f", cands.empty() ? "" : ", ", c.name.c_str(), us);
      cands += buf;
    }
    const double cub_us = time_us([&] { si.cub_sum(); });
    const double gbps = si.total * 4.0 / pk_us / 1e3;
    const std::string what = len > 0 ? std::to_string(len) : std::string("power-law (64 .. 2^20, exponent 1.2)");
    std::printf("| %s | %lld | %.1f | %.1f | %.2fx | %.0f | %.0f%% | %s | %.2f | %s |\n", what.c_str(),
                static_cast<long long>(segs), pk_us, cub_us, cub_us / pk_us, gbps, 100.0 * gbps / copy_gbps,
                plan.name.c_str(), pk_us / best, cands.c_str());
  }
  std::printf("\n");
  // Every operation through every split candidate (the sum alone is checked above; the other operations'
  // results are checked by the GPU tests): the register use, and so the resident blocks, differ per op.
  std::printf("### The even split per operation, f32, 2^26 elements (us)\n\n| op | segment length |");
  for (const auto& p : pk::reduction::split_candidates) std::printf(" %s |", pk::reduction::name_of(p).c_str());
  std::printf("\n|---|---|");
  for (std::size_t i = 0; i < pk::reduction::split_candidates.size(); ++i) std::printf("---|");
  std::printf("\n");
  for (std::int64_t len : {std::int64_t{256}, std::int64_t{65536}}) {
    const std::int64_t segs = si.segments_of(len);
    // One table row: `op` on `type`, every split candidate forced by name.
    const auto row = [&](const char* what, pk::reduce_op op, dtype type) {
      std::printf("| %s | %lld |", what, static_cast<long long>(len));
      for (const auto& p : pk::reduction::split_candidates) {
        const std::string name = pk::reduction::name_of(p);
        pk::reduce_options o;
        o.policy = name.c_str();
        std::printf(" %.1f |", time_us([&] { PK(pk::segmented_reduce(s, op, type, si.in, segs, si.off, si.out, o)); }));
      }
      std::printf("\n");
    };
    for (pk::reduce_op op : {pk::reduce_op::sum, pk::reduce_op::min, pk::reduce_op::max, pk::reduce_op::argmin,
                             pk::reduce_op::argmax})
      row(pk::to_string(op), op, dtype::f32);
    // A 16-bit type (its tiles hold fewer vectors a thread: reduction::split_unroll); the f32 data read as
    // bf16 halves, timed only.
    row("sum (bf16)", pk::reduce_op::sum, dtype::bf16);
  }
  std::printf("\n");
}

//! One call event-timed (time_us), the GPU time per call of `calls` calls enqueued back to back (the host's
//! enqueue hidden behind the GPU's work where it is shorter), and the host's time to enqueue one.
void call_breakdown(const std::function<void()>& f, int calls, double& one, double& gpu, double& host) {
  one = time_us(f);
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  CK(cudaDeviceSynchronize());
  CK(cudaEventRecord(a));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) f();
  const auto t1 = std::chrono::steady_clock::now();
  CK(cudaEventRecord(b));
  CK(cudaEventSynchronize(b));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, a, b));
  gpu = ms * 1000.0 / calls;
  host = std::chrono::duration<double, std::micro>(t1 - t0).count() / calls;
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
}

//! The segmented sums where the kernels take about 100 us: one call event-timed (the segmented table's
//! number, the host's enqueue before the launch included), back-to-back calls, and the host's enqueue, pk's plan
//! against CUB's.
void segmented_breakdown(pk::stream& s) {
  using pk::reduction::dtype;
  constexpr int calls = 50;
  segmented_input si;
  std::printf("### Segmented f32 sums of 2^26 elements: one call, back-to-back GPU time per call, host time to enqueue one (us)\n\n"
              "| segment length | pk one | pk back-to-back | pk host enqueue | CUB one | CUB back-to-back | CUB host enqueue |\n"
              "|---|---|---|---|---|---|---|\n");
  for (std::int64_t len : {std::int64_t{4096}, std::int64_t{65536}}) {
    const std::int64_t segs = si.segments_of(len);
    double p1, pg, ph, c1, cg, ch;
    call_breakdown([&] { PK(pk::segmented_reduce(s, pk::reduce_op::sum, dtype::f32, si.in, segs, si.off, si.out)); },
                   calls, p1, pg, ph);
    si.check("plan");
    call_breakdown([&] { si.cub_sum(); }, calls, c1, cg, ch);
    si.check("cub");
    std::printf("| %lld | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n", static_cast<long long>(len), p1, pg, ph, c1, cg, ch);
  }
  std::printf("\n");
}

// Where the time of a small sum goes: one call event-timed on its own (what the tables report), the GPU
// time per call of 200 calls enqueued back to back (events around all of them), and the host's time to
// enqueue one call (wall clock over the 200 enqueues, no synchronisation inside).
void small_breakdown(pk::stream& s) {
  using pk::reduction::dtype;
  constexpr int calls = 200;
  void *in, *out, *cub_tmp;
  const std::int64_t nmax = std::int64_t{1} << 20;
  CK(cudaMalloc(&in, nmax * 4));
  CK(cudaMalloc(&out, 64));
  std::size_t tb = 0;
  CK(cub::DeviceReduce::Sum(nullptr, tb, static_cast<const float*>(in), static_cast<float*>(out), nmax));
  CK(cudaMalloc(&cub_tmp, tb));
  fill(in, nmax, dtype::f32, 5);
  std::printf("### Small f32 sums: one call, back-to-back GPU time per call, host time to enqueue one (us)\n\n"
              "| n | pk one | pk back-to-back | pk host enqueue | CUB one | CUB back-to-back | CUB host enqueue |\n"
              "|---|---|---|---|---|---|---|\n");
  for (int lg : {10, 16, 20}) {
    const std::int64_t n = std::int64_t{1} << lg;
    double p1, pg, ph, c1, cg, ch;
    call_breakdown([&] { PK(pk::reduce(s, pk::reduce_op::sum, dtype::f32, in, n, out)); }, calls, p1, pg, ph);
    std::size_t b = tb;
    call_breakdown(
        [&] { CK(cub::DeviceReduce::Sum(cub_tmp, b, static_cast<const float*>(in), static_cast<float*>(out), n)); },
        calls, c1, cg, ch);
    std::printf("| 2^%d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n", lg, p1, pg, ph, c1, cg, ch);
  }
  std::printf("\n");
  CK(cudaFree(in));
  CK(cudaFree(out));
  CK(cudaFree(cub_tmp));
}

void rows_table(pk::stream& s, bool quick) {
  using pk::reduction::dtype;
  const std::int64_t elems = std::int64_t{1} << 25;  // 32M elements per shape (64 MiB bf16), as ANCHORS.md
  void *x, *y, *w, *b;
  float *mean, *rstd;
  CK(cudaMalloc(&x, elems * 4));
  CK(cudaMalloc(&y, elems * 4));
  CK(cudaMalloc(&w, (1 << 18) * 4));
  CK(cudaMalloc(&b, (1 << 18) * 4));
  CK(cudaMalloc(&mean, (elems / 1024) * 4));
  CK(cudaMalloc(&rstd, (elems / 1024) * 4));
  std::printf("## Row operations (GB/s counting input read + output write; row sum: input only)\n\n");
  std::printf("| op | type | rows x cols | us | GB/s | %% of copy | plan |\n|---|---|---|---|---|---|---|\n");
  std::vector<std::int64_t> widths = quick ? std::vector<std::int64_t>{1024, 16384, 262144}
                                           : std::vector<std::int64_t>{1024, 4096, 16384, 65536, 262144};
  std::string sweep;  // every row candidate forced, softmax and rms_norm: checks the planner's pick
  std::string seg_sweep;  // every per-segment candidate forced, row sum
  for (dtype t : {dtype::bf16, dtype::f32}) {
    const int eb = pk::reduction::size_of(t);
    fill(x, elems, t, 19);
    fill(w, 1 << 18, t, 23);
    fill(b, 1 << 18, t, 29);
    for (std::int64_t cols : widths) {
      const std::int64_t rows = elems / cols;
      pk::rows_desc r{t, x, y, rows, cols};
      pk::norm_args n;
      n.rows = r;
      n.weight = w;
      n.bias = b;
      n.mean = mean;
      n.rstd = rstd;
      pk::norm_args rn = n;
      rn.bias = nullptr;
      rn.mean = nullptr;
      const double bytes = 2.0 * rows * cols * eb;
      const std::string plan =
          pk::reduction::plan_rows(s.device(), pk::reduction::row_op::softmax, rows, cols, eb).name;
      const auto row = [&](const char* op, double us, double by, const std::string& p) {
        const double gbps = by / us / 1e3;
        std::printf("| %s | %s | %lld x %lld | %.1f | %.0f | %.0f%% | %s |\n", op, pk::reduction::to_string(t),
                    static_cast<long long>(rows), static_cast<long long>(cols), us, gbps, 100.0 * gbps / copy_gbps,
                    p.c_str());
      };
      const auto plan_of = [&](pk::reduction::row_op op) {
        return pk::reduction::plan_rows(s.device(), op, rows, cols, eb).name;
      };
      row("softmax", time_us([&] { PK(pk::softmax(s, r)); }), bytes, plan);
      row("layer_norm", time_us([&] { PK(pk::layer_norm(s, n)); }), bytes, plan_of(pk::reduction::row_op::layer_norm));
      row("rms_norm", time_us([&] { PK(pk::rms_norm(s, rn)); }), bytes, plan_of(pk::reduction::row_op::rms_norm));
      pk::tensor_view iv;
      iv.data = x;
      iv.type = t;
      iv.rank = 2;
      iv.shape[0] = rows;
      iv.shape[1] = cols;
      iv.stride[0] = cols;
      iv.stride[1] = 1;
      pk::tensor_view ov;
      ov.data = y;
      ov.type = t;
      ov.rank = 1;
      ov.shape[0] = rows;
      ov.stride[0] = 1;
      const std::string splan = pk::reduction::plan_segmented(s.device(), rows, rows * cols, eb).name;
      row("row sum", time_us([&] { PK(pk::reduce_axis(s, pk::reduce_op::sum, iv, 1, ov)); }), bytes / 2, splan);
      {
        char line[160];
        std::snprintf(line, sizeof line, "| row sum | %s | %lld x %lld |", pk::reduction::to_string(t),
                      static_cast<long long>(rows), static_cast<long long>(cols));
        seg_sweep += line;
        for (const pk::reduction::segment_policy& p : pk::reduction::segment_candidates) {
          const std::string name = pk::reduction::name_of(p);
          pk::reduce_options o;
          o.policy = name.c_str();
          const double us = time_us([&] { PK(pk::reduce_axis(s, pk::reduce_op::sum, iv, 1, ov, o)); });
          std::snprintf(line, sizeof line, " %.1f%s |", us, name == splan ? " (plan)" : "");
          seg_sweep += line;
        }
        seg_sweep += "\n";
      }
      for (const char* op : {"softmax", "rms_norm"}) {
        char line[160];
        std::snprintf(line, sizeof line, "| %s | %s | %lld x %lld |", op, pk::reduction::to_string(t),
                      static_cast<long long>(rows), static_cast<long long>(cols));
        sweep += line;
        const pk::reduction::row_op rop =
            std::string(op) == "softmax" ? pk::reduction::row_op::softmax : pk::reduction::row_op::rms_norm;
        const pk::archdb::plan op_plan = pk::reduction::plan_rows(s.device(), rop, rows, cols, eb);
        for (const pk::reduction::row_policy& p : pk::reduction::row_candidates) {
          const std::string name = pk::reduction::name_of(p);
          const auto c = std::find_if(op_plan.all.begin(), op_plan.all.end(),
                                      [&](const pk::archdb::plan::considered& e) { return e.name == name; });
          if (c == op_plan.all.end() || !c->fits) {  // too wide to hold on chip, or not built for this type
            sweep += " - |";
            continue;
          }
          pk::rows_desc fr = r;
          fr.policy = name.c_str();
          pk::norm_args fn = rn;
          fn.rows.policy = name.c_str();
          const double us = std::string(op) == "softmax" ? time_us([&] { PK(pk::softmax(s, fr)); })
                                                         : time_us([&] { PK(pk::rms_norm(s, fn)); });
          std::snprintf(line, sizeof line, " %.1f%s |", us, name == op_plan.name ? " (plan)" : "");
          sweep += line;
        }
        sweep += "\n";
      }
    }
  }
  std::printf("\n### Every row candidate forced (us; '-': the plan says it does not fit: too wide to hold on chip, or not built for the type)\n\n| op | type | rows x cols |");
  for (const pk::reduction::row_policy& p : pk::reduction::row_candidates) std::printf(" %s |", pk::reduction::name_of(p).c_str());
  std::printf("\n|---|---|---|");
  for (std::size_t i = 0; i < pk::reduction::row_candidates.size(); ++i) std::printf("---|");
  std::printf("\n%s\n", sweep.c_str());
  std::printf("### Row sum with every per-segment candidate forced (us)\n\n| op | type | rows x cols |");
  for (const pk::reduction::segment_policy& p : pk::reduction::segment_candidates)
    std::printf(" %s |", pk::reduction::name_of(p).c_str());
  std::printf("\n|---|---|---|");
  for (std::size_t i = 0; i < pk::reduction::segment_candidates.size(); ++i) std::printf("---|");
  std::printf("\n%s\n", seg_sweep.c_str());
  CK(cudaFree(x));
  CK(cudaFree(y));
  CK(cudaFree(w));
  CK(cudaFree(b));
  CK(cudaFree(mean));
  CK(cudaFree(rstd));
}

// One call of every segmented candidate and of CUB on uniform segments of `len` f32 elements (2^26 in all), each
// result checked: a short, fixed sequence of launches for a profiler (`--segmented-once LEN` under ncu).
void segmented_once(pk::stream& s, std::int64_t len) {
  segmented_input si;
  const std::int64_t segs = si.segments_of(len);
  const pk::archdb::plan plan = pk::reduction::plan_segmented_reduce(s.device(), segs, pk::reduction::segmented_assumed_len, 4);
  for (const auto& c : plan.all) {
    if (!c.fits) continue;
    pk::reduce_options o;
    o.policy = c.name.c_str();
    PK(pk::segmented_reduce(s, pk::reduce_op::sum, pk::reduction::dtype::f32, si.in, segs, si.off, si.out, o));
    si.check(c.name.c_str());
    std::printf("%s: ok\n", c.name.c_str());
  }
  si.cub_sum();
  si.check("cub");
  std::printf("cub: ok\n");
}

// --stream-order: how the order in which blocks take their tiles bounds a read-only stream, pk's kernels aside. A
// plain f32 sum of 2^26 elements (tiles of B x U float4, one partial a warp by atomicAdd), each block either a
// contiguous chunk of tiles (the segmented split's order: `grid` streams far apart) or every grid-th tile (the
// device-wide sum's order: the blocks' tiles in flight are neighbours). The grid is blocks_per_sm x SMs (resident
// at once), so that the split's 5 blocks of 128 threads a SM can be compared with more and fewer streams. The sum
// is not checked: the kernel is there to time a read of the input.
template <int B, int U, bool Chunked>
__global__ void __launch_bounds__(B) stream_order_kernel(const float4* in, std::int64_t ntiles, float* out) {
  const std::int64_t grid = gridDim.x, k = blockIdx.x;
  const std::int64_t per = (ntiles + grid - 1) / grid;
  const std::int64_t first = Chunked ? k * per : k, step = Chunked ? 1 : grid;
  const std::int64_t last = Chunked ? (first + per < ntiles ? first + per : ntiles) : ntiles;
  float acc = 0.0f;
  for (std::int64_t ti = first; ti < last; ti += step) {
    const float4* p = in + ti * (B * U) + threadIdx.x;
    float4 x[U];
#pragma unroll
    for (int u = 0; u < U; ++u) x[u] = p[u * B];
#pragma unroll
    for (int u = 0; u < U; ++u) acc += (x[u].x + x[u].y) + (x[u].z + x[u].w);
  }
  for (int o = 16; o > 0; o /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (threadIdx.x % 32 == 0) atomicAdd(out, acc);
}

template <int B, int U>
void stream_order_row(const float4* in, std::int64_t nvec, float* out, int sms, int per_sm) {
  const std::int64_t ntiles = nvec / (B * U);
  const unsigned grid = static_cast<unsigned>(sms * per_sm);
  int fit_c = 0, fit_s = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit_c, stream_order_kernel<B, U, true>, B, 0));
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit_s, stream_order_kernel<B, U, false>, B, 0));
  if (per_sm > fit_c || per_sm > fit_s) {
    std::printf("| %d x %d | %d | - | - | (%d blocks a SM fit) |\n", B, U, per_sm, fit_c < fit_s ? fit_c : fit_s);
    return;
  }
  const double c = time_us([&] { stream_order_kernel<B, U, true><<<grid, B>>>(in, ntiles, out); });
  const double g = time_us([&] { stream_order_kernel<B, U, false><<<grid, B>>>(in, ntiles, out); });
  const double bytes = static_cast<double>(nvec) * 16;
  std::printf("| %d x %d | %d | %.1f (%.0f%%) | %.1f (%.0f%%) | %.2f |\n", B, U, per_sm, c, 100.0 * bytes / c / 1e3 / copy_gbps,
              g, 100.0 * bytes / g / 1e3 / copy_gbps, c / g);
}

void stream_order_table() {
  const std::int64_t n = std::int64_t{1} << 26;
  void* in = nullptr;
  float* out = nullptr;
  CK(cudaMalloc(&in, n * 4));
  CK(cudaMalloc(&out, 4));
  fill(in, n, pk::reduction::dtype::f32, 11);
  int dev = 0, sms = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  std::printf("## Stream order: a plain f32 sum of 2^26 elements, chunked against grid-strided tiles\n\n"
              "us (of the copy roofline); grid = blocks a SM x %d SMs\n\n"
              "| threads x float4 | blocks a SM | chunked | grid-strided | chunked / strided |\n|---|---|---|---|---|\n", sms);
  const std::int64_t nvec = n / 4;
  const auto* v = static_cast<const float4*>(in);
  for (int per_sm : {1, 2, 5, 8, 16}) stream_order_row<128, 8>(v, nvec, out, sms, per_sm);
  for (int per_sm : {1, 2, 4}) stream_order_row<256, 8>(v, nvec, out, sms, per_sm);
  for (int per_sm : {1, 2}) stream_order_row<1024, 4>(v, nvec, out, sms, per_sm);
  CK(cudaFree(in));
  CK(cudaFree(out));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 2 && std::strcmp(argv[1], "--segmented-once") == 0) {
    pk::stream s;
    PK(pk::stream::cuda(nullptr, 0, s));
    segmented_once(s, std::atoll(argv[2]));
    return 0;
  }
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const bool only_segmented = argc > 1 && std::strcmp(argv[1], "--segmented") == 0;
  const bool only_rows = argc > 1 && std::strcmp(argv[1], "--rows") == 0;
  const bool only_order = argc > 1 && std::strcmp(argv[1], "--stream-order") == 0;
  if (quick) reps = 10;
  pk::stream s;
  PK(pk::stream::cuda(nullptr, 0, s));
  std::printf("# pk reductions on %s (median of %d event-timed runs after %d warm-ups)\n\n", s.describe().c_str(), reps,
              warmup);
  const pk::archdb::plan p = pk::reduction::plan_reduce(s.device(), std::int64_t{1} << 28, 4);
  std::printf("plan_reduce(2^28 f32): %s\n\n", p.why.c_str());
  measure_copy();
  if (only_order) {
    stream_order_table();
    return 0;
  }
  if (only_segmented) {
    segmented_table(s);
    segmented_breakdown(s);
    small_breakdown(s);
    return 0;
  }
  if (only_rows) {
    rows_table(s, false);
    return 0;
  }
  device_reduce_tables(s, quick);
  segmented_table(s);
  rows_table(s, quick);
  return 0;
}

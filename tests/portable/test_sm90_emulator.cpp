// The emulator's sm_90a machinery against the PTX ISA: wgmma through shared-memory descriptors in every
// canonical layout (and A in registers), tensor copies (tiled, swizzled, out-of-bounds fill), mbarrier
// phases and transaction bytes, named barriers, and the errors that replace hangs and divergence.
// Kernels are launched straight through pk::backend::host::launch. The shared-memory images are laid
// out here from the ISA's description of swizzle atoms (8 rows of the swizzle span; the 16-byte chunk
// index within the span XORed with the 128-byte line index), independently of the emulator's descriptor decoding; references are in
// double with inputs chosen so that the fp32 results are exact.
#include "../common/backends.hpp"

#include <pk/backend/host/launch.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

namespace h = pk::backend::host;

constexpr std::int64_t smem_limit = 227 * 1024;  // H100/H200 per-block opt-in limit

h::launch_config config(unsigned threads, std::size_t dynamic_smem) {
  h::launch_config c;
  c.grid = {1, 1, 1};
  c.block = {threads, 1, 1};
  c.dynamic_smem = dynamic_smem;
  c.warp_size = 32;
  c.smem_limit_per_block = smem_limit;
  c.max_threads_per_block = 1024;
  c.kernel_name = "sm90_test";
  return c;
}

int tid() { return h::current_thread->linear_tid; }
std::byte* smem() { return static_cast<std::byte*>(h::shared_dynamic()); }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The swizzle of a shared-memory byte offset (1024-byte aligned base): span S in {32, 64, 128}: the
// 16-byte chunk index within each S-byte row is XORed with the row index (mod S/16) of the 128-byte lines.
std::uint32_t swizzled(std::uint32_t off, int span) {
  if (span == 0) return off;
  const std::uint32_t chunks = static_cast<std::uint32_t>(span / 16);
  const std::uint32_t line = (off / 128) % chunks;
  const std::uint32_t chunk = (off / 16) % chunks;
  return off - chunk * 16 + ((chunk ^ line) * 16);
}

// 16-bit encodings of values exactly representable in them.
std::uint16_t to_bf16(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return static_cast<std::uint16_t>(b >> 16);
}
std::uint16_t to_fp16(float f) {
  if (f == 0.0f) return 0;
  const std::uint16_t sign = f < 0 ? 0x8000 : 0;
  int ex;
  const float m = std::frexp(std::fabs(f), &ex);  // |f| = m 2^ex, m in [0.5, 1)
  const auto mant = static_cast<std::uint16_t>(std::lround((m * 2.0f - 1.0f) * 1024.0f));
  return static_cast<std::uint16_t>(sign | ((ex - 1 + 15) << 10) | mant);
}

// ---------------------------------------------------------------------------------------------
// Operand tiles in shared memory, laid out as the ISA describes the canonical layouts.

struct tile_layout {
  bool mn_major = false;
  int span = 128;  // swizzle span in bytes; 0 = no swizzle (interleaved core matrices)
};

std::string name(const tile_layout& l) {
  return std::string(l.mn_major ? "MN" : "K") + "-major " + (l.span ? std::to_string(l.span) + "B" : "none");
}

// A rows x k_total operand (rows = M or N) in one region: byte offsets (before the swizzle) of element
// (i, k), and the LBO/SBO the descriptor must carry.
struct operand_tile {
  tile_layout l;
  int rows = 0, k_total = 0;
  std::uint32_t lbo = 0, sbo = 0;

  operand_tile(tile_layout layout, int r, int k) : l(layout), rows(r), k_total(k) {
    const auto s = static_cast<std::uint32_t>(l.span);
    if (!l.mn_major) {
      if (s) {
        sbo = 8 * s;  // 8 rows of one swizzle atom
        lbo = 0x2340;  // not used by swizzled K-major layouts (the ISA: "assumed to be 1"): any value
      } else {
        lbo = 128;                                      // K-adjacent core matrices (8 rows x 16 bytes)
        sbo = static_cast<std::uint32_t>(k_total / 8) * 128;  // next 8 rows after all K core matrices
      }
    } else {
      if (s) {
        sbo = 8 * s;                                         // the next 8 K rows of an atom column
        lbo = static_cast<std::uint32_t>(k_total) * s;       // the next S/2 MN elements (next atom column)
      } else {
        sbo = 128;                                          // MN-adjacent core matrices (8 K rows x 8 MN)
        lbo = static_cast<std::uint32_t>(rows / 8) * 128;   // next 8 K after all MN core matrices
      }
    }
  }
  // Bytes the tile spans: whole swizzle atoms (a K-major atom row is the full span even when K is shorter).
  std::uint32_t bytes() const {
    const int per_row = l.span / 2;
    if (l.span == 0) return static_cast<std::uint32_t>(rows * k_total * 2);
    if (!l.mn_major) return static_cast<std::uint32_t>((k_total + per_row - 1) / per_row * rows * l.span);
    return static_cast<std::uint32_t>((rows + per_row - 1) / per_row * k_total * l.span);
  }
  // Offset of element (i, k) before the swizzle.
  std::uint32_t offset(int i, int k) const {
    const auto s = static_cast<std::uint32_t>(l.span);
    const auto ui = static_cast<std::uint32_t>(i), uk = static_cast<std::uint32_t>(k);
    if (!l.mn_major) {
      if (s) {
        // K blocks of S/2 elements, each a column of swizzle atoms: rows at S bytes.
        const std::uint32_t per_row = s / 2;
        return (uk / per_row) * static_cast<std::uint32_t>(rows) * s + ui * s + (uk % per_row) * 2;
      }
      return (ui / 8) * sbo + (ui % 8) * 16 + (uk / 8) * lbo + (uk % 8) * 2;
    }
    if (s) {
      // MN blocks of S/2 elements, each holding every K row at S bytes.
      const std::uint32_t per_row = s / 2;
      return (ui / per_row) * lbo + uk * s + (ui % per_row) * 2;
    }
    return (ui / 8) * sbo + (ui % 8) * 2 + (uk / 8) * lbo + (uk % 8) * 16;
  }
  // Descriptor for the 64-or-N x 16 slice starting at (i0, k0) of a tile at shared offset `base`.
  std::uint64_t desc(std::uint32_t base, int i0, int k0) const {
    const std::uint32_t start = base + offset(i0, k0);
    const std::uint64_t code = l.span == 0 ? 0 : l.span == 128 ? 1 : l.span == 64 ? 2 : 3;
    return (std::uint64_t{start >> 4} & 0x3FFF) | ((std::uint64_t{lbo >> 4} & 0x3FFF) << 16) |
           ((std::uint64_t{sbo >> 4} & 0x3FFF) << 32) | (code << 62);
  }
  // Writes element (i, k) with bits `v` into a shared-memory image whose tile starts at `base`.
  void put(std::vector<std::byte>& image, std::uint32_t base, int i, int k, std::uint16_t v) const {
    const std::uint32_t a = swizzled(base + offset(i, k), l.span);
    std::memcpy(image.data() + a, &v, sizeof v);
  }
};

// Small multiples of 1/8: products and K-long sums are exact in fp32 for both bf16 and fp16.
std::vector<float> random_matrix(std::mt19937_64& rng, std::size_t n) {
  std::uniform_int_distribution<int> d(-16, 16);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(d(rng)) / 8.0f;
  return v;
}

struct gemm_case {
  bool bf16 = true;
  int n = 64;
  int ksteps = 1;
  int warpgroups = 1;
  bool a_in_registers = false;
  tile_layout a, b;
  bool overwrite = false;  //!< every step with accumulate = false: D is the last step's product only
};

// Runs ksteps wgmma per warpgroup (warpgroup g computes rows [64 g, 64 g + 64)) and checks D exactly
// against a double-precision reference.
void run_gemm(const gemm_case& c, std::uint64_t seed) {
  const int m = 64 * c.warpgroups, n = c.n, k_total = 16 * c.ksteps;
  std::mt19937_64 rng(seed);
  const std::vector<float> a = random_matrix(rng, static_cast<std::size_t>(m) * k_total);  // [m][k]
  const std::vector<float> b = random_matrix(rng, static_cast<std::size_t>(n) * k_total);  // [n][k]
  auto enc = [&](float f) { return c.bf16 ? to_bf16(f) : to_fp16(f); };

  const operand_tile ta(c.a, m, k_total), tb(c.b, n, k_total);
  const std::uint32_t a_base = 0;
  const std::uint32_t b_base = (ta.bytes() + 1023) / 1024 * 1024;
  const std::uint32_t total = b_base + tb.bytes();
  ASSERT_LE(total, static_cast<std::uint32_t>(smem_limit));
  std::vector<std::byte> image(total, std::byte{0xEE});
  if (!c.a_in_registers)
    for (int i = 0; i < m; ++i)
      for (int k = 0; k < k_total; ++k) ta.put(image, a_base, i, k, enc(a[static_cast<std::size_t>(i) * k_total + k]));
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < k_total; ++k) tb.put(image, b_base, i, k, enc(b[static_cast<std::size_t>(i) * k_total + k]));

  std::vector<float> out(static_cast<std::size_t>(m) * n, std::numeric_limits<float>::quiet_NaN());
  const auto threads = static_cast<unsigned>(128 * c.warpgroups);
  const pk::status st = h::launch(config(threads, total), [&] {
    const int t = tid();
    if (t == 0) std::memcpy(smem(), image.data(), image.size());
    h::block_sync(h::call_site::current());
    const int g = t / 128, w = (t % 128) / 32, l = t % 32;
    float d[128];
    for (float& x : d) x = std::numeric_limits<float>::quiet_NaN();  // accumulate=false must overwrite
    for (int s = 0; s < c.ksteps; ++s) {
      h::wgmma_op op;
      op.n = n;
      op.bf16 = c.bf16;
      op.a_in_registers = c.a_in_registers;
      op.a_mn_major = c.a.mn_major;
      op.b_mn_major = c.b.mn_major;
      op.accumulate = !c.overwrite && s > 0;
      op.b_desc = tb.desc(b_base, 0, 16 * s);
      std::uint32_t regs[4];
      if (c.a_in_registers) {
        // A fragment (PTX wgmma register layout for 16-bit A): value v -> row 16 w + l/4 + 8 ((v/2)%2),
        // k = 2 (l%4) + v%2 + 8 (v/4).
        for (int r = 0; r < 4; ++r) regs[r] = 0;
        for (int v = 0; v < 8; ++v) {
          const int row = 64 * g + 16 * w + l / 4 + 8 * ((v / 2) % 2);
          const int k = 16 * s + 2 * (l % 4) + v % 2 + 8 * (v / 4);
          regs[v / 2] |= std::uint32_t{enc(a[static_cast<std::size_t>(row) * k_total + k])} << (16 * (v % 2));
        }
        op.a_regs = regs;
      } else {
        op.a_desc = ta.desc(a_base, 64 * g, 16 * s);
      }
      op.d = d;
      h::wgmma(op, h::call_site::current());
    }
    // Accumulator layout: value i = 4 j + r -> row 16 w + l/4 + 8 (r/2), column 8 j + 2 (l%4) + r%2.
    for (int i = 0; i < n / 2; ++i) {
      const int j = i / 4, r = i % 4;
      const int row = 64 * g + 16 * w + l / 4 + 8 * (r / 2);
      const int col = 8 * j + 2 * (l % 4) + r % 2;
      out[static_cast<std::size_t>(row) * n + col] = d[i];
    }
  });
  ASSERT_TRUE(st) << st.to_string();
  const int k_first = c.overwrite ? k_total - 16 : 0;
  int bad = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double ref = 0;
      for (int k = k_first; k < k_total; ++k)
        ref += double{a[static_cast<std::size_t>(i) * k_total + k]} * double{b[static_cast<std::size_t>(j) * k_total + k]};
      const float got = out[static_cast<std::size_t>(i) * n + j];
      if (static_cast<double>(got) != ref && ++bad <= 5)
        ADD_FAILURE() << "D[" << i << "][" << j << "] = " << got << ", reference " << ref;
    }
  EXPECT_EQ(bad, 0) << "of " << m * n << " accumulators differ";
}

class Sm90Emulator : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = h::options();
    h::options().poison_shared = true;
  }
  void TearDown() override { h::options() = saved_; }
  h::emulator_options saved_;
};

// ---------------------------------------------------------------------------------------------
// wgmma

TEST_F(Sm90Emulator, WgmmaSharedOperandsKMajor128BSwizzle) {
  const std::uint64_t seed = pk::test::seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  // K = 128: two swizzle atoms along K (the second at +rows*128 bytes), four k16 steps inside each
  // (start address + 32 bytes per step); two warpgroups (A rows 64..127 at +8 SBO).
  for (int n : {8, 64, 128, 256}) {
    SCOPED_TRACE("N " + std::to_string(n));
    gemm_case c;
    c.n = n;
    c.ksteps = 8;
    c.warpgroups = 2;
    c.a = {false, 128};
    c.b = {false, 128};
    run_gemm(c, seed + static_cast<std::uint64_t>(n));
  }
}

TEST_F(Sm90Emulator, WgmmaRegisterAWithMNMajor128BSwizzleB) {
  const std::uint64_t seed = pk::test::seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  // B stored [k][n] (N contiguous) in 64-column chunks: LBO = the chunk stride, SBO = 1024 (8 K rows).
  for (int n : {64, 128, 256}) {
    for (bool bf16 : {false, true}) {
      SCOPED_TRACE("N " + std::to_string(n) + (bf16 ? " bf16" : " fp16"));
      gemm_case c;
      c.bf16 = bf16;
      c.n = n;
      c.ksteps = 4;
      c.a_in_registers = true;
      c.b = {true, 128};
      run_gemm(c, seed + static_cast<std::uint64_t>(n));
    }
  }
}

TEST_F(Sm90Emulator, WgmmaEveryCanonicalLayout) {
  const std::uint64_t seed = pk::test::seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (bool a_mn : {false, true})
    for (int a_span : {0, 32, 64, 128})
      for (bool b_mn : {false, true})
        for (int b_span : {0, 32, 64, 128}) {
          gemm_case c;
          c.bf16 = (a_span + b_span) % 64 == 0;  // both input types along the way
          c.n = 64;
          c.ksteps = 2;
          c.a = {a_mn, a_span};
          c.b = {b_mn, b_span};
          SCOPED_TRACE("A " + name(c.a) + ", B " + name(c.b));
          run_gemm(c, seed + static_cast<std::uint64_t>(a_span * 7 + b_span + (a_mn ? 1000 : 0) + (b_mn ? 3000 : 0)));
        }
}

TEST_F(Sm90Emulator, WgmmaWithoutAccumulateOverwrites) {
  const std::uint64_t seed = pk::test::seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  gemm_case c;
  c.n = 32;
  c.ksteps = 3;
  c.overwrite = true;
  c.a = {false, 64};
  c.b = {true, 0};
  run_gemm(c, seed);
}

TEST_F(Sm90Emulator, WgmmaOperandOutsideSharedMemoryIsAnError) {
  const pk::status st = h::launch(config(128, 1024), [&] {
    float d[4] = {};
    h::wgmma_op op;
    op.n = 8;
    // Start just below the end of the window: rows beyond it fall outside.
    const std::uint64_t start = static_cast<std::uint64_t>(smem_limit - 512);
    op.a_desc = (start >> 4) | (std::uint64_t{1024 >> 4} << 32) | (std::uint64_t{1} << 62);
    op.b_desc = op.a_desc;
    op.d = d;
    h::wgmma(op, h::call_site::current());
  });
  ASSERT_EQ(st.code(), pk::errc::emulation_error) << st.to_string();
  EXPECT_TRUE(contains(st.message(), "outside the block's shared memory")) << st.message();
}

// ---------------------------------------------------------------------------------------------
// Warpgroup collectives: divergence and block shape.

TEST_F(Sm90Emulator, WarpgroupDivergenceIsReported) {
  const pk::status st = h::launch(config(128, 0), [&] {
    float d[4] = {};
    h::wgmma_op op;
    op.n = 8;
    op.d = d;
    if (tid() < 64)
      h::wgmma(op, h::call_site::current("first half"));
    else
      h::set_max_registers(240, h::call_site::current("second half"));
  });
  ASSERT_EQ(st.code(), pk::errc::emulation_error) << st.to_string();
  const std::string& msg = st.message();
  EXPECT_TRUE(contains(msg, "warpgroup 0")) << msg;
  EXPECT_TRUE(contains(msg, "divergent wgmma")) << msg;
  EXPECT_TRUE(contains(msg, "threads 0-63 arrived")) << msg;
  EXPECT_TRUE(contains(msg, "threads 64-127 wait at setmaxnreg")) << msg;
  EXPECT_TRUE(contains(msg, "test_sm90_emulator.cpp:")) << msg;
}

TEST_F(Sm90Emulator, WarpgroupWithExitedThreadsIsReported) {
  const pk::status st = h::launch(config(128, 0), [&] {
    if (tid() < 96) h::set_max_registers(232, h::call_site::current());
  });
  ASSERT_EQ(st.code(), pk::errc::emulation_error) << st.to_string();
  EXPECT_TRUE(contains(st.message(), "threads 96-127 have exited")) << st.message();
}

TEST_F(Sm90Emulator, WarpgroupNeedsWholeWarpgroups) {
  const pk::status st = h::launch(config(96, 0), [&] { h::set_max_registers(240, h::call_site::current()); });
  ASSERT_EQ(st.code(), pk::errc::emulation_error) << st.to_string();
  EXPECT_TRUE(contains(st.message(), "multiple of 128 threads")) << st.message();
}

TEST_F(Sm90Emulator, SetMaxRegistersChecksTheCount) {
  EXPECT_TRUE(h::launch(config(256, 0), [&] {
    h::set_max_registers(tid() < 128 ? 40 : 232, h::call_site::current());
  }));
  const pk::status st = h::launch(config(128, 0), [&] { h::set_max_registers(100, h::call_site::current()); });
  ASSERT_EQ(st.code(), pk::errc::emulation_error) << st.to_string();
  EXPECT_TRUE(contains(st.message(), "multiple of 8 in [24, 256]")) << st.message();
}

// ---------------------------------------------------------------------------------------------
// Tensor copies

struct tma_case {
  h::tma_map map;
  std::vector<std::int32_t> coords;
  std::uint32_t dst = 0;  // shared offset
};

// Expected shared-memory image of one copy: box element at linear index e (dimension 0 fastest) at
// swizzled(dst + e * elem_bytes), zero when any coordinate is outside the tensor.
void expect_box(const std::vector<std::byte>& got, const tma_case& c, const std::vector<std::uint16_t>& global) {
  const h::tma_map& m = c.map;
  std::uint64_t count = 1;
  for (int i = 0; i < m.rank; ++i) count *= m.box[i];
  int bad = 0;
  for (std::uint64_t e = 0; e < count; ++e) {
    std::uint64_t rest = e, src = 0;
    bool inside = true;
    for (int i = 0; i < m.rank; ++i) {
      const std::int64_t x = c.coords[static_cast<std::size_t>(i)] + static_cast<std::int64_t>(rest % m.box[i]);
      rest /= m.box[i];
      if (x < 0 || x >= static_cast<std::int64_t>(m.dims[i])) inside = false;
      else src += static_cast<std::uint64_t>(x) * m.strides[i];
    }
    const std::uint16_t want = inside ? global[src / 2] : std::uint16_t{0};
    std::uint16_t have;
    const int span = m.swizzle == h::swizzle_mode::none ? 0 : 16 << static_cast<int>(m.swizzle);
    std::memcpy(&have, got.data() + swizzled(c.dst + static_cast<std::uint32_t>(e * 2), span), 2);
    if (have != want && ++bad <= 5) ADD_FAILURE() << "box element " << e << ": " << have << ", expected " << want;
  }
  EXPECT_EQ(bad, 0);
}

// Issues every copy on one mbarrier (one arrival with the total bytes), waits, returns shared memory.
std::vector<std::byte> run_copies(const std::vector<tma_case>& cases, std::uint32_t smem_bytes, pk::status& st) {
  std::vector<std::byte> got(smem_bytes);
  std::uint32_t total = 0;
  for (const auto& c : cases) {
    std::uint32_t b = 2;
    for (int i = 0; i < c.map.rank; ++i) b *= c.map.box[i];
    total += b;
  }
  st = h::launch(config(64, smem_bytes + 64), [&] {
    auto* bar = reinterpret_cast<h::mbarrier_state*>(smem() + smem_bytes);
    if (tid() == 0) h::mbarrier_init(bar, 1, h::call_site::current());
    h::block_sync(h::call_site::current());
    if (tid() == 0) {
      h::mbarrier_arrive(bar, total, h::call_site::current());
      for (const auto& c : cases) h::tma_load(&c.map, smem() + c.dst, bar, c.coords.data(), h::call_site::current());
    }
    h::mbarrier_wait(bar, 0, h::call_site::current());
    if (tid() == 0) std::memcpy(got.data(), smem(), smem_bytes);
  });
  return got;
}

std::vector<std::uint16_t> random_global(std::mt19937_64& rng, std::size_t n) {
  std::uniform_int_distribution<int> d(1, 65535);  // never zero: out-of-bounds zeros stand out
  std::vector<std::uint16_t> v(n);
  for (auto& x : v) x = static_cast<std::uint16_t>(d(rng));
  return v;
}

TEST_F(Sm90Emulator, TensorCopy2DSwizzle128WithOutOfBoundsFill) {
  const std::uint64_t seed = pk::test::seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  // A 50 x 200 bf16 matrix with a padded row pitch (208 elements = 416 bytes).
  const std::vector<std::uint16_t> global = random_global(rng, 50 * 208);
  h::tma_map m;
  m.base = global.data();
  m.rank = 2;
  m.elem_bytes = 2;
  m.dims[0] = 200;
  m.dims[1] = 50;
  m.strides[0] = 2;
  m.strides[1] = 416;
  m.box[0] = 64;
  m.box[1] = 16;
  m.swizzle = h::swizzle_mode::b128;
  const std::vector<tma_case> cases = {
      {m, {0, 0}, 0}, {m, {150, 40}, 2048}, {m, {-8, -3}, 4096}, {m, {-70, 60}, 6144}};
  pk::status st;
  const std::vector<std::byte> got = run_copies(cases, 8192, st);
  ASSERT_TRUE(st) << st.to_string();
  for (const auto& c : cases) {
    SCOPED_TRACE("coords " + std::to_string(c.coords[0]) + "," + std::to_string(c.coords[1]));
    expect_box(got, c, global);
  }
}

TEST_F(Sm90Emulator, TensorCopy4DWithOutOfBoundsFill) {
  const std::uint64_t seed = pk::test::seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  // dims (24, 5, 4, 3), padded pitches: 64, 336, 1360 bytes.
  const std::vector<std::uint16_t> global = random_global(rng, 1360 / 2 * 3);
  h::tma_map m;
  m.base = global.data();
  m.rank = 4;
  m.elem_bytes = 2;
  const std::uint64_t dims[4] = {24, 5, 4, 3}, strides[4] = {2, 64, 336, 1360};
  const std::uint32_t box[4] = {16, 2, 3, 2};
  for (int i = 0; i < 4; ++i) {
    m.dims[i] = dims[i];
    m.strides[i] = strides[i];
    m.box[i] = box[i];
  }
  m.swizzle = h::swizzle_mode::b32;
  h::tma_map plain = m;
  plain.swizzle = h::swizzle_mode::none;
  h::tma_map wide = m;
  wide.box[0] = 32;
  wide.swizzle = h::swizzle_mode::b64;
  const std::vector<tma_case> cases = {{m, {-4, 4, 2, -1}, 0},
                                       {plain, {16, 0, 0, 1}, 512},
                                       {m, {0, 1, 1, 1}, 1024},
                                       {wide, {-8, 3, 3, 2}, 1536}};
  pk::status st;
  const std::vector<std::byte> got = run_copies(cases, 4096, st);
  ASSERT_TRUE(st) << st.to_string();
  for (const auto& c : cases) {
    SCOPED_TRACE("copy to " + std::to_string(c.dst));
    expect_box(got, c, global);
  }
}

TEST_F(Sm90Emulator, TensorCopyChecksAlignmentAndBox) {
  std::vector<std::uint16_t> global(64 * 64, 1);
  h::tma_map m;
  m.base = global.data();
  m.rank = 2;
  m.elem_bytes = 2;
  m.dims[0] = m.dims[1] = 64;
  m.strides[0] = 2;
  m.strides[1] = 128;
  m.box[0] = 64;
  m.box[1] = 8;
  m.swizzle = h::swizzle_mode::b128;
  pk::status st;
  run_copies({{m, {0, 0}, 512}}, 4096, st);  // 128-byte swizzle needs 1024-byte alignment
  ASSERT_EQ(st.code(), pk::errc::emulation_error) << st.to_string();
  EXPECT_TRUE(contains(st.message(), "1024-byte aligned")) << st.message();
  h::tma_map narrow = m;
  narrow.swizzle = h::swizzle_mode::b64;  // a 128-byte row does not fit the 64-byte span
  run_copies({{narrow, {0, 0}, 0}}, 4096, st);
  ASSERT_EQ(st.code(), pk::errc::emulation_error) << st.to_string();
  EXPECT_TRUE(contains(st.message(), "64-byte swizzle span")) << st.message();
}

// ---------------------------------------------------------------------------------------------
// mbarriers

// Producer/consumer over one stage: warp 0 lane 0 announces the bytes and copies a 64 x 16 tile, lane 1
// is the phase's second arrival; warps 1-2 consume and release the stage (64 arrivals).
struct pipeline_result {
  pk::status st;
  std::vector<std::byte> seen;  // rounds x 2048 bytes of the stage as the consumers saw it
  std::uint32_t full_phase = 0, empty_phase = 0;
};

pipeline_result run_pipeline(int rounds, const std::vector<std::uint16_t>& global, std::uint32_t extra_tx,
                             h::call_site* consumer_wait = nullptr) {
  pipeline_result r;
  r.seen.assign(static_cast<std::size_t>(rounds) * 2048, std::byte{0});
  h::tma_map m;
  m.base = global.data();
  m.rank = 2;
  m.elem_bytes = 2;
  m.dims[0] = 64;
  m.dims[1] = static_cast<std::uint64_t>(16 * rounds);
  m.strides[0] = 2;
  m.strides[1] = 128;
  m.box[0] = 64;
  m.box[1] = 16;
  m.swizzle = h::swizzle_mode::b128;
  const h::call_site wait_site = h::call_site::current("consumer wait");
  if (consumer_wait) *consumer_wait = wait_site;
  r.st = h::launch(config(96, 4096 + 64), [&] {
    auto* full = reinterpret_cast<h::mbarrier_state*>(smem() + 4096);
    auto* empty = full + 1;
    const int t = tid();
    if (t == 0) {
      h::mbarrier_init(full, 2, h::call_site::current());
      h::mbarrier_init(empty, 64, h::call_site::current());
    }
    h::block_sync(h::call_site::current());
    if (t == 0) {
      for (int i = 0; i < rounds; ++i) {
        h::mbarrier_wait(empty, (i & 1) ^ 1, h::call_site::current("producer wait"));
        h::mbarrier_arrive(full, 2048 + extra_tx, h::call_site::current());
        const std::int32_t c[2] = {0, 16 * i};
        h::tma_load(&m, smem(), full, c, h::call_site::current());
      }
      h::mbarrier_wait(empty, (rounds - 1) & 1, h::call_site::current("last release"));
      r.full_phase = full->phase;
      r.empty_phase = empty->phase;
    } else if (t == 1) {
      for (int i = 0; i < rounds; ++i) {
        h::mbarrier_wait(empty, (i & 1) ^ 1, h::call_site::current("second producer wait"));
        h::mbarrier_arrive(full, 0, h::call_site::current());
      }
    } else if (t >= 32) {
      const int c = t - 32;
      for (int i = 0; i < rounds; ++i) {
        h::mbarrier_wait(full, i & 1, wait_site);
        std::memcpy(r.seen.data() + static_cast<std::size_t>(i) * 2048 + c * 32, smem() + c * 32, 32);
        h::mbarrier_arrive(empty, 0, h::call_site::current());
      }
    }
  });
  return r;
}

TEST_F(Sm90Emulator, MbarrierPhasesWithTwoArrivalsAndTransactionBytes) {
  const std::uint64_t seed = pk::test::seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  constexpr int rounds = 6;
  const std::vector<std::uint16_t> global = random_global(rng, 64 * 16 * rounds);
  const pipeline_result r = run_pipeline(rounds, global, 0);
  ASSERT_TRUE(r.st) << r.st.to_string();
  EXPECT_EQ(r.full_phase, static_cast<std::uint32_t>(rounds));
  EXPECT_EQ(r.empty_phase, static_cast<std::uint32_t>(rounds));
  int bad = 0;
  for (int i = 0; i < rounds; ++i)
    for (int row = 0; row < 16; ++row)
      for (int col = 0; col < 64; ++col) {
        std::uint16_t have;
        const std::uint32_t off = swizzled(static_cast<std::uint32_t>(row * 128 + col * 2), 128);
        std::memcpy(&have, r.seen.data() + static_cast<std::size_t>(i) * 2048 + off, 2);
        const std::uint16_t want = global[static_cast<std::size_t>(16 * i + row) * 64 + col];
        if (have != want && ++bad <= 5) ADD_FAILURE() << "round " << i << " (" << row << "," << col << ")";
      }
  EXPECT_EQ(bad, 0);
}

TEST_F(Sm90Emulator, WrongExpectTxIsReportedWithPendingBytes) {
  std::vector<std::uint16_t> global(64 * 16 * 2, 7);
  h::call_site wait_site;
  const pipeline_result r = run_pipeline(2, global, 16, &wait_site);
  ASSERT_EQ(r.st.code(), pk::errc::emulation_error) << r.st.to_string();
  const std::string& msg = r.st.message();
  EXPECT_TRUE(contains(msg, "deadlock")) << msg;
  EXPECT_TRUE(contains(msg, "mbarrier at shared offset 4096")) << msg;
  EXPECT_TRUE(contains(msg, "pending tx bytes 16")) << msg;
  EXPECT_TRUE(contains(msg, "pending arrivals 0")) << msg;
  EXPECT_TRUE(contains(msg, "expected arrivals 2")) << msg;
  EXPECT_TRUE(contains(msg, "threads 32-95 wait at")) << msg;
  EXPECT_TRUE(contains(msg, "parity 0")) << msg;
  EXPECT_TRUE(contains(msg, "test_sm90_emulator.cpp:" + std::to_string(wait_site.line))) << msg;
}

// The block's shared memory is what the launch gave it, not the device's per-block limit (the emulator's arena): a
// barrier placed past it and a plain store past it are errors naming the offset, as they would touch another block's
// memory (or fault) on a GPU; the last byte inside is fine, and a read past it reads NaN (the guard band's bytes).
TEST_F(Sm90Emulator, SharedMemoryPastTheLaunchIsAnError) {
  constexpr std::size_t bytes = 256;
  pk::status st = h::launch(config(32, bytes), [&] {
    if (tid() == 0) h::mbarrier_init(reinterpret_cast<h::mbarrier_state*>(smem() + bytes), 1, h::call_site::current());
  });
  ASSERT_EQ(st.code(), pk::errc::emulation_error) << st.to_string();
  EXPECT_TRUE(contains(st.message(), "not inside the block's shared memory")) << st.message();
  st = h::launch(config(32, bytes), [&] {
    if (tid() == 31) smem()[bytes - 1] = std::byte{1};
  });
  EXPECT_TRUE(st) << st.to_string();
  for (std::size_t past : {std::size_t{0}, std::size_t{1000}}) {
    st = h::launch(config(32, bytes), [&] {
      if (tid() == 31) smem()[bytes + past] = std::byte{1};
    });
    ASSERT_EQ(st.code(), pk::errc::emulation_error) << st.to_string();
    EXPECT_TRUE(contains(st.message(), "wrote at offset " + std::to_string(bytes + past))) << st.message();
  }
  // A read past the allocation reads NaN, with the poison off too (the band is always there).
  h::options().poison_shared = false;
  float seen = 0.0f;
  st = h::launch(config(32, bytes), [&] {
    if (tid() == 0) std::memcpy(&seen, smem() + bytes + 64, sizeof(float));
  });
  ASSERT_TRUE(st) << st.to_string();
  EXPECT_TRUE(std::isnan(seen)) << seen;
}

TEST_F(Sm90Emulator, MbarrierMisuseIsReported) {
  // More arrivals than a phase expects (all arrived, a transaction still pending).
  pk::status st = h::launch(config(32, 64), [&] {
    auto* bar = reinterpret_cast<h::mbarrier_state*>(smem());
    if (tid() == 0) {
      h::mbarrier_init(bar, 1, h::call_site::current());
      h::mbarrier_arrive(bar, 128, h::call_site::current());
      h::mbarrier_arrive(bar, 0, h::call_site::current());
    }
  });
  ASSERT_EQ(st.code(), pk::errc::emulation_error) << st.to_string();
  EXPECT_TRUE(contains(st.message(), "more arrivals than the phase expects")) << st.message();
  // Use before init (the poisoned shared memory holds no barrier).
  st = h::launch(config(32, 64), [&] {
    auto* bar = reinterpret_cast<h::mbarrier_state*>(smem());
    h::mbarrier_wait(bar, 0, h::call_site::current());
  });
  ASSERT_EQ(st.code(), pk::errc::emulation_error) << st.to_string();
  EXPECT_TRUE(contains(st.message(), "not initialised")) << st.message();
  // A fresh barrier: the phase of parity 1 counts as completed, the one of parity 0 is in progress and
  // completes only once its transaction bytes have arrived too.
  std::vector<std::uint16_t> global(32, 3);
  h::tma_map m;
  m.base = global.data();
  m.rank = 1;
  m.elem_bytes = 2;
  m.dims[0] = 32;
  m.strides[0] = 2;
  m.box[0] = 32;
  std::vector<std::uint32_t> phases;
  st = h::launch(config(32, 256), [&] {
    auto* bar = reinterpret_cast<h::mbarrier_state*>(smem() + 128);
    if (tid() == 0) {
      h::mbarrier_init(bar, 1, h::call_site::current());
      h::mbarrier_wait(bar, 1, h::call_site::current());
      h::mbarrier_expect_tx(bar, 64, h::call_site::current());
      h::mbarrier_arrive(bar, 0, h::call_site::current());
      phases.push_back(bar->phase);
      const std::int32_t c[1] = {0};
      h::tma_load(&m, smem(), bar, c, h::call_site::current());
      phases.push_back(bar->phase);
      h::mbarrier_wait(bar, 0, h::call_site::current());
    }
  });
  EXPECT_TRUE(st) << st.to_string();
  EXPECT_EQ(phases, (std::vector<std::uint32_t>{0, 1}));
}

// ---------------------------------------------------------------------------------------------
// Named barriers

TEST_F(Sm90Emulator, NamedBarriersAmongTwoWarpgroups) {
  constexpr int rounds = 4;
  std::vector<int> out(rounds * 128, -1), side(128, -1);
  const pk::status st = h::launch(config(384, 128 * sizeof(int)), [&] {
    int* buf = reinterpret_cast<int*>(smem());
    const int t = tid();
    if (t < 128) {
      // Warpgroup 0 synchronises among itself on its own id meanwhile.
      h::named_barrier_sync(3, 128, h::call_site::current());
      side[static_cast<std::size_t>(t)] = t;
      h::named_barrier_sync(3, 128, h::call_site::current());
    } else if (t < 256) {
      const int p = t - 128;
      for (int r = 0; r < rounds; ++r) {
        if (r > 0) h::named_barrier_sync(2, 256, h::call_site::current("stage free"));
        buf[p] = 1000 * r + p;
        h::named_barrier_arrive(1, 256, h::call_site::current("stage full"));
      }
    } else {
      const int c = t - 256;
      for (int r = 0; r < rounds; ++r) {
        h::named_barrier_sync(1, 256, h::call_site::current("wait full"));
        out[static_cast<std::size_t>(r * 128 + c)] = buf[(c + 5) % 128];
        if (r + 1 < rounds) h::named_barrier_arrive(2, 256, h::call_site::current("release"));
      }
    }
  });
  ASSERT_TRUE(st) << st.to_string();
  for (int r = 0; r < rounds; ++r)
    for (int c = 0; c < 128; ++c) EXPECT_EQ(out[static_cast<std::size_t>(r * 128 + c)], 1000 * r + (c + 5) % 128);
  for (int t = 0; t < 128; ++t) EXPECT_EQ(side[static_cast<std::size_t>(t)], t);
}

TEST_F(Sm90Emulator, NamedBarrierThatCannotCompleteIsReported) {
  const pk::status st = h::launch(config(256, 0), [&] {
    if (tid() < 128) h::named_barrier_sync(1, 256, h::call_site::current());
  });
  ASSERT_EQ(st.code(), pk::errc::emulation_error) << st.to_string();
  const std::string& msg = st.message();
  EXPECT_TRUE(contains(msg, "threads 0-127 wait at named barrier 1")) << msg;
  EXPECT_TRUE(contains(msg, "128 of 256 threads arrived")) << msg;
  EXPECT_TRUE(contains(msg, "threads 128-255 have exited")) << msg;
}

TEST_F(Sm90Emulator, NamedBarrierCountMismatchIsReported) {
  const pk::status st = h::launch(config(128, 0), [&] {
    h::named_barrier_sync(1, tid() < 64 ? 128 : 96, h::call_site::current());
  });
  ASSERT_EQ(st.code(), pk::errc::emulation_error) << st.to_string();
  EXPECT_TRUE(contains(st.message(), "differs from the 128 of the phase in progress")) << st.message();
}

// ---------------------------------------------------------------------------------------------
// Warps with a lane waiting on an mbarrier

TEST_F(Sm90Emulator, WarpSyncWaitsForALaneReleasedByAnMbarrier) {
  std::vector<int> out(64, 0);
  const pk::status st = h::launch(config(64, 64), [&] {
    auto* bar = reinterpret_cast<h::mbarrier_state*>(smem());
    const int t = tid();
    if (t == 0) h::mbarrier_init(bar, 1, h::call_site::current());
    h::block_sync(h::call_site::current());
    if (t < 32) {
      if (t == 0) h::mbarrier_wait(bar, 0, h::call_site::current());
      h::warp_sync(h::call_site::current("warp 0 converges"));
      out[static_cast<std::size_t>(t)] = bar->phase == 1 ? 1 : -1;
    } else {
      // Warp 1 completes several collectives while lane 0 of warp 0 is still waiting.
      for (int i = 0; i < 3; ++i) h::warp_sync(h::call_site::current());
      if (t == 32) h::mbarrier_arrive(bar, 0, h::call_site::current());
      out[static_cast<std::size_t>(t)] = 1;
    }
  });
  ASSERT_TRUE(st) << st.to_string();
  for (int t = 0; t < 64; ++t) EXPECT_EQ(out[static_cast<std::size_t>(t)], 1) << "thread " << t;
}

TEST_F(Sm90Emulator, LaneWaitingForeverOnAnMbarrierIsADeadlock) {
  const pk::status st = h::launch(config(32, 64), [&] {
    auto* bar = reinterpret_cast<h::mbarrier_state*>(smem());
    if (tid() == 0) h::mbarrier_init(bar, 1, h::call_site::current());
    h::block_sync(h::call_site::current());
    if (tid() == 0) h::mbarrier_wait(bar, 0, h::call_site::current());
    h::warp_sync(h::call_site::current());
  });
  ASSERT_EQ(st.code(), pk::errc::emulation_error) << st.to_string();
  const std::string& msg = st.message();
  EXPECT_TRUE(contains(msg, "deadlock")) << msg;
  EXPECT_TRUE(contains(msg, "threads 1-31 wait at warp sync")) << msg;
  EXPECT_TRUE(contains(msg, "threads 0 wait at")) << msg;
  EXPECT_TRUE(contains(msg, "pending arrivals 1")) << msg;
}

}  // namespace

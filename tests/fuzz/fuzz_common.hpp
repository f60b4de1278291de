// Shared by the libFuzzer targets: the emulator streams, buffers the target owns (so that any access
// outside them is a sanitizer report against pk, never against the target), tensor descriptors from
// fuzz bytes, 16-bit conversions for the references, and the failure report.
//
// A target calls the C API with descriptors of three kinds:
//  - backed: the memory every element of the described view (and its misalignment) can reach is a
//    buffer of exactly that size; pk may accept or reject, and an accepted small problem is checked
//    against a CPU reference;
//  - impossible: a negative extent, an element count or a byte extent beyond int64: pk must reject it,
//    and write nothing;
//  - unbacked: valid-looking but larger than the target will allocate: the data pointer is null, so pk
//    must reject it (or accept it as empty), and write nothing.
#pragma once
#include <pk/backend/host/launch.hpp>
#include <pk/pk.h>

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace pk_fuzz {

// Problems larger than this many bytes, or with more elements than this, are never backed: a run must stay
// fast on the emulator. The element bound matters for views with zero strides, whose few bytes can hold 2^32
// elements (a reduction of 2^32 x 11 broadcast fp16 values ran for minutes and stopped fuzzing on its
// 30-second limit); 2^20 is above every backed view without zero strides (2^16 bytes of at least 1 byte each).
inline constexpr std::int64_t max_backed_bytes = std::int64_t{1} << 16;
inline constexpr std::int64_t max_backed_elements = std::int64_t{1} << 20;

[[noreturn]] inline void fail(const char* api, const std::string& what) {
  std::fprintf(stderr, "pk fuzz: %s: %s (last error: \"%s\")\n", api, what.c_str(), pk_last_error_message());
  std::abort();
}

// One stream per impersonated device; devices of the one host target the sanitized build has (sm80):
// an A100 (164 KB of shared memory per block) and an RTX 3090 (100 KB, fewer SMs: other plans).
inline pk_stream_t stream(int which) {
  static pk_stream_t streams[2] = {nullptr, nullptr};
  static const char* names[2] = {"A100-SXM4-80GB", "RTX 3090"};
  if (streams[which] == nullptr) {
    // One worker: the emulator's block-level threads would only add nondeterminism to the fuzzer's runs.
    pk::backend::host::options().workers = 1;
    if (pk_stream_create_host(names[which], &streams[which]) != PK_SUCCESS) fail("pk_stream_create_host", names[which]);
  }
  return streams[which];
}

// A buffer of exactly `bytes` bytes (heap: the sanitizer knows its bounds), filled with a sentinel so
// that writes are visible.
struct buffer {
  std::vector<unsigned char> shadow;  // the contents before the call
  unsigned char* p = nullptr;
  std::size_t bytes = 0;
  explicit buffer(std::size_t n, unsigned char fill = 0xA5) : bytes(n) {
    // 64-byte aligned (no rule of pk asks more); exactly n bytes, so the sanitizer flags the byte after.
    void* q = nullptr;
    if (posix_memalign(&q, 64, n ? n : 1) != 0) std::abort();
    p = static_cast<unsigned char*>(q);
    std::memset(p, fill, n);
  }
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  ~buffer() { std::free(p); }
  void snapshot() { shadow.assign(p, p + bytes); }
  bool unchanged() const { return bytes == 0 || std::memcmp(p, shadow.data(), bytes) == 0; }
};

inline std::size_t dtype_bytes(std::int32_t d) {
  switch (d) {
    case PK_DTYPE_F64: case PK_DTYPE_I64: return 8;
    case PK_DTYPE_F32: case PK_DTYPE_I32: return 4;
    case PK_DTYPE_F16: case PK_DTYPE_BF16: return 2;
    case PK_DTYPE_I8: case PK_DTYPE_U8: case PK_DTYPE_F8E4M3FN: case PK_DTYPE_F8E4M3FNUZ: return 1;
    default: return 0;
  }
}

inline float half_to_float(std::uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  float v;
  if (e == 0) v = std::ldexp(static_cast<float>(m), -24);
  else if (e == 31) v = m ? NAN : INFINITY;
  else v = std::ldexp(static_cast<float>(m | 1024), e - 25);
  return s ? -v : v;
}
// Exact for the values the targets write (small integers and multiples of 1/8 within half's range).
inline std::uint16_t float_to_half(float f) {
  if (f == 0) return std::signbit(f) ? 0x8000 : 0;
  const std::uint16_t s = std::signbit(f) ? 0x8000 : 0;
  int e = 0;
  const float m = std::frexp(std::fabs(f), &e);  // f = m * 2^e, m in [0.5, 1)
  const int he = e + 14;                          // half exponent field of m * 2^e
  if (he <= 0) return s | static_cast<std::uint16_t>(std::ldexp(std::fabs(f), 24));
  return s | static_cast<std::uint16_t>(he << 10) | static_cast<std::uint16_t>(std::ldexp(m, 11) - 1024);
}
inline float bf16_to_float(std::uint16_t b) {
  const std::uint32_t u = std::uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline std::uint16_t float_to_bf16(float f) {  // exact for the values the targets write
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<std::uint16_t>(u >> 16);
}

// Element `i` (in elements from p) as double / written from double.
inline double load(const void* p, std::int32_t d, std::int64_t i) {
  const auto* b = static_cast<const unsigned char*>(p) + i * static_cast<std::int64_t>(dtype_bytes(d));
  switch (d) {
    case PK_DTYPE_F64: { double v; std::memcpy(&v, b, 8); return v; }
    case PK_DTYPE_F32: { float v; std::memcpy(&v, b, 4); return v; }
    case PK_DTYPE_F16: { std::uint16_t v; std::memcpy(&v, b, 2); return half_to_float(v); }
    case PK_DTYPE_BF16: { std::uint16_t v; std::memcpy(&v, b, 2); return bf16_to_float(v); }
    case PK_DTYPE_I32: { std::int32_t v; std::memcpy(&v, b, 4); return v; }
    case PK_DTYPE_I64: { std::int64_t v; std::memcpy(&v, b, 8); return static_cast<double>(v); }
    case PK_DTYPE_I8: { std::int8_t v; std::memcpy(&v, b, 1); return v; }
    case PK_DTYPE_U8: return *b;
    default: return 0;
  }
}
// x as an int64, clamped (NaN: 0): converting an out-of-range double to an integer type is undefined, and a
// target may store any value it drew; the integer is then narrowed modulo 2^bits (defined in C++20).
inline std::int64_t clamp_to_int64(double x) {
  if (!(x == x)) return 0;
  if (x >= 9223372036854775807.0) return INT64_MAX;
  if (x <= -9223372036854775808.0) return INT64_MIN;
  return static_cast<std::int64_t>(x);
}
inline void store(void* p, std::int32_t d, std::int64_t i, double x) {
  auto* b = static_cast<unsigned char*>(p) + i * static_cast<std::int64_t>(dtype_bytes(d));
  switch (d) {
    case PK_DTYPE_F64: std::memcpy(b, &x, 8); break;
    case PK_DTYPE_F32: { const float v = static_cast<float>(x); std::memcpy(b, &v, 4); break; }
    case PK_DTYPE_F16: { const std::uint16_t v = float_to_half(static_cast<float>(x)); std::memcpy(b, &v, 2); break; }
    case PK_DTYPE_BF16: { const std::uint16_t v = float_to_bf16(static_cast<float>(x)); std::memcpy(b, &v, 2); break; }
    case PK_DTYPE_I32: { const auto v = static_cast<std::int32_t>(clamp_to_int64(x)); std::memcpy(b, &v, 4); break; }
    case PK_DTYPE_I64: { const auto v = clamp_to_int64(x); std::memcpy(b, &v, 8); break; }
    case PK_DTYPE_I8: { const auto v = static_cast<std::int8_t>(clamp_to_int64(x)); std::memcpy(b, &v, 1); break; }
    case PK_DTYPE_U8: *b = static_cast<unsigned char>(clamp_to_int64(x)); break;
    default: break;
  }
}

// An extent: mostly small, sometimes an edge (0, 1, powers of two near int32/int64 limits, negative).
inline std::int64_t extent(FuzzedDataProvider& f, std::int64_t small_max) {
  static constexpr std::int64_t edges[] = {0, 1, -1, 1LL << 31, (1LL << 31) - 1, 1LL << 32, 1LL << 62, INT64_MAX,
                                           INT64_MIN, 3037000500LL /* just above sqrt(2^63) */};
  switch (f.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: return edges[f.ConsumeIntegralInRange<std::size_t>(0, std::size(edges) - 1)];
    case 1: return f.ConsumeIntegral<std::int64_t>();
    default: return f.ConsumeIntegralInRange<std::int64_t>(0, small_max);
  }
}

// The extent in elements a strided view reaches: [lo, hi] offsets (hi + 1 - lo elements), false when it
// overflows int64 or the byte extent does not fit 2^63 - 1 (pk must reject such views when not empty).
inline bool view_span(std::int32_t rank, const std::int64_t* shape, const std::int64_t* strides, std::size_t eb,
                      std::int64_t& lo, std::int64_t& hi) {
  lo = hi = 0;
  for (std::int32_t k = 0; k < rank; ++k) {
    std::int64_t t = 0;
    if (__builtin_mul_overflow(shape[k] - 1, strides[k], &t)) return false;
    if (t < 0 ? __builtin_add_overflow(lo, t, &lo) : __builtin_add_overflow(hi, t, &hi)) return false;
  }
  std::int64_t elems = 0, bytes = 0;
  if (__builtin_sub_overflow(hi, lo, &elems) || __builtin_add_overflow(elems, 1, &elems) ||
      __builtin_mul_overflow(elems, static_cast<std::int64_t>(eb), &bytes))
    return false;
  return true;
}

// Product of the extents; false on overflow (or a negative extent).
inline bool element_count(std::int32_t rank, const std::int64_t* shape, std::int64_t& n) {
  n = 1;
  bool negative = false;
  for (std::int32_t k = 0; k < rank; ++k) negative |= shape[k] < 0;
  if (negative) return false;
  for (std::int32_t k = 0; k < rank; ++k)
    if (__builtin_mul_overflow(n, shape[k], &n)) return false;
  return true;
}

// a * b wrapping around (two's complement), for strides built from fuzzed extents.
inline std::int64_t wrap_mul(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b));
}

// Row-major strides for `t`'s shape, each dimension padded by `pad` elements (0: contiguous).
inline void row_major(pk_tensor& t, std::int64_t pad) {
  std::int64_t s = 1;
  for (std::int32_t k = t.rank - 1; k >= 0; --k) {
    t.strides[k] = s;
    // Huge extents wrap (two's complement): the strides are then whatever they are, as a caller's would be.
    s = static_cast<std::int64_t>(static_cast<std::uint64_t>(s) * static_cast<std::uint64_t>(std::max<std::int64_t>(t.shape[k], 1)) +
                                  static_cast<std::uint64_t>(k == t.rank - 1 ? 0 : pad));
  }
}

// How the data pointer of a descriptor is chosen.
enum class placement { aligned, element_offset, byte_offset, null };

// A descriptor's memory: owns the buffer when the view is backed. Element (i0..) lives at
// data + sum(ik * strides[k]).
struct backing {
  enum kind { backed, impossible, unbacked } what = backed;
  std::int64_t lo = 0, hi = 0, elems = 0;
  std::unique_ptr<buffer> buf;
  bool misaligned = false;   // data not a multiple of the element size
  bool null_data = false;
};

inline backing back(pk_tensor& t, placement where, unsigned char fill = 0xA5, std::int64_t max_bytes = max_backed_bytes) {
  backing b;
  const std::size_t eb = dtype_bytes(t.dtype);
  if (t.rank < 0 || t.rank > PK_MAX_RANK || eb == 0) {  // rejected before any extent matters
    b.what = backing::impossible;
    t.data = nullptr;
    return b;
  }
  if (!element_count(t.rank, t.shape, b.elems) || (b.elems > 0 && !view_span(t.rank, t.shape, t.strides, eb, b.lo, b.hi))) {
    b.what = backing::impossible;
    static unsigned char tiny[64];
    t.data = tiny;  // pk must reject before reading
    return b;
  }
  const std::int64_t span = b.elems == 0 ? 0 : (b.hi - b.lo + 1) * static_cast<std::int64_t>(eb);
  if (span > max_bytes || b.elems > max_backed_elements) {
    b.what = backing::unbacked;
    b.null_data = true;
    t.data = nullptr;
    return b;
  }
  if (where == placement::null) {
    b.null_data = true;
    t.data = nullptr;
    return b;
  }
  const std::size_t skew = where == placement::byte_offset ? 1 : where == placement::element_offset ? eb : 0;
  b.misaligned = where == placement::byte_offset && eb > 1;
  b.buf = std::make_unique<buffer>(static_cast<std::size_t>(span) + skew, fill);
  t.data = b.buf->p + skew - b.lo * static_cast<std::int64_t>(eb);
  return b;
}

inline placement pick_placement(FuzzedDataProvider& f) {
  switch (f.ConsumeIntegralInRange<int>(0, 15)) {
    case 0: return placement::null;
    case 1: return placement::byte_offset;
    case 2: case 3: return placement::element_offset;
    default: return placement::aligned;
  }
}

// With PK_FUZZ_TRACE set, each call's descriptors are printed before the call (to turn a finding into a test).
inline void trace(const char* name, const pk_tensor& t) {
  if (std::getenv("PK_FUZZ_TRACE") == nullptr) return;
  std::fprintf(stderr, "  %s: data %p dtype %d rank %d shape [", name, t.data, t.dtype, t.rank);
  for (int k = 0; k < std::clamp(t.rank, 0, PK_MAX_RANK); ++k) std::fprintf(stderr, "%s%lld", k ? ", " : "", static_cast<long long>(t.shape[k]));
  std::fprintf(stderr, "] strides [");
  for (int k = 0; k < std::clamp(t.rank, 0, PK_MAX_RANK); ++k) std::fprintf(stderr, "%s%lld", k ? ", " : "", static_cast<long long>(t.strides[k]));
  std::fprintf(stderr, "]\n");
}

// Every status other than these four means pk failed inside (an exception, an emulation error, a backend
// error) on arguments it should have handled.
inline void check_status(const char* api, pk_status st) {
  if (st == PK_SUCCESS) {
    if (pk_last_error_message()[0] != '\0') fail(api, "success with a non-empty error message");
    return;
  }
  if (st != PK_ERROR_INVALID_ARGUMENT && st != PK_ERROR_UNSUPPORTED && st != PK_ERROR_OUT_OF_MEMORY)
    fail(api, std::string("status ") + pk_status_string(st));
  if (pk_last_error_message()[0] == '\0') fail(api, "an error status without a message");
}

}  // namespace pk_fuzz

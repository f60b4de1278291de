/* The C API from C: correct calls on every emulated arch family, and bad calls (null pointers, wrong
 * shapes and strides, unsupported or unknown dtypes, unknown devices) that must return a status with a
 * message and never crash. Exit status 0 when every check passes. */
#include <pk/pk.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond)                                                   \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                     \
    }                                                                 \
  } while (0)

/* A call that must fail with `expected` and leave a message that mentions `needle`. */
static void expect_error(pk_status got, pk_status expected, const char* needle, const char* what, int line) {
  const char* msg = pk_last_error_message();
  if (got != expected) {
    fprintf(stderr, "line %d: %s: got %s, expected %s (message: \"%s\")\n", line, what, pk_status_string(got),
            pk_status_string(expected), msg);
    ++failures;
    return;
  }
  if (msg == NULL || msg[0] == '\0' || (needle != NULL && strstr(msg, needle) == NULL)) {
    fprintf(stderr, "line %d: %s: message \"%s\" should mention \"%s\"\n", line, what, msg ? msg : "(null)",
            needle ? needle : "(anything)");
    ++failures;
    return;
  }
  printf("ok: %s -> %s: %s\n", what, pk_status_string(got), msg);
}
#define EXPECT_ERROR(call, expected, needle) expect_error((call), (expected), (needle), #call, __LINE__)

/* Element count of the correctness checks: ragged (not a multiple of any block or vector width). */
enum { n_elements = 100003 };
static float host_x[n_elements];

/* A host stream impersonating `device`, or NULL with a "skipped" line when this build leaves out the
 * host target that device needs (PK_HOST_ARCHS: the sanitized build has sm80 only); any other failure fails. */
static pk_stream_t host_stream_or_skip(const char* device, const char* what) {
  pk_stream_t s = NULL;
  const pk_status st = pk_stream_create_host(device, &s);
  if (st == PK_ERROR_UNSUPPORTED && strstr(pk_last_error_message(), "leaves out") != NULL) {
    printf("skipped: %s on %s: %s\n", what, device ? device : "default", pk_last_error_message());
    return NULL;
  }
  CHECK(st == PK_SUCCESS);
  if (st != PK_SUCCESS) fprintf(stderr, "pk_stream_create_host(%s): %s\n", device ? device : "default", pk_last_error_message());
  return st == PK_SUCCESS ? s : NULL;
}

/* Sum of host_x on the emulator impersonating `device`. The values are multiples of 1/4 below 5, so
 * every partial sum is exact in fp32 (far below 2^24 quarters) and the result must match exactly. */
static void check_sum_on(const char* device) {
  pk_stream_t s = host_stream_or_skip(device, "reduce_sum");
  if (s == NULL) return;
  char description[256];
  size_t length = 0;
  CHECK(pk_stream_describe(s, description, sizeof description, &length) == PK_SUCCESS);
  CHECK(length == strlen(description));

  double expected = 0;
  for (int i = 0; i < n_elements; ++i) expected += host_x[i];

  float* x = NULL;
  float* total = NULL;
  CHECK(pk_malloc(s, sizeof host_x, (void**)&x) == PK_SUCCESS);
  CHECK(pk_malloc(s, sizeof(float), (void**)&total) == PK_SUCCESS);
  CHECK(pk_memcpy_h2d(s, x, host_x, sizeof host_x) == PK_SUCCESS);
  const float poison = -12345.0f;
  CHECK(pk_memcpy_h2d(s, total, &poison, sizeof poison) == PK_SUCCESS);

  pk_tensor in = pk_tensor_1d(x, PK_DTYPE_F32, n_elements);
  pk_tensor out = pk_tensor_scalar(total, PK_DTYPE_F32);
  CHECK(pk_reduce_sum(s, &in, &out) == PK_SUCCESS);
  CHECK(pk_last_error_message()[0] == '\0');
  CHECK(pk_stream_synchronize(s) == PK_SUCCESS);
  float result = 0;
  CHECK(pk_memcpy_d2h(s, &result, total, sizeof result) == PK_SUCCESS);
  CHECK((double)result == expected);
  printf("ok: reduce_sum on %s: %.2f (expected %.2f)\n", description, (double)result, expected);

  /* A rank-3 contiguous view of the same memory sums the same; out given as shape {1}. */
  const int64_t shape3[3] = {7, 1, n_elements / 7};
  pk_tensor in3 = pk_tensor_contiguous(x, PK_DTYPE_F32, 3, shape3);
  pk_tensor out1 = pk_tensor_1d(total, PK_DTYPE_F32, 1);
  CHECK(pk_reduce_sum(s, &in3, &out1) == PK_SUCCESS);
  double expected3 = 0;
  for (int i = 0; i < 7 * (n_elements / 7); ++i) expected3 += host_x[i];
  CHECK(pk_memcpy_d2h(s, &result, total, sizeof result) == PK_SUCCESS);
  CHECK((double)result == expected3);

  /* argmax: the first index of the largest value (4.5 first at i = 18); min: 0. */
  int64_t* index = NULL;
  CHECK(pk_malloc(s, sizeof *index, (void**)&index) == PK_SUCCESS);
  pk_tensor index_out = pk_tensor_scalar(index, PK_DTYPE_I64);
  CHECK(pk_reduce_argmax(s, &in, &index_out) == PK_SUCCESS);
  int64_t at = -2;
  CHECK(pk_memcpy_d2h(s, &at, index, sizeof at) == PK_SUCCESS);
  CHECK(at == 18);
  if (at != 18) fprintf(stderr, "argmax on %s: %lld\n", device ? device : "(default)", (long long)at);
  CHECK(pk_reduce_min(s, &in, &out) == PK_SUCCESS);
  CHECK(pk_memcpy_d2h(s, &result, total, sizeof result) == PK_SUCCESS);
  CHECK(result == 0.0f);
  CHECK(pk_free(s, index) == PK_SUCCESS);

  /* Empty input writes the identity. */
  pk_tensor empty = pk_tensor_1d(NULL, PK_DTYPE_F32, 0);
  CHECK(pk_reduce_sum(s, &empty, &out) == PK_SUCCESS);
  CHECK(pk_memcpy_d2h(s, &result, total, sizeof result) == PK_SUCCESS);
  CHECK(result == 0.0f);

  CHECK(pk_free(s, x) == PK_SUCCESS);
  CHECK(pk_free(s, total) == PK_SUCCESS);
  CHECK(pk_stream_destroy(s) == PK_SUCCESS);
}

/* Softmax of two rows of three, and attention with all-zero bf16 q, k, v: uniform weights over zero
 * values give output 0 and LSE = log(seqlen_k). */
static void check_rows_and_attention(const char* device) {
  pk_stream_t s = host_stream_or_skip(device, "softmax and attention");
  if (s == NULL) return;
  const float host_rows[6] = {1, 2, 3, -1, 0, 1};
  float* rows = NULL;
  CHECK(pk_malloc(s, sizeof host_rows, (void**)&rows) == PK_SUCCESS);
  CHECK(pk_memcpy_h2d(s, rows, host_rows, sizeof host_rows) == PK_SUCCESS);
  const int64_t shape[2] = {2, 3};
  pk_tensor r = pk_tensor_contiguous(rows, PK_DTYPE_F32, 2, shape);

  /* Along an axis, segmented, mean/variance, layer norm: small exact cases through every wrapper. */
  float* small = NULL;
  int64_t* offsets = NULL;
  CHECK(pk_malloc(s, 6 * sizeof(float), (void**)&small) == PK_SUCCESS);
  CHECK(pk_malloc(s, 3 * sizeof(int64_t), (void**)&offsets) == PK_SUCCESS);
  float got[6] = {0};
  pk_tensor axis_out = pk_tensor_1d(small, PK_DTYPE_F32, 3);
  CHECK(pk_reduce_axis(s, PK_REDUCE_SUM, &r, 0, &axis_out, NULL) == PK_SUCCESS); /* column sums */
  CHECK(pk_memcpy_d2h(s, got, small, 3 * sizeof(float)) == PK_SUCCESS);
  CHECK(got[0] == 0 && got[1] == 2 && got[2] == 4);
  axis_out = pk_tensor_1d(small, PK_DTYPE_F32, 2);
  CHECK(pk_reduce_axis(s, PK_REDUCE_MAX, &r, 1, &axis_out, NULL) == PK_SUCCESS); /* row maxima */
  CHECK(pk_memcpy_d2h(s, got, small, 2 * sizeof(float)) == PK_SUCCESS);
  CHECK(got[0] == 3 && got[1] == 1);
  const int64_t host_offsets[3] = {0, 2, 6};
  CHECK(pk_memcpy_h2d(s, offsets, host_offsets, sizeof host_offsets) == PK_SUCCESS);
  pk_tensor flat = pk_tensor_1d(rows, PK_DTYPE_F32, 6), seg_off = pk_tensor_1d(offsets, PK_DTYPE_I64, 3);
  pk_tensor seg_out = pk_tensor_1d(small, PK_DTYPE_F32, 2);
  CHECK(pk_segmented_reduce(s, PK_REDUCE_SUM, &flat, &seg_off, &seg_out, NULL) == PK_SUCCESS);
  CHECK(pk_memcpy_d2h(s, got, small, 2 * sizeof(float)) == PK_SUCCESS);
  CHECK(got[0] == 3 && got[1] == 3);
  pk_tensor mean = pk_tensor_scalar(small, PK_DTYPE_F32), var = pk_tensor_scalar(small + 1, PK_DTYPE_F32);
  CHECK(pk_reduce_mean_var(s, &flat, &mean, &var, 0) == PK_SUCCESS);
  CHECK(pk_memcpy_d2h(s, got, small, 2 * sizeof(float)) == PK_SUCCESS);
  /* mean 1, population variance (0 + 1 + 4 + 4 + 1 + 0) / 6, to fp32 rounding */
  CHECK(fabsf(got[0] - 1.0f) <= 0x1p-22f && fabsf(got[1] - 10.0f / 6.0f) <= 0x1p-21f);
  const float ones[3] = {1, 1, 1};
  CHECK(pk_memcpy_h2d(s, small + 3, ones, sizeof ones) == PK_SUCCESS);
  pk_tensor weight = pk_tensor_1d(small + 3, PK_DTYPE_F32, 3);
  const int64_t one_row[2] = {1, 3};
  pk_tensor x0 = pk_tensor_contiguous(rows, PK_DTYPE_F32, 2, one_row), y0 = pk_tensor_contiguous(small, PK_DTYPE_F32, 2, one_row);
  CHECK(pk_layer_norm(s, &x0, &y0, &weight, NULL, 0.0, NULL, NULL) == PK_SUCCESS);
  CHECK(pk_memcpy_d2h(s, got, small, 3 * sizeof(float)) == PK_SUCCESS);
  /* {1, 2, 3}: mean 2, variance 2/3, so y = {-1, 0, 1} * sqrt(3/2) */
  CHECK(fabsf(got[0] + sqrtf(1.5f)) <= 0x1p-20f && fabsf(got[1]) <= 0x1p-20f && fabsf(got[2] - sqrtf(1.5f)) <= 0x1p-20f);
  CHECK(pk_free(s, small) == PK_SUCCESS);
  CHECK(pk_free(s, offsets) == PK_SUCCESS);

  pk_status st = pk_softmax(s, &r, &r); /* in place */
  CHECK(st == PK_SUCCESS);
  if (st != PK_SUCCESS) fprintf(stderr, "pk_softmax: %s\n", pk_last_error_message());
  float p[6] = {0};
  CHECK(pk_memcpy_d2h(s, p, rows, sizeof p) == PK_SUCCESS);
  /* Both rows are shifts of {0, 1, 2}: the same probabilities, summing to 1 within a few ulps. */
  const float row_tolerance = 4 * 0x1p-23f;
  CHECK(fabsf(p[0] + p[1] + p[2] - 1) <= row_tolerance);
  CHECK(fabsf(p[0] - p[3]) <= row_tolerance && fabsf(p[2] - p[5]) <= row_tolerance);
  CHECK(p[0] < p[1] && p[1] < p[2]);
  CHECK(pk_free(s, rows) == PK_SUCCESS);

  enum { seqlen = 4, head_dim = 32, elems = seqlen * head_dim };
  const int64_t qshape[4] = {1, seqlen, 1, head_dim};
  void* qkv = NULL;
  void* o = NULL;
  float* lse = NULL;
  CHECK(pk_malloc(s, elems * pk_dtype_size(PK_DTYPE_BF16), &qkv) == PK_SUCCESS);
  CHECK(pk_malloc(s, elems * pk_dtype_size(PK_DTYPE_BF16), &o) == PK_SUCCESS);
  CHECK(pk_malloc(s, seqlen * sizeof(float), (void**)&lse) == PK_SUCCESS);
  CHECK(pk_memset_async(s, qkv, 0, elems * pk_dtype_size(PK_DTYPE_BF16)) == PK_SUCCESS);
  CHECK(pk_memset_async(s, o, 0xff, elems * pk_dtype_size(PK_DTYPE_BF16)) == PK_SUCCESS); /* NaN poison */
  pk_attention_args a = pk_attention_args_default();
  a.q = a.k = a.v = pk_tensor_contiguous(qkv, PK_DTYPE_BF16, 4, qshape);
  a.out = pk_tensor_contiguous(o, PK_DTYPE_BF16, 4, qshape);
  a.lse = lse;
  st = pk_attention_forward(s, &a);
  CHECK(st == PK_SUCCESS);
  if (st != PK_SUCCESS) fprintf(stderr, "pk_attention_forward: %s\n", pk_last_error_message());
  unsigned short out_bits[elems];
  float host_lse[seqlen];
  CHECK(pk_memcpy_d2h(s, out_bits, o, sizeof out_bits) == PK_SUCCESS);
  CHECK(pk_memcpy_d2h(s, host_lse, lse, sizeof host_lse) == PK_SUCCESS);
  int nonzero = 0;
  for (int i = 0; i < elems; ++i) nonzero += out_bits[i] != 0;
  CHECK(nonzero == 0);
  /* LSE of seqlen equal scores: log(seqlen), to fp32 rounding of the exp2/log2 evaluation. */
  const float lse_tolerance = 1e-6f;
  for (int i = 0; i < seqlen; ++i) CHECK(fabsf(host_lse[i] - logf((float)seqlen)) <= lse_tolerance);
  printf("ok: softmax and attention on %s\n", device);
  CHECK(pk_free(s, qkv) == PK_SUCCESS);
  CHECK(pk_free(s, o) == PK_SUCCESS);
  CHECK(pk_free(s, lse) == PK_SUCCESS);
  CHECK(pk_stream_destroy(s) == PK_SUCCESS);
}

/* Extents whose products overflow int64 (or whose byte extent exceeds the address space) must be
 * rejected with PK_ERROR_INVALID_ARGUMENT naming the argument, writing nothing: no wrapped element
 * count ([2^32, 2^32] wraps to 0, [2^61 + 1, 8] to 8) may reach a kernel. The output is poisoned and
 * checked afterwards. Run on each emulated arch family. */
static void check_overflow_on(const char* device) {
  pk_stream_t s = host_stream_or_skip(device, "overflowing extents");
  if (s == NULL) return;
  float* x = NULL;
  float* res = NULL;
  CHECK(pk_malloc(s, 64 * sizeof(float), (void**)&x) == PK_SUCCESS);
  CHECK(pk_malloc(s, 64 * sizeof(float), (void**)&res) == PK_SUCCESS);
  const float poison_value = -12345.0f;
  float poison_block[64];
  for (int i = 0; i < 64; ++i) poison_block[i] = poison_value;
  CHECK(pk_memcpy_h2d(s, x, poison_block, sizeof poison_block) == PK_SUCCESS);
  CHECK(pk_memcpy_h2d(s, res, poison_block, sizeof poison_block) == PK_SUCCESS);
  const pk_tensor out = pk_tensor_scalar(res, PK_DTYPE_F32);

  const int64_t wraps_to_zero[2] = {(int64_t)1 << 32, (int64_t)1 << 32};
  pk_tensor t = pk_tensor_contiguous(x, PK_DTYPE_F32, 2, wraps_to_zero);
  EXPECT_ERROR(pk_reduce_sum(s, &t, &out), PK_ERROR_INVALID_ARGUMENT, "in: shape");
  EXPECT_ERROR(pk_reduce(s, PK_REDUCE_MAX, &t, &out, NULL), PK_ERROR_INVALID_ARGUMENT, "in: shape");
  const int64_t wraps_to_eight[2] = {((int64_t)1 << 61) + 1, 8};
  t = pk_tensor_contiguous(x, PK_DTYPE_F32, 2, wraps_to_eight);
  EXPECT_ERROR(pk_reduce_sum(s, &t, &out), PK_ERROR_INVALID_ARGUMENT, "in: shape");
  pk_tensor mean_t = pk_tensor_scalar(res, PK_DTYPE_F32), var_t = pk_tensor_scalar(res + 1, PK_DTYPE_F32);
  EXPECT_ERROR(pk_reduce_mean_var(s, &t, &mean_t, &var_t, 0), PK_ERROR_INVALID_ARGUMENT, "in: shape");
  /* The element count fits, the bytes do not: 2^62 f32 elements are 2^64 bytes. */
  const int64_t too_many_bytes[1] = {(int64_t)1 << 62};
  t = pk_tensor_contiguous(x, PK_DTYPE_F32, 1, too_many_bytes);
  EXPECT_ERROR(pk_reduce_sum(s, &t, &out), PK_ERROR_INVALID_ARGUMENT, "bytes");
  /* The output's shape is checked the same way (2^32 * 2^32 wraps to 0). */
  const pk_tensor o = pk_tensor_contiguous(res, PK_DTYPE_F32, 2, wraps_to_zero);
  const pk_tensor in64 = pk_tensor_1d(x, PK_DTYPE_F32, 64);
  EXPECT_ERROR(pk_reduce_sum(s, &in64, &o), PK_ERROR_INVALID_ARGUMENT, "out: shape");
  /* Along an axis: the strided view's largest offset exceeds int64. */
  const int64_t big2[2] = {(int64_t)1 << 32, (int64_t)1 << 32};
  t = pk_tensor_contiguous(x, PK_DTYPE_F32, 2, big2);
  pk_tensor ro = pk_tensor_1d(res, PK_DTYPE_F32, (int64_t)1 << 32);
  EXPECT_ERROR(pk_reduce_axis(s, PK_REDUCE_SUM, &t, 1, &ro, NULL), PK_ERROR_INVALID_ARGUMENT, "in");
  const int64_t two_by_two[2] = {2, 2};
  t = pk_tensor_contiguous(x, PK_DTYPE_F32, 2, two_by_two);
  t.strides[0] = (int64_t)1 << 62; /* offset 2^62 elements = 2^64 bytes */
  ro = pk_tensor_1d(res, PK_DTYPE_F32, 2);
  EXPECT_ERROR(pk_reduce_axis(s, PK_REDUCE_SUM, &t, 1, &ro, NULL), PK_ERROR_INVALID_ARGUMENT, "in.stride[0]");
  /* Segmented: segments + 1 offsets must not wrap. */
  pk_tensor seg_out = pk_tensor_1d(res, PK_DTYPE_F32, INT64_MAX);
  pk_tensor seg_off = pk_tensor_1d(x, PK_DTYPE_I64, INT64_MIN);
  EXPECT_ERROR(pk_segmented_reduce(s, PK_REDUCE_SUM, &in64, &seg_off, &seg_out, NULL), PK_ERROR_INVALID_ARGUMENT,
               "segments");
  /* Segmented: the input's byte extent (2^62 f32 elements: 2^64 bytes), which the C++ entry never sees. */
  pk_tensor huge_in = pk_tensor_1d(x, PK_DTYPE_F32, (int64_t)1 << 62);
  pk_tensor seg_out1 = pk_tensor_1d(res, PK_DTYPE_F32, 1);
  pk_tensor seg_off2 = pk_tensor_1d(x, PK_DTYPE_I64, 2);
  EXPECT_ERROR(pk_segmented_reduce(s, PK_REDUCE_SUM, &huge_in, &seg_off2, &seg_out1, NULL), PK_ERROR_INVALID_ARGUMENT,
               "byte extent");
  /* Row operations: rows * row stride. */
  const int64_t rows_shape[2] = {(int64_t)1 << 40, (int64_t)1 << 30};
  t = pk_tensor_contiguous(x, PK_DTYPE_F32, 2, rows_shape);
  EXPECT_ERROR(pk_softmax(s, &t, &t), PK_ERROR_INVALID_ARGUMENT, "x: shape");
  EXPECT_ERROR(pk_log_softmax(s, &t, &t), PK_ERROR_INVALID_ARGUMENT, "x: shape");
  pk_tensor w = pk_tensor_1d(res, PK_DTYPE_F32, (int64_t)1 << 30);
  EXPECT_ERROR(pk_layer_norm(s, &t, &t, &w, NULL, 1e-5, NULL, NULL), PK_ERROR_INVALID_ARGUMENT, "x: shape");
  EXPECT_ERROR(pk_rms_norm(s, &t, &t, &w, 1e-5, NULL), PK_ERROR_INVALID_ARGUMENT, "x: shape");
  pk_tensor rm = pk_tensor_1d(res, PK_DTYPE_F32, (int64_t)1 << 40);
  EXPECT_ERROR(pk_row_mean_var(s, &t, &rm, &rm, 0), PK_ERROR_INVALID_ARGUMENT, "x: shape");
  /* Six elements, but rows 2^61 f64 elements apart: 2^65 bytes. */
  const int64_t three_by_two[2] = {3, 2};
  t = pk_tensor_contiguous(x, PK_DTYPE_F64, 2, three_by_two);
  t.strides[0] = (int64_t)1 << 61;
  EXPECT_ERROR(pk_softmax(s, &t, &t), PK_ERROR_INVALID_ARGUMENT, "rows.x_row_stride");

  float after[64];
  CHECK(pk_stream_synchronize(s) == PK_SUCCESS);
  CHECK(pk_memcpy_d2h(s, after, res, sizeof after) == PK_SUCCESS);
  int untouched = 1;
  for (int i = 0; i < 64; ++i) untouched = untouched && after[i] == poison_value;
  CHECK(untouched);
  CHECK(pk_memcpy_d2h(s, after, x, sizeof after) == PK_SUCCESS);
  for (int i = 0; i < 64; ++i) untouched = untouched && after[i] == poison_value;
  CHECK(untouched);
  printf("ok: overflowing extents rejected on %s\n", device);
  CHECK(pk_free(s, x) == PK_SUCCESS);
  CHECK(pk_free(s, res) == PK_SUCCESS);
  CHECK(pk_stream_destroy(s) == PK_SUCCESS);
}

static void check_bad_calls(void) {
  pk_stream_t s = NULL;
  CHECK(pk_stream_create_host("A100-SXM4-80GB", &s) == PK_SUCCESS);
  float* x = NULL;
  float* total = NULL;
  CHECK(pk_malloc(s, 64 * sizeof(float), (void**)&x) == PK_SUCCESS);
  CHECK(pk_malloc(s, sizeof(float), (void**)&total) == PK_SUCCESS);
  const pk_tensor in = pk_tensor_1d(x, PK_DTYPE_F32, 64);
  const pk_tensor out = pk_tensor_scalar(total, PK_DTYPE_F32);

  /* Streams. */
  EXPECT_ERROR(pk_stream_create_host("RTX 3090", NULL), PK_ERROR_INVALID_ARGUMENT, "out");
  pk_stream_t bad = s;
  EXPECT_ERROR(pk_stream_create_host("No Such GPU 9000", &bad), PK_ERROR_NOT_FOUND, "No Such GPU 9000");
  CHECK(bad == NULL);
  EXPECT_ERROR(pk_stream_synchronize(NULL), PK_ERROR_INVALID_ARGUMENT, "stream");
  EXPECT_ERROR(pk_stream_describe(NULL, NULL, 0, NULL), PK_ERROR_INVALID_ARGUMENT, "stream");
  EXPECT_ERROR(pk_stream_describe(s, NULL, 16, NULL), PK_ERROR_INVALID_ARGUMENT, "buf");
  CHECK(pk_stream_destroy(NULL) == PK_SUCCESS);

  /* Memory. */
  void* p = NULL;
  EXPECT_ERROR(pk_malloc(NULL, 16, &p), PK_ERROR_INVALID_ARGUMENT, "stream");
  EXPECT_ERROR(pk_malloc(s, 16, NULL), PK_ERROR_INVALID_ARGUMENT, "out");
  EXPECT_ERROR(pk_memcpy_h2d(s, NULL, host_x, 16), PK_ERROR_INVALID_ARGUMENT, "dst");
  EXPECT_ERROR(pk_memcpy_d2h(s, host_x, NULL, 16), PK_ERROR_INVALID_ARGUMENT, "src");
  EXPECT_ERROR(pk_memcpy_async(s, x, host_x, 16, (pk_memcpy_kind)99), PK_ERROR_INVALID_ARGUMENT, "kind");
  EXPECT_ERROR(pk_memset_async(s, NULL, 0, 16), PK_ERROR_INVALID_ARGUMENT, "device_dst");
  CHECK(pk_free(s, NULL) == PK_SUCCESS);

  /* Found by tests/fuzz/fuzz_reduce: a negative row stride read as the C++ API's "-1: cols" (a stride
   * near -2^63 made pk read 5 rows of 288 elements from a 64-byte buffer). Row strides are >= 0. */
  {
    pk_tensor rows = pk_tensor_1d(x, PK_DTYPE_F32, 8);
    rows.rank = 2;
    rows.shape[0] = 2;
    rows.shape[1] = 8;
    rows.strides[0] = -1;
    rows.strides[1] = 1;
    EXPECT_ERROR(pk_softmax(s, &rows, &rows), PK_ERROR_INVALID_ARGUMENT, "strides[0]");
    rows.strides[0] = -9223371160667179933LL;
    EXPECT_ERROR(pk_log_softmax(s, &rows, &rows), PK_ERROR_INVALID_ARGUMENT, "strides[0]");
  }
  /* Found by tests/fuzz/fuzz_reduce: data not aligned to its element size reached misaligned loads. */
  {
    pk_tensor odd = pk_tensor_1d((char*)x + 1, PK_DTYPE_F32, 8);
    EXPECT_ERROR(pk_reduce_sum(s, &odd, &out), PK_ERROR_INVALID_ARGUMENT, "aligned");
  }

  /* Reductions: null pointers. */
  EXPECT_ERROR(pk_reduce_sum(NULL, &in, &out), PK_ERROR_INVALID_ARGUMENT, "stream");
  EXPECT_ERROR(pk_reduce_sum(s, NULL, &out), PK_ERROR_INVALID_ARGUMENT, "in");
  EXPECT_ERROR(pk_reduce_sum(s, &in, NULL), PK_ERROR_INVALID_ARGUMENT, "out");
  pk_tensor t = in;
  t.data = NULL;
  EXPECT_ERROR(pk_reduce_sum(s, &t, &out), PK_ERROR_INVALID_ARGUMENT, "in: data");
  t = out;
  t.data = NULL;
  EXPECT_ERROR(pk_reduce_sum(s, &in, &t), PK_ERROR_INVALID_ARGUMENT, "out: data");

  /* Wrong shapes and strides. */
  t = in;
  t.shape[0] = -5;
  EXPECT_ERROR(pk_reduce_sum(s, &t, &out), PK_ERROR_INVALID_ARGUMENT, "shape[0] = -5");
  t = in;
  t.rank = PK_MAX_RANK + 1;
  EXPECT_ERROR(pk_reduce_sum(s, &t, &out), PK_ERROR_INVALID_ARGUMENT, "rank");
  t = in;
  t.strides[0] = 2;
  EXPECT_ERROR(pk_reduce_sum(s, &t, &out), PK_ERROR_INVALID_ARGUMENT, "contiguous");
  const int64_t shape2[2] = {8, 8};
  t = pk_tensor_contiguous(x, PK_DTYPE_F32, 2, shape2);
  t.strides[0] = 9; /* padded rows */
  EXPECT_ERROR(pk_reduce_sum(s, &t, &out), PK_ERROR_INVALID_ARGUMENT, "strides[0]");
  t = pk_tensor_1d(total, PK_DTYPE_F32, 2);
  EXPECT_ERROR(pk_reduce_sum(s, &in, &t), PK_ERROR_INVALID_ARGUMENT, "one element");
  t = pk_tensor_contiguous(total, PK_DTYPE_F32, 2, shape2);
  EXPECT_ERROR(pk_reduce_sum(s, &in, &t), PK_ERROR_INVALID_ARGUMENT, "one element");
  const int64_t too_many[PK_MAX_RANK + 1] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  t = pk_tensor_contiguous(x, PK_DTYPE_F32, PK_MAX_RANK + 1, too_many);
  EXPECT_ERROR(pk_reduce_sum(s, &t, &out), PK_ERROR_INVALID_ARGUMENT, "rank = -1");

  /* Unsupported and unknown dtypes and operations. */
  t = in;
  t.dtype = PK_DTYPE_I8;
  pk_tensor o = out;
  o.dtype = PK_DTYPE_I8;
  EXPECT_ERROR(pk_reduce_sum(s, &t, &o), PK_ERROR_UNSUPPORTED, "i8");
  t.dtype = PK_DTYPE_U8;
  o.dtype = PK_DTYPE_U8;
  EXPECT_ERROR(pk_reduce_prod(s, &t, &o), PK_ERROR_UNSUPPORTED, "u8");
  t.dtype = 42;
  EXPECT_ERROR(pk_reduce_sum(s, &t, &out), PK_ERROR_INVALID_ARGUMENT, "dtype = 42");
  o = out;
  o.dtype = PK_DTYPE_BF16;
  EXPECT_ERROR(pk_reduce_sum(s, &in, &o), PK_ERROR_INVALID_ARGUMENT, "must be f32");
  EXPECT_ERROR(pk_reduce_argmax(s, &in, &out), PK_ERROR_INVALID_ARGUMENT, "must be i64");
  EXPECT_ERROR(pk_reduce(s, (pk_reduce_op)99, &in, &out, NULL), PK_ERROR_INVALID_ARGUMENT, "op = 99");
  pk_reduce_options reproducible = pk_reduce_options_default();
  reproducible.reproducible = 1;
  EXPECT_ERROR(pk_reduce(s, PK_REDUCE_MAX, &in, &out, &reproducible), PK_ERROR_UNSUPPORTED, "reproducible");
  /* A forced policy is a candidate's name: an unknown one is an error, never dropped. */
  pk_reduce_options forced = pk_reduce_options_default();
  forced.policy = "reduce_b7_i1_v1";
  EXPECT_ERROR(pk_reduce(s, PK_REDUCE_SUM, &in, &out, &forced), PK_ERROR_INVALID_ARGUMENT,
               "policy reduce_b7_i1_v1 is not a compiled candidate");

  /* Along an axis, segmented, mean/variance. */
  const int64_t shape5[5] = {1, 1, 1, 8, 8};
  t = pk_tensor_contiguous(x, PK_DTYPE_F32, 5, shape5);
  EXPECT_ERROR(pk_reduce_axis(s, PK_REDUCE_SUM, &t, 0, &out, NULL), PK_ERROR_INVALID_ARGUMENT, "rank = 5");
  t = pk_tensor_contiguous(x, PK_DTYPE_F32, 2, shape2);
  EXPECT_ERROR(pk_reduce_axis(s, PK_REDUCE_SUM, &t, 7, &in, NULL), PK_ERROR_INVALID_ARGUMENT, "axis");
  EXPECT_ERROR(pk_segmented_reduce(s, PK_REDUCE_SUM, &in, NULL, &in, NULL), PK_ERROR_INVALID_ARGUMENT, "offsets");
  pk_tensor offsets = pk_tensor_1d(x, PK_DTYPE_I32, 65);
  EXPECT_ERROR(pk_segmented_reduce(s, PK_REDUCE_SUM, &in, &offsets, &in, NULL), PK_ERROR_INVALID_ARGUMENT, "must be i64");
  EXPECT_ERROR(pk_reduce_mean_var(s, &in, &out, NULL, 0), PK_ERROR_INVALID_ARGUMENT, "var");

  /* Row operations. */
  EXPECT_ERROR(pk_softmax(s, &in, &in), PK_ERROR_INVALID_ARGUMENT, "rank = 1");
  t = pk_tensor_contiguous(x, PK_DTYPE_F32, 2, shape2);
  pk_tensor y = pk_tensor_1d(x, PK_DTYPE_F32, 64);
  y.rank = 2;
  y.shape[0] = 4;
  y.shape[1] = 16;
  y.strides[0] = 16;
  y.strides[1] = 1;
  EXPECT_ERROR(pk_log_softmax(s, &t, &y), PK_ERROR_INVALID_ARGUMENT, "shape");
  EXPECT_ERROR(pk_layer_norm(s, &t, &t, NULL, NULL, 1e-5, NULL, NULL), PK_ERROR_INVALID_ARGUMENT, "weight");
  EXPECT_ERROR(pk_rms_norm(s, &t, &t, &in, 1e-5, NULL), PK_ERROR_INVALID_ARGUMENT, "cols");

  /* Attention. */
  EXPECT_ERROR(pk_attention_forward(s, NULL), PK_ERROR_INVALID_ARGUMENT, "args");
  pk_attention_args a = pk_attention_args_default();
  CHECK(a.window_left == -1 && a.window_right == -1 && a.causal == 0);
  EXPECT_ERROR(pk_attention_forward(s, &a), PK_ERROR_INVALID_ARGUMENT, "q: rank 0 must be 4");
  const int64_t qshape[4] = {1, 4, 1, 32};
  a.q = a.k = a.v = a.out = pk_tensor_contiguous(x, PK_DTYPE_F64, 4, qshape);
  EXPECT_ERROR(pk_attention_forward(s, &a), PK_ERROR_UNSUPPORTED, "f64");
  EXPECT_ERROR(pk_attention_forward(NULL, &a), PK_ERROR_INVALID_ARGUMENT, "stream");

  /* Decode over a KV cache and the append; FP8 is a KV-cache format only. */
  EXPECT_ERROR(pk_attention_decode(s, NULL), PK_ERROR_INVALID_ARGUMENT, "args");
  pk_decode_args dec = pk_decode_args_default();
  CHECK(dec.window_left == -1 && dec.window_right == -1 && dec.num_splits == 0 && dec.cache.block_table.data == NULL);
  EXPECT_ERROR(pk_attention_decode(s, &dec), PK_ERROR_INVALID_ARGUMENT, "q: rank 0 must be 4");
  pk_kv_append_args app = pk_kv_append_args_default();
  EXPECT_ERROR(pk_kv_cache_append(s, &app), PK_ERROR_INVALID_ARGUMENT, "cache.k: rank 0 must be 4");
  t = in;
  t.dtype = PK_DTYPE_F8E4M3FN;
  o = out;
  o.dtype = PK_DTYPE_F8E4M3FN;
  EXPECT_ERROR(pk_reduce_sum(s, &t, &o), PK_ERROR_UNSUPPORTED, "f8e4m3fn is not a dtype of the reduction family");
  CHECK(pk_dtype_size(PK_DTYPE_F8E4M3FN) == 1 && pk_dtype_size(PK_DTYPE_F8E4M3FNUZ) == 1);

  /* The message buffer helpers. */
  EXPECT_ERROR(pk_reduce_sum(s, NULL, &out), PK_ERROR_INVALID_ARGUMENT, "in");
  const size_t full = strlen(pk_last_error_message());
  char small[8];
  CHECK(pk_last_error_message_copy(small, sizeof small) == full);
  CHECK(strlen(small) == sizeof small - 1);
  CHECK(pk_last_error_message_copy(NULL, 0) == full);
  /* A successful call clears the message. */
  CHECK(pk_stream_synchronize(s) == PK_SUCCESS);
  CHECK(pk_last_error_message()[0] == '\0');

  CHECK(strcmp(pk_status_string(PK_SUCCESS), "success") == 0);
  CHECK(strcmp(pk_status_string(PK_ERROR_UNSUPPORTED), "unsupported") == 0);
  CHECK(strcmp(pk_status_string((pk_status)1234), "unknown pk_status") == 0);
  CHECK(pk_dtype_size(PK_DTYPE_BF16) == 2);
  CHECK(pk_dtype_size((pk_dtype)77) == 0);
  /* Values outside an enumeration's range are valid C; the C++ side must not load them as the enum
   * (UBSan in the host-asan build found pk_memcpy_async doing so). */
  CHECK(pk_tensor_1d(NULL, (pk_dtype)-5, 1).dtype == -5);
  CHECK(strcmp(pk_status_string((pk_status)1000), "unknown pk_status") == 0);
  CHECK(pk_version_string()[0] != '\0');

  CHECK(pk_free(s, x) == PK_SUCCESS);
  CHECK(pk_free(s, total) == PK_SUCCESS);
  CHECK(pk_stream_destroy(s) == PK_SUCCESS);
}

int main(void) {
  for (int i = 0; i < n_elements; ++i) host_x[i] = (float)(i % 19) * 0.25f;
  check_bad_calls();
  check_overflow_on("RTX 3090");
  check_overflow_on("MI300X");
  check_overflow_on("RX 7900 XTX");
  /* One device per emulated arch family: sm80 (wave32 mma.sync), gfx942 (wave64), gfx1100 (wave32 WMMA). */
  check_sum_on("RTX 3090");
  check_sum_on("MI300X");
  check_sum_on("RX 7900 XTX");
  check_sum_on(NULL);
  check_rows_and_attention("RTX 3090");
  check_rows_and_attention("MI300X");
  check_rows_and_attention("RX 7900 XTX");
  pk_stream_t d = NULL;
  CHECK(pk_stream_default(&d) == PK_SUCCESS);
  CHECK(pk_stream_destroy(d) == PK_SUCCESS);
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("all C API checks passed\n");
  return 0;
}

/* pk C API: a thin layer over the C++ API for C, Fortran (interfaces/fortran/pk.f90) and other
 * languages with a C foreign-function interface.
 *
 *   pk_stream_t s;
 *   if (pk_stream_default(&s) != PK_SUCCESS) fprintf(stderr, "%s\n", pk_last_error_message());
 *   float* x;  float* total;
 *   pk_malloc(s, n * sizeof(float), (void**)&x);   pk_malloc(s, sizeof(float), (void**)&total);
 *   pk_memcpy_h2d(s, x, host_x, n * sizeof(float));
 *   pk_tensor in = pk_tensor_1d(x, PK_DTYPE_F32, n), out = pk_tensor_scalar(total, PK_DTYPE_F32);
 *   pk_reduce_sum(s, &in, &out);
 *   pk_memcpy_d2h(s, &host_total, total, sizeof(float));
 *   pk_free(s, x);  pk_free(s, total);  pk_stream_destroy(s);
 *
 * Conventions:
 *  - Every function returns a pk_status; on failure the message (naming the argument and the rule) is
 *    available from pk_last_error_message() on the same thread until that thread's next call returning
 *    a pk_status; each such call resets it, so after PK_SUCCESS it is "".
 *  - No C++ exception and no abort crosses this interface: bad arguments (null pointers, wrong shapes,
 *    unsupported dtypes) return a status.
 *  - Tensors are described by pk_tensor (data, dtype, rank, shape and strides in elements).
 *  - Work is asynchronous on the stream (the host emulator completes each call before returning);
 *    pk_memcpy_h2d/d2h/d2d wait for completion, pk_memcpy_async does not.
 */
#ifndef PK_PK_H
#define PK_PK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------- */
/* Status codes: the same categories as pk::errc. */
typedef enum pk_status {
  PK_SUCCESS = 0,
  PK_ERROR_INVALID_ARGUMENT = 1, /* null pointer, wrong shape/stride, negative size ... */
  PK_ERROR_UNSUPPORTED = 2,      /* dtype, head size, arch or backend not built / not supported */
  PK_ERROR_OUT_OF_MEMORY = 3,
  PK_ERROR_BACKEND = 4,          /* an error of the CUDA/HIP runtime (its message is carried) */
  PK_ERROR_EMULATION = 5,        /* the host emulator detected divergence, deadlock or a limit violation */
  PK_ERROR_NOT_FOUND = 6,        /* e.g. a device name not in the database */
  PK_ERROR_INTERNAL = 7
} pk_status;

/* "success", "invalid_argument", ... (static storage). */
const char* pk_status_string(pk_status status);
/* The message of the last failed pk call on this thread ("" if the last call succeeded). Valid until
 * this thread's next call returning a pk_status. */
const char* pk_last_error_message(void);
/* Copies the last error message into buf (always NUL-terminated when capacity > 0); returns the full
 * length of the message, so that a larger buffer can be retried. */
size_t pk_last_error_message_copy(char* buf, size_t capacity);

/* Library version (PK_VERSION_STRING of the build). */
const char* pk_version_string(void);

/* ---------------------------------------------------------------------------------------------- */
/* Tensor descriptors. */
typedef enum pk_dtype {
  PK_DTYPE_F32 = 0,
  PK_DTYPE_F64 = 1,
  PK_DTYPE_F16 = 2,
  PK_DTYPE_BF16 = 3,
  PK_DTYPE_I32 = 4,
  PK_DTYPE_I64 = 5,
  PK_DTYPE_I8 = 6,
  PK_DTYPE_U8 = 7,
  PK_DTYPE_F8E4M3FN = 8,  /* FP8 e4m3, OCP (NVIDIA, gfx950): bias 7, max 448; KV caches only */
  PK_DTYPE_F8E4M3FNUZ = 9 /* FP8 e4m3 fnuz (gfx942): bias 8, max 240, NaN 0x80; KV caches only */
} pk_dtype;

/* Highest tensor rank a descriptor holds. */
#define PK_MAX_RANK 8

/* A strided view of memory of the stream's device: element (i0, ..., i{rank-1}) is at
 * data + sum(ik * strides[k]) elements. Entries at and beyond `rank` are ignored. Rank 0 is a scalar. */
typedef struct pk_tensor {
  void* data;
  int32_t dtype; /* a pk_dtype */
  int32_t rank;
  int64_t shape[PK_MAX_RANK];
  int64_t strides[PK_MAX_RANK];
} pk_tensor;

/* Descriptor helpers (no allocation, never fail; invalid values are caught by the entry points). */
pk_tensor pk_tensor_scalar(void* data, pk_dtype dtype);
pk_tensor pk_tensor_1d(void* data, pk_dtype dtype, int64_t n);
/* Row-major (last dimension contiguous) tensor of the given rank (<= PK_MAX_RANK; larger ranks give
 * rank = -1, which every entry point rejects). */
pk_tensor pk_tensor_contiguous(void* data, pk_dtype dtype, int32_t rank, const int64_t* shape);
/* Size in bytes of one element of dtype (0 for an unknown dtype). */
size_t pk_dtype_size(pk_dtype dtype);

/* ---------------------------------------------------------------------------------------------- */
/* Streams: an opaque handle owning a pk::stream. Destroying it never destroys a wrapped native stream. */
typedef struct pk_stream_impl* pk_stream_t;

/* The host emulator impersonating `device_name` (an archdb name or alias, e.g. "RTX 3090", "MI300X");
 * NULL selects $PK_HOST_DEVICE or the default emulated device. */
pk_status pk_stream_create_host(const char* device_name, pk_stream_t* out);
/* Wraps an existing cudaStream_t (NULL: the default stream) of CUDA device `ordinal` (not owned). */
pk_status pk_stream_create_cuda(void* native_stream, int ordinal, pk_stream_t* out);
/* Wraps an existing hipStream_t (NULL: the default stream) of HIP device `ordinal` (not owned). */
pk_status pk_stream_create_hip(void* native_stream, int ordinal, pk_stream_t* out);
/* The GPU if this build has a GPU backend and a device is present, else the emulator. */
pk_status pk_stream_default(pk_stream_t* out);
/* Releases the handle (NULL is accepted). */
pk_status pk_stream_destroy(pk_stream_t stream);
/* Waits for all work enqueued on the stream. */
pk_status pk_stream_synchronize(pk_stream_t stream);
/* "host_sm80 impersonating RTX 3090", ... into buf (NUL-terminated when capacity > 0); *length, if not
 * NULL, receives the full length. */
pk_status pk_stream_describe(pk_stream_t stream, char* buf, size_t capacity, size_t* length);

/* ---------------------------------------------------------------------------------------------- */
/* Memory of the stream's device (host memory for the emulator), 256-byte aligned. */
pk_status pk_malloc(pk_stream_t stream, size_t bytes, void** out);
pk_status pk_free(pk_stream_t stream, void* ptr);

typedef enum pk_memcpy_kind {
  PK_MEMCPY_HOST_TO_DEVICE = 0,
  PK_MEMCPY_DEVICE_TO_HOST = 1,
  PK_MEMCPY_DEVICE_TO_DEVICE = 2
} pk_memcpy_kind;

/* Blocking copies. */
pk_status pk_memcpy_h2d(pk_stream_t stream, void* device_dst, const void* host_src, size_t bytes);
pk_status pk_memcpy_d2h(pk_stream_t stream, void* host_dst, const void* device_src, size_t bytes);
pk_status pk_memcpy_d2d(pk_stream_t stream, void* device_dst, const void* device_src, size_t bytes);
/* Enqueued copy: host memory must stay valid until the stream is synchronized. */
pk_status pk_memcpy_async(pk_stream_t stream, void* dst, const void* src, size_t bytes, pk_memcpy_kind kind);
pk_status pk_memset_async(pk_stream_t stream, void* device_dst, int byte_value, size_t bytes);

/* ---------------------------------------------------------------------------------------------- */
/* Reductions (C++: pk/reduction/reduce.hpp). Accumulation: f16/bf16/f32 in fp32, f64 in fp64, integers
 * in int64. sum/prod: f64 f32 f16 bf16 i32 i64; min/max/argmin/argmax: also i8 u8. Identities for empty
 * inputs: sum 0, prod 1, min +inf (integers: the largest value), max -inf (the lowest), arg* -1.
 * argmin/argmax give the first index of the extreme value, as int64 (NaN counts as the most extreme).
 * Limits: every element count (product of extents), strided offset and byte extent is computed in
 * overflow-checked int64 arithmetic and must fit 2^63 - 1 bytes; otherwise PK_ERROR_INVALID_ARGUMENT
 * naming the argument, and nothing is written. Every data pointer of the reductions and row operations
 * (inputs, outputs, offsets, weights, statistics) must be aligned to its element size; otherwise
 * PK_ERROR_INVALID_ARGUMENT naming it. */
typedef enum pk_reduce_op {
  PK_REDUCE_SUM = 0,
  PK_REDUCE_PROD = 1,
  PK_REDUCE_MIN = 2,
  PK_REDUCE_MAX = 3,
  PK_REDUCE_ARGMIN = 4,
  PK_REDUCE_ARGMAX = 5
} pk_reduce_op;

typedef struct pk_reduce_options {
  int32_t reproducible; /* non-zero: f32/f64 device-wide sum with the same bits on every device and plan;
                           a NaN result is the canonical quiet NaN (0x7fc00000 / 0x7ff8000000000000) */
  const char* policy;   /* NULL: the planner chooses; otherwise the name of a compiled candidate (`pk candidates`):
                           unknown -> PK_ERROR_INVALID_ARGUMENT, not fitting -> PK_ERROR_UNSUPPORTED */
} pk_reduce_options;
/* {0, NULL}. Every `opt` parameter below also accepts NULL for these defaults. */
pk_reduce_options pk_reduce_options_default(void);

/* Device-wide: `in` any rank, contiguous; `out` one element (rank 0, or all extents 1) of in's dtype
 * (int64 for argmin/argmax). */
pk_status pk_reduce(pk_stream_t stream, pk_reduce_op op, const pk_tensor* in, const pk_tensor* out,
                    const pk_reduce_options* opt);
pk_status pk_reduce_sum(pk_stream_t stream, const pk_tensor* in, const pk_tensor* out);
pk_status pk_reduce_prod(pk_stream_t stream, const pk_tensor* in, const pk_tensor* out);
pk_status pk_reduce_min(pk_stream_t stream, const pk_tensor* in, const pk_tensor* out);
pk_status pk_reduce_max(pk_stream_t stream, const pk_tensor* in, const pk_tensor* out);
pk_status pk_reduce_argmin(pk_stream_t stream, const pk_tensor* in, const pk_tensor* out);
pk_status pk_reduce_argmax(pk_stream_t stream, const pk_tensor* in, const pk_tensor* out);

/* Along one axis of a strided tensor of rank 1..4: `out` has in's shape without `axis` (rank 0 when in
 * has rank 1), its own strides, in's dtype (int64 for argmin/argmax). */
pk_status pk_reduce_axis(pk_stream_t stream, pk_reduce_op op, const pk_tensor* in, int32_t axis, const pk_tensor* out,
                         const pk_reduce_options* opt);

/* out[i] = op(in[offsets[i] .. offsets[i+1])) for i < segments: `in` 1-D contiguous, `offsets` 1-D int64
 * of segments + 1 non-decreasing values (device memory), `out` 1-D contiguous of `segments` elements. */
pk_status pk_segmented_reduce(pk_stream_t stream, pk_reduce_op op, const pk_tensor* in, const pk_tensor* offsets,
                              const pk_tensor* out, const pk_reduce_options* opt);

/* Mean and variance (M2 / (n - correction); NaN when n <= correction) of a contiguous tensor; `mean` and
 * `var` hold one element of the accumulator dtype (f32 for f16/bf16/f32 inputs, f64 for f64). Computed
 * on x - x[0] (a large common offset costs no accuracy); both NaN when empty or when any element is NaN
 * or +-inf. */
pk_status pk_reduce_mean_var(pk_stream_t stream, const pk_tensor* in, const pk_tensor* mean, const pk_tensor* var,
                             int32_t correction);

/* ---------------------------------------------------------------------------------------------- */
/* Row operations over the last axis of [rows, cols] tensors (C++: pk/reduction/norm.hpp): rank 2,
 * strides[1] == 1, any row stride. dtypes f64 f32 f16 bf16 (16-bit types compute in fp32); y has x's
 * shape and dtype and may alias x. Special values (norm.hpp has every rule): softmax/log_softmax of a row
 * holding NaN or +inf is NaN everywhere, an all -inf row gives 0 / -inf; layer_norm of a constant row is
 * exactly bias (0), rms_norm of a zero row 0, also with eps = 0; NaN or +-inf make a layer_norm row NaN. */
pk_status pk_softmax(pk_stream_t stream, const pk_tensor* x, const pk_tensor* y);
pk_status pk_log_softmax(pk_stream_t stream, const pk_tensor* x, const pk_tensor* y);
/* y = (x - mean) * rstd * weight (+ bias). weight, bias: 1-D contiguous, cols elements of x's dtype; bias,
 * mean and rstd (rows fp32 values, device memory) may be NULL. eps >= 0. */
pk_status pk_layer_norm(pk_stream_t stream, const pk_tensor* x, const pk_tensor* y, const pk_tensor* weight,
                        const pk_tensor* bias, double eps, float* mean, float* rstd);
/* y = x * rstd * weight, rstd = 1 / sqrt(mean(x^2) + eps). rstd may be NULL. */
pk_status pk_rms_norm(pk_stream_t stream, const pk_tensor* x, const pk_tensor* y, const pk_tensor* weight, double eps,
                      float* rstd);
/* Per row: mean and variance (M2 / (cols - correction)); mean and var are 1-D, `rows` elements of the
 * accumulator dtype (f32 for f16/bf16/f32 inputs, f64 for f64), contiguous. */
pk_status pk_row_mean_var(pk_stream_t stream, const pk_tensor* x, const pk_tensor* mean, const pk_tensor* var,
                          int32_t correction);

/* ---------------------------------------------------------------------------------------------- */
/* Attention forward (C++: pk/attention/attention.hpp, whose argument rules are these).
 * q, out: [batch, seqlen_q, heads_q, head_dim]; k, v: [batch, seqlen_k, heads_kv, head_dim]. Rank 4, or
 * rank 3 [tokens, heads, head_dim], which is rank 4 with batch 1. The last dimension contiguous, other
 * strides free (non-negative multiples of 8 elements; a dimension of extent 1 may have any stride); data
 * 16-byte aligned. dtypes bf16, f16 (out has q's dtype); head_dim 32, 64, 96, 128, 192, 256; heads_kv
 * divides heads_q; batch, heads_q <= 65535; out's elements distinct; out and lse share no byte with q, k,
 * v, cu_seqlens or each other (checked).
 * Variable-length batches: packed tokens (rank 3 [total, heads, head_dim] or rank 4 with batch 1) plus
 * cu_seqlens_q/k (varlen_batch + 1 non-decreasing int32, device memory; sequence b is tokens
 * [cu[b], cu[b+1])) and max_seqlen_q/k (>= every sequence's length; checked on the emulator only).
 * Masks, bottom-right aligned (diag = seqlen_k - seqlen_q per sequence): query i sees key j iff
 * i + diag - window_left <= j <= i + diag + window_right; -1: no bound; causal is window_right = 0.
 * Windows up to INT32_MAX are accepted: window_left >= seqlen_k - 1 and window_right >= seqlen_q - 1
 * (varlen: the packed token counts) mask nothing and act as -1.
 * Fully masked rows give output 0 and LSE -inf. */
typedef struct pk_attention_args {
  pk_tensor q, k, v, out;
  float* lse;                   /* optional fp32 [batch, heads_q, seqlen_q] of q's rank-4 view, contiguous;
                                   varlen (batch 1, seqlen_q = total_q): [heads_q, total_q] */
  float softmax_scale;          /* 0: 1/sqrt(head_dim) */
  int32_t causal;               /* non-zero: causal mask, bottom-right aligned */
  int32_t window_left;          /* sliding window; -1: unbounded */
  int32_t window_right;         /* -1: unbounded */
  const int32_t* cu_seqlens_q;  /* NULL for fixed-length batches */
  const int32_t* cu_seqlens_k;
  int32_t varlen_batch;
  int32_t max_seqlen_q;
  int32_t max_seqlen_k;
  const char* policy;           /* NULL: the planner's choice; else the name of a compiled candidate */
} pk_attention_args;
/* Everything null/zero except window_left = window_right = -1. */
pk_attention_args pk_attention_args_default(void);
pk_status pk_attention_forward(pk_stream_t stream, const pk_attention_args* args);

/* ---------------------------------------------------------------------------------------------- */
/* Attention over a KV cache: decode, speculative decoding, chunked appends (C++: pk/attention/decode.hpp,
 * whose argument rules are these).
 *  - q, out: [batch, seqlen_q, heads_q, head_dim], rank 4, seqlen_q 1..16; the last dimension contiguous,
 *    the others non-negative multiples of 8 elements, data 16-byte aligned; dtypes bf16 or f16 (out has q's
 *    dtype); head_dim 64, 128 or 256; out's elements distinct; outputs share no byte with inputs (decode.hpp).
 *  - The cache, paged: k and v [num_pages, page_size, heads_kv, head_dim] (rank 4) with block_table
 *    [batch, max_pages_per_seq] (PK_DTYPE_I32, rank 2, device memory, any row stride, strides[1] == 1):
 *    token t of sequence b is row t % page_size of page block_table[b][t / page_size]. page_size a power
 *    of two from 1 to 256 (others: PK_ERROR_UNSUPPORTED). Contiguous (block_table.data NULL; the rest of
 *    the block_table descriptor is then ignored): k and v [batch, capacity, heads_kv, head_dim]. Strides
 *    as for q; heads_kv divides heads_q (grouped-query attention).
 *  - seqlens (device int32 [batch], not NULL): tokens in the cache for each sequence, the new ones included; 0 <=
 *    seqlens[b] <= the capacity (max_pages_per_seq * page_size, or capacity). The query tokens are the
 *    last seqlen_q positions of the sequence: masks are bottom-right aligned (diag = seqlens[b] -
 *    seqlen_q), as for pk_attention_forward: query i sees cache position j iff i + diag - window_left <=
 *    j <= i + diag + window_right (causal: window_right = 0; -1: no bound). A sequence with seqlens[b] = 0
 *    gives output 0, LSE -inf.
 *  - KV dtypes: q's dtype, or FP8 e4m3 in either variant (PK_DTYPE_F8E4M3FN: OCP, NVIDIA and gfx950
 *    hardware; PK_DTYPE_F8E4M3FNUZ: gfx942 hardware): the cache's dtype says which one it holds and it is
 *    never read as the other. FP8 caches take per-KV-head fp32 scales k_scale/v_scale (device [heads_kv];
 *    NULL: 1.0; NULL for 16-bit caches; finite and positive): the real value is code * scale. q and out
 *    are never FP8. FP8 cache strides are multiples of 16 elements (16-byte rows). FP8 at head_dim 256 is
 *    unsupported on devices with 64 KB of shared memory per block (MI300X, MI250X).
 *  - Validation of the block table and seqlens contents: on the emulator (where device memory is host
 *    memory) they are checked and bad entries give PK_ERROR_INVALID_ARGUMENT before anything is written.
 *    On a GPU they are the caller's precondition; the kernels still never read or write out of bounds: a
 *    page index outside [0, num_pages) or a length past the capacity makes the affected output rows NaN
 *    (decode) or writes nothing (append), and sets *error (if not NULL) to 1.
 *  - Splits: num_splits 0 lets the planner cut each sequence's keys into splits (FlashDecoding) so that
 *    batch x heads_kv x splits blocks fill the device; 1..512 forces a count. The partial results are
 *    merged by a second kernel (workspace: the stream's scratch or pk::set_workspace_allocator). */
typedef struct pk_kv_cache {
  pk_tensor k, v;               /* paged [num_pages, page_size, heads_kv, head_dim];
                                   contiguous [batch, capacity, heads_kv, head_dim] */
  pk_tensor block_table;        /* PK_DTYPE_I32 [batch, max_pages_per_seq]; data NULL: contiguous cache */
  const int32_t* seqlens;       /* device int32 [batch]: tokens in the cache (decode: the new ones included) */
  const float* k_scale;         /* FP8 caches only: fp32 [heads_kv] dequantization scales (NULL: 1.0) */
  const float* v_scale;
} pk_kv_cache;

typedef struct pk_decode_args {
  pk_tensor q;                  /* [batch, seqlen_q, heads_q, head_dim], seqlen_q 1..16 */
  pk_tensor out;                /* like q (written) */
  pk_kv_cache cache;
  float* lse;                   /* optional fp32 [batch, heads_q, seqlen_q], contiguous */
  float softmax_scale;          /* 0: 1/sqrt(head_dim) */
  int32_t causal;               /* non-zero: causal among the new tokens, bottom-right aligned */
  int32_t window_left;          /* sliding window; -1: unbounded */
  int32_t window_right;         /* -1: unbounded */
  int32_t num_splits;           /* 0: the planner's; else 1..512 (at most one split per key tile) */
  int32_t max_seqlen_k;         /* the longest sequence, for the planner's split count; 0: the capacity */
  int32_t* error;               /* optional device int32: set to 1 when the GPU finds a bad slot (see above) */
  const char* policy;           /* NULL: the plan's choice; else the name of a compiled decode candidate */
} pk_decode_args;
/* Everything null/zero (a contiguous cache, no LSE, the planner's splits) except window_left =
 * window_right = -1. */
pk_decode_args pk_decode_args_default(void);
pk_status pk_attention_decode(pk_stream_t stream, const pk_decode_args* args);

/* Writes k_new/v_new into the cache: new token t of sequence b goes to position cache.seqlens[b] + t
 * (seqlens: the tokens already in the cache; pk does not update them: decode afterwards with seqlens +
 * new_tokens). k_new, v_new: [batch, new_tokens, heads_kv, head_dim], rank 4, of the cache's dtype, or
 * bf16/f16 for FP8 caches (quantized with 1/scale, round to nearest even, saturating at the format's
 * largest finite value). A slot out of range (page index outside [0, num_pages), a position past the
 * capacity) is PK_ERROR_INVALID_ARGUMENT on the emulator; on a GPU nothing is written and *error is set. */
typedef struct pk_kv_append_args {
  pk_kv_cache cache;
  pk_tensor k_new, v_new;       /* [batch, new_tokens, heads_kv, head_dim] */
  int32_t* error;               /* optional device int32: 1 when a slot is out of range (nothing written) */
} pk_kv_append_args;
/* Everything null/zero (a contiguous cache). */
pk_kv_append_args pk_kv_append_args_default(void);
pk_status pk_kv_cache_append(pk_stream_t stream, const pk_kv_append_args* args);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PK_PK_H */

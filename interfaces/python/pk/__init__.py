"""pk from Python: pk's reductions, row operations, attention and decode on NumPy arrays, PyTorch or CuPy
tensors, or anything with ``__dlpack__`` or the buffer protocol.

Where work runs follows the memory:

* host memory (NumPy arrays, CPU tensors, buffers) runs on pk's GPU emulator, impersonating
  ``device=`` (any name or alias from :func:`devices`, e.g. ``"MI300X"``, ``"RTX 3090"``; default
  ``$PK_HOST_DEVICE``, else the A100-SXM4-80GB). The call returns when the work is done.
* CUDA (or ROCm) tensors run on the GPU, asynchronously, on the caller's current stream: PyTorch's
  ``torch.cuda.current_stream()``, CuPy's ``cupy.cuda.get_current_stream()``, or ``stream=`` (a handle
  integer or an object with ``cuda_stream`` / ``ptr``). The build must have the CUDA (HIP) backend.

Outputs are new arrays of the inputs' kind (NumPy, PyTorch, CuPy) unless ``out=`` is given. Every
argument rule is pk's C++ API's (docs/api.md); a broken rule raises :class:`InvalidArgument`, a valid
request pk has no kernel for :class:`Unsupported`, anything else :class:`Error`, each carrying pk's
message. dtypes: ``f64 f32 f16 bf16 i32 i64 i8 u8`` as the frameworks name them (NumPy has no bf16).
Every function that launches work takes ``bind=True`` to return a :class:`Bound` call instead, which
re-enqueues the same work without converting its arguments again (loops, benchmarks).

Example::

    import numpy as np, pk
    x = np.random.default_rng(1).standard_normal(1 << 20).astype(np.float32)
    pk.sum(x)                           # on the emulator (an A100's code path)
    pk.softmax(x.reshape(1024, 1024), device="MI300X")
    print(pk.plan("attention", device="H200", head_dim=128, seqlen_q=4096)["why"])
"""

from . import _pk

__all__ = [
    "Error", "InvalidArgument", "Unsupported", "NotFound",
    "devices", "plan", "version",
    "sum", "prod", "min", "max", "argmin", "argmax", "reduce", "segmented_reduce", "mean_var",
    "softmax", "log_softmax", "layer_norm", "rms_norm", "row_mean_var",
    "attention", "decode", "kv_cache_append", "Bound",
]

version = _pk.version


class Error(RuntimeError):
    """A pk call failed; ``str(e)`` is pk's status (``"code: message"``)."""


class InvalidArgument(Error, ValueError):
    """An argument broke a rule of pk's API; the message names the argument and the rule."""


class Unsupported(Error, NotImplementedError):
    """A valid request pk has no kernel for (dtype, head size, backend not built ...)."""


class NotFound(Error, LookupError):
    """A name (device, candidate policy) pk does not know."""


_pk.set_error_types({"error": Error, "invalid_argument": InvalidArgument, "unsupported": Unsupported,
                     "not_found": NotFound})

# DLPack device types (dlpack.h) of GPU memory: CUDA, ROCm.
_DL_CUDA, _DL_ROCM = 2, 10


def _framework(x):
    return type(x).__module__.split(".")[0]


def _is_gpu(x):
    dev = getattr(x, "__dlpack_device__", None)
    return dev is not None and dev()[0] in (_DL_CUDA, _DL_ROCM)


def _stream_handle(x, stream):
    """The native stream a call on x's memory runs on: `stream`, else x's framework's current stream."""
    if stream is not None:
        for attr in ("cuda_stream", "ptr", "handle"):
            if hasattr(stream, attr):
                return int(getattr(stream, attr))
        return int(stream)
    if not _is_gpu(x):
        return 0
    fw = _framework(x)
    if fw == "torch":
        import torch
        return int(torch.cuda.current_stream(x.device).cuda_stream)
    if fw == "cupy":
        import cupy
        return int(cupy.cuda.get_current_stream().ptr)
    return 0


def _arg(x, handle):
    """x as the native layer takes it: a DLPack capsule (produced for `handle`'s stream) or a buffer."""
    if x is None:
        return None
    if _framework(x) == "torch" and str(x.dtype).startswith("torch.float8"):
        x = x.view(__import__("torch").uint8)  # DLPack 0.6 has no FP8 type: the codes travel as u8
    if hasattr(x, "__dlpack__"):
        if _is_gpu(x):
            # DLPack: 1 is CUDA's legacy default stream (0 is not allowed); the producer orders its own
            # stream before this one.
            return x.__dlpack__(stream=handle if handle != 0 else 1)
        try:
            return x.__dlpack__()
        except BufferError:
            pass  # e.g. a read-only NumPy array (DLPack 0.6 cannot say read-only): the buffer protocol can
    return x


_NP = {"f64": "float64", "f32": "float32", "f16": "float16", "i32": "int32", "i64": "int64", "i8": "int8",
       "u8": "uint8"}
_TORCH = {"f64": "float64", "f32": "float32", "f16": "float16", "bf16": "bfloat16", "i32": "int32", "i64": "int64",
          "i8": "int8", "u8": "uint8"}


_FORMAT = {"d": "f64", "f": "f32", "e": "f16", "b": "i8", "B": "u8"}


def _dtype_name(x):
    """pk's name of x's element type, from its framework's dtype or its buffer format."""
    if not hasattr(x, "dtype"):
        mv = memoryview(x)
        fmt = mv.format.lstrip("@=<")
        if fmt in _FORMAT:
            return _FORMAT[fmt]
        if fmt in ("i", "l", "q", "h") and mv.itemsize in (4, 8):
            return "i32" if mv.itemsize == 4 else "i64"
        raise Unsupported(f"unsupported: buffer format '{mv.format}' has no pk dtype")
    s = str(x.dtype).replace("torch.", "")
    names = {"float64": "f64", "float32": "f32", "float16": "f16", "bfloat16": "bf16", "int32": "i32",
             "int64": "i64", "int8": "i8", "uint8": "u8"}
    if s in names:
        return names[s]
    raise Unsupported(f"unsupported: dtype {s} has no pk dtype")


def _empty(like, shape, dtype):
    """A new uninitialized array of `like`'s framework and device."""
    fw = _framework(like)
    if fw == "torch":
        import torch
        return torch.empty(tuple(shape), dtype=getattr(torch, _TORCH[dtype]), device=like.device)
    if fw == "cupy":
        import cupy
        with cupy.cuda.Device(like.device.id):
            return cupy.empty(tuple(shape), dtype=_NP[dtype])
    import numpy
    if dtype not in _NP:
        raise Unsupported(f"unsupported: NumPy has no {dtype} arrays")
    return numpy.empty(tuple(shape), dtype=_NP[dtype])


def _shape(x):
    return tuple(int(v) for v in (x.shape if hasattr(x, "shape") else memoryview(x).shape))


def _scalar(r):
    """A reduction's one-element result: a NumPy scalar for host memory, a 0-d tensor on GPUs."""
    if _is_gpu(r):
        return r.reshape(())
    return r.reshape(())[()] if hasattr(r, "reshape") else r[0]


class Bound:
    """A pk call bound to its tensors, options and stream (what ``bind=True`` returns): ``run()`` enqueues
    the same work again, with no argument conversion, and returns ``run.result`` (the output arrays the
    call wrote: for a reduction the one-element array, not a scalar). For loops and benchmarks where
    Python's per-call cost would show. It keeps the tensors' memory alive while it exists; their contents
    may change between runs, their storage must not (no resize).
    """

    def __init__(self, native, result):
        self._native = native
        self.result = result

    def __call__(self):
        self._native()
        return self.result


def _done(native_result, result, bind):
    return Bound(native_result, result) if bind else result


# ------------------------------------------------------------------------------------------------
# Devices and plans


def devices():
    """What pk knows and sees: ``{"database": [...], "gpus": [...], "code_targets": [...]}``.

    ``database``: every device of pk's architecture database (name, vendor, isa, sm_count, warp_size,
    shared memory, L2, bandwidth, bf16 peak); any of these names can be given as ``device=`` to run on
    the emulator. ``gpus``: the CUDA/HIP devices this build can use, with the code target pk runs on them.
    ``code_targets``: the code targets compiled into this build (host_* are emulator targets).
    """
    return _pk.devices()


def plan(family, device=None, **problem):
    """The plan pk would use on `device` (a database name; default: the emulator's default device).

    Returns a dict: ``name`` (the chosen candidate), ``predicted_us``, ``why`` (the reasons, as
    ``pk plan`` prints them), ``candidates`` (each with ``fits``, ``reason``, ``predicted_us``), and per family:

    * ``"reduce"``: ``n``, ``dtype`` (default f32), ``reproducible``;
    * ``"rows"``: ``op`` (softmax, log_softmax, layer_norm, rms_norm, mean_var), ``rows``, ``cols``, ``dtype``;
    * ``"attention"``: ``dtype`` (bf16), ``batch``, ``heads_q``, ``heads_kv``, ``head_dim``, ``seqlen_q``,
      ``seqlen_k`` (default seqlen_q), ``causal``, ``window_left``, ``window_right``; adds ``strategy``,
      ``grid``, ``block_threads``, ``smem_bytes``;
    * ``"decode"``: ``dtype``, ``kv_dtype``, ``batch``, ``heads_q``, ``heads_kv``, ``head_dim``, ``seqlen_q``,
      ``context``, ``page_size`` (0: contiguous), ``causal``, windows, ``num_splits``; adds ``splits``,
      ``rows`` (packed query rows per KV head) and ``m_blocks``.
    """
    device = device or _pk.default_device()
    p = dict(problem)

    def take(name, default):
        return p.pop(name, default)

    if family == "reduce":
        r = _pk.plan_reduce(device, int(take("n", 1 << 20)), take("dtype", "f32"), bool(take("reproducible", False)))
    elif family == "rows":
        r = _pk.plan_rows(device, take("op", "softmax"), int(take("rows", 1)), int(take("cols", 1)),
                          take("dtype", "f32"))
    elif family == "attention":
        seqlen_q = int(take("seqlen_q", 1024))
        heads_q = int(take("heads_q", 16))
        r = _pk.plan_attention(device, take("dtype", "bf16"), int(take("batch", 1)), heads_q,
                               int(take("heads_kv", heads_q)), int(take("head_dim", 128)), seqlen_q,
                               int(take("seqlen_k", seqlen_q)), bool(take("causal", False)),
                               int(take("window_left", -1)), int(take("window_right", -1)))
    elif family == "decode":
        heads_q = int(take("heads_q", 32))
        r = _pk.plan_decode(device, take("dtype", "bf16"), take("kv_dtype", "bf16"), int(take("batch", 1)), heads_q,
                            int(take("heads_kv", heads_q)), int(take("head_dim", 128)), int(take("seqlen_q", 1)),
                            int(take("context", 4096)), int(take("page_size", 0)), bool(take("causal", False)),
                            int(take("window_left", -1)), int(take("window_right", -1)), int(take("num_splits", 0)))
    else:
        raise InvalidArgument(f"invalid_argument: family = '{family}': must be reduce, rows, attention or decode")
    if p:
        raise InvalidArgument(f"invalid_argument: {family}: unknown problem argument(s) {sorted(p)}")
    return r


# ------------------------------------------------------------------------------------------------
# Reductions


def reduce(x, op="sum", axis=None, *, out=None, reproducible=False, policy=None, device=None, stream=None,
           bind=False):
    """op(x) over every element (``axis=None``, x contiguous) or along one axis of a strided x (rank 1..4).

    op: ``sum prod min max argmin argmax``. sum/prod take f64 f32 f16 bf16 i32 i64; min/max/argmin/argmax
    also i8 u8. Accumulates 16-bit floats and f32 in fp32, f64 in fp64, integers in int64 (integer sums
    wrap modulo 2^64, then narrow). Empty input: the identity (sum 0, prod 1, min +inf, max -inf; arg ops
    -1). argmin/argmax give the first index of the extreme as int64; NaN counts as the most extreme.

    Returns x's dtype (int64 for arg ops): a scalar (NumPy) or 0-d tensor (GPU) without axis, else an array
    of x's shape without `axis`. ``reproducible=True`` (f32/f64 sum): the same bits on every device, plan and
    the emulator. ``policy``: a compiled candidate's name instead of the plan's (``pk candidates``).
    ``bind=True`` returns a :class:`Bound` call instead of running it.
    """
    handle = _stream_handle(x, stream)
    dt = "i64" if op in ("argmin", "argmax") else _dtype_name(x)
    if axis is None:
        r = out if out is not None else _empty(x, (1,), dt)
        n = _pk.reduce(op, _arg(x, handle), _arg(r, handle), reproducible, policy, device, handle, bind)
        return _done(n, r, True) if bind else (r if out is not None else _scalar(r))
    shape = _shape(x)
    axis = int(axis)
    if -len(shape) <= axis < 0:
        axis += len(shape)
    oshape = shape[:axis] + shape[axis + 1:] if 0 <= axis < len(shape) else shape
    r = out if out is not None else _empty(x, oshape if oshape else (1,), dt)
    n = _pk.reduce_axis(op, _arg(x, handle), axis, _arg(r, handle), reproducible, policy, device, handle, bind)
    if bind:
        return _done(n, r, True)
    if out is None and not oshape:
        return _scalar(r)
    return r


def sum(x, axis=None, **kw):  # noqa: A001 - pk's names follow the operation
    """The sum of x (see :func:`reduce`)."""
    return reduce(x, "sum", axis, **kw)


def prod(x, axis=None, **kw):
    """The product of x (see :func:`reduce`)."""
    return reduce(x, "prod", axis, **kw)


def min(x, axis=None, **kw):  # noqa: A001
    """The minimum of x (see :func:`reduce`)."""
    return reduce(x, "min", axis, **kw)


def max(x, axis=None, **kw):  # noqa: A001
    """The maximum of x (see :func:`reduce`)."""
    return reduce(x, "max", axis, **kw)


def argmin(x, axis=None, **kw):
    """The first index of x's minimum, int64 (see :func:`reduce`)."""
    return reduce(x, "argmin", axis, **kw)


def argmax(x, axis=None, **kw):
    """The first index of x's maximum, int64 (see :func:`reduce`)."""
    return reduce(x, "argmax", axis, **kw)


def segmented_reduce(x, offsets, op="sum", *, out=None, policy=None, device=None, stream=None):
    """``out[i] = op(x[offsets[i]:offsets[i+1]])``: x contiguous, offsets int64 [segments + 1] on x's device.

    Returns an array of len(offsets) - 1 values of x's dtype (int64 for argmin/argmax: the index inside
    the segment). Empty segments give the identity (see :func:`reduce`).
    """
    handle = _stream_handle(x, stream)
    dt = "i64" if op in ("argmin", "argmax") else _dtype_name(x)
    segments = _shape(offsets)[0] - 1 if len(_shape(offsets)) == 1 else -1
    r = out if out is not None else _empty(x, (segments if segments > 0 else 0,), dt)
    _pk.segmented_reduce(op, _arg(x, handle), _arg(offsets, handle), _arg(r, handle), policy, device, handle)
    return r


def mean_var(x, correction=0, *, device=None, stream=None):
    """(mean, variance) of every element of a contiguous x, in fp32 (f64 for f64 input).

    Welford/Chan on ``x - x[0]``; ``var = M2 / (n - correction)``. NaN for an empty input or one holding
    NaN or +-inf. Returns scalars (NumPy) or 0-d tensors (GPU).
    """
    handle = _stream_handle(x, stream)
    acc = "f64" if _dtype_name(x) == "f64" else "f32"
    m, v = _empty(x, (1,), acc), _empty(x, (1,), acc)
    _pk.mean_var(_arg(x, handle), _arg(m, handle), _arg(v, handle), int(correction), device, handle)
    return _scalar(m), _scalar(v)


# ------------------------------------------------------------------------------------------------
# Row operations: over the last axis of x [..., cols] (last axis contiguous; the leading axes must fold
# into rows of one stride). dtypes f64 f32 f16 bf16; math in fp32 (fp64 for f64). out may be x (in place).


def _rows(op, x, out, weight=None, bias=None, eps=1e-5, stats=False, policy=None, device=None, stream=None,
          bind=False):
    handle = _stream_handle(x, stream)
    y = out if out is not None else _empty(x, _shape(x), _dtype_name(x))
    rows = 1
    for d in _shape(x)[:-1]:
        rows *= d
    mean = rstd = None
    if stats:
        mean = _empty(x, (rows,), "f32")
        rstd = _empty(x, (rows,), "f32")
    n = _pk.rows(op, _arg(x, handle), _arg(y, handle), _arg(weight, handle), _arg(bias, handle), float(eps),
                 _arg(mean, handle), _arg(rstd, handle), policy, device, handle, bind)
    return _done(n, (y, mean, rstd) if stats else y, bind)


def softmax(x, *, out=None, policy=None, device=None, stream=None, bind=False):
    """softmax over the last axis. An all -inf row gives 0; a -inf among other values gives exactly 0; a row
    holding NaN or +inf is NaN everywhere (as PyTorch). ``policy``: a row candidate's name (``pk.plan("rows")``).
    """
    return _rows("softmax", x, out, policy=policy, device=device, stream=stream, bind=bind)


def log_softmax(x, *, out=None, policy=None, device=None, stream=None, bind=False):
    """log_softmax over the last axis (special values as :func:`softmax`; an all -inf row gives -inf)."""
    return _rows("log_softmax", x, out, policy=policy, device=device, stream=stream, bind=bind)


def layer_norm(x, weight, bias=None, eps=1e-5, *, return_stats=False, out=None, policy=None, device=None,
               stream=None, bind=False):
    """``y = (x - mean) * rstd * weight (+ bias)`` per row; weight and bias: [cols] of x's dtype.

    A constant row gives exactly bias (0), also with eps = 0; NaN or +-inf in a row: a NaN row.
    ``return_stats=True`` returns ``(y, mean, rstd)`` with fp32 [rows] statistics.
    """
    return _rows("layer_norm", x, out, weight, bias, eps, return_stats, policy, device, stream, bind)


def rms_norm(x, weight, eps=1e-5, *, return_stats=False, out=None, policy=None, device=None, stream=None,
             bind=False):
    """``y = x * rstd * weight``, ``rstd = 1 / sqrt(mean(x^2) + eps)`` per row; a zero row gives 0.

    ``return_stats=True`` returns ``(y, None, rstd)`` (fp32 [rows]).
    """
    r = _rows("rms_norm", x, out, weight, None, eps, return_stats, policy, device, stream, bind)
    if return_stats and not bind:
        return r[0], None, r[2]
    return r


def row_mean_var(x, correction=0, *, device=None, stream=None):
    """Per-row (mean, var) of x [..., cols] in fp32 (f64 for f64 input), as :func:`mean_var`."""
    handle = _stream_handle(x, stream)
    acc = "f64" if _dtype_name(x) == "f64" else "f32"
    rows = 1
    for d in _shape(x)[:-1]:
        rows *= d
    m, v = _empty(x, (rows,), acc), _empty(x, (rows,), acc)
    _pk.row_mean_var(_arg(x, handle), _arg(m, handle), _arg(v, handle), int(correction), device, handle)
    return m, v


# ------------------------------------------------------------------------------------------------
# Attention


def attention(q, k, v, *, causal=False, window=(-1, -1), softmax_scale=0.0, cu_seqlens_q=None, cu_seqlens_k=None,
              max_seqlen_q=0, max_seqlen_k=0, return_lse=False, out=None, policy=None, device=None, stream=None,
              bind=False):
    """FlashAttention-style forward: ``softmax(q k^T * scale + mask) v`` with fp32 accumulation.

    q, out: [batch, seqlen_q, heads_q, head_dim]; k, v: [batch, seqlen_k, heads_kv, head_dim] (rank 3 =
    batch 1), bf16 or f16, last axis contiguous, other strides multiples of 8 elements, 16-byte aligned
    data. head_dim 32, 64, 96, 128, 192, 256; heads_kv divides heads_q (GQA/MQA). Masks are bottom-right
    aligned: with ``diag = seqlen_k - seqlen_q`` query i sees key j iff
    ``i + diag - window[0] <= j <= i + diag + window[1]`` (-1: no bound); ``causal`` sets window[1] = 0.
    ``softmax_scale`` 0: 1/sqrt(head_dim). Variable length: q, k, v packed (rank 3, or batch 1), int32
    ``cu_seqlens_q/k`` [sequences + 1] on q's device, ``max_seqlen_q/k`` >= every length. Fully masked rows
    give 0 and LSE -inf. ``return_lse=True`` returns ``(out, lse)``: fp32 natural-log LSE [batch, heads_q,
    seqlen_q] ([heads_q, total_q] for variable length).
    """
    handle = _stream_handle(q, stream)
    qs = _shape(q)
    o = out if out is not None else _empty(q, qs, _dtype_name(q))
    lse = None
    if return_lse:
        if len(qs) == 4:
            lse = _empty(q, (qs[0], qs[2], qs[1]), "f32")
        elif len(qs) == 3:
            lse = _empty(q, (qs[1], qs[0]), "f32")
        else:
            raise InvalidArgument(f"invalid_argument: q: rank {len(qs)}, must be 4 or 3")
    wl, wr = window
    n = _pk.attention(_arg(q, handle), _arg(k, handle), _arg(v, handle), _arg(o, handle), _arg(lse, handle),
                      float(softmax_scale), bool(causal), int(wl), int(wr), _arg(cu_seqlens_q, handle),
                      _arg(cu_seqlens_k, handle), int(max_seqlen_q), int(max_seqlen_k), policy, device, handle, bind)
    return _done(n, (o, lse) if return_lse else o, bind)


def decode(q, k_cache, v_cache, cache_seqlens, *, block_table=None, kv_dtype=None, k_scale=None, v_scale=None,
           causal=False, window=(-1, -1), softmax_scale=0.0, num_splits=0, max_seqlen_k=0, return_lse=False, out=None,
           error=None, policy=None, device=None, stream=None, bind=False):
    """Attention of a few new query tokens per sequence over a KV cache (decode, speculative decoding).

    q, out: [batch, seqlen_q (1..16), heads_q, head_dim]. Paged cache: k_cache, v_cache [num_pages,
    page_size (a power of two 1..256), heads_kv, head_dim] with an int32 ``block_table`` [batch,
    max_pages_per_seq]; contiguous cache: [batch, capacity, heads_kv, head_dim] and no block table.
    ``cache_seqlens``: int32 [batch], the tokens in the cache (the new ones included). KV bf16/f16 (q's
    dtype), or FP8 e4m3 codes: pass uint8 (or torch.float8) caches with ``kv_dtype="f8e4m3fn"`` (NVIDIA,
    gfx950) or ``"f8e4m3fnuz"`` (MI300X) and optional fp32 ``k_scale``/``v_scale`` [heads_kv]. Masks as
    :func:`attention`, among the new tokens. ``num_splits`` 0: the planner's split count. A sequence of
    length 0 gives 0 and LSE -inf. ``return_lse=True`` returns ``(out, lse)``, lse fp32 [batch, heads_q, seqlen_q].
    ``error``: an optional int32 [1] on q's device, set to 1 when the GPU finds a bad block-table entry (the
    emulator raises instead; see pk/attention/decode.hpp).
    """
    handle = _stream_handle(q, stream)
    qs = _shape(q)
    o = out if out is not None else _empty(q, qs, _dtype_name(q))
    lse = _empty(q, (qs[0], qs[2], qs[1]), "f32") if return_lse and len(qs) == 4 else None
    wl, wr = window
    n = _pk.decode(_arg(q, handle), _arg(o, handle), _arg(k_cache, handle), _arg(v_cache, handle),
                   _arg(block_table, handle), _arg(cache_seqlens, handle), _arg(k_scale, handle),
                   _arg(v_scale, handle), kv_dtype, _arg(lse, handle), float(softmax_scale), bool(causal), int(wl),
                   int(wr), int(num_splits), int(max_seqlen_k), _arg(error, handle), policy, device, handle, bind)
    return _done(n, (o, lse) if return_lse else o, bind)


def kv_cache_append(k_cache, v_cache, cache_seqlens, k_new, v_new, *, block_table=None, kv_dtype=None, k_scale=None,
                    v_scale=None, error=None, device=None, stream=None, bind=False):
    """Writes k_new, v_new [batch, new_tokens, heads_kv, head_dim] into the cache (layout as :func:`decode`)
    at positions ``cache_seqlens[b] + t``; FP8 caches quantize (round to nearest even, saturating) with the
    scales. ``cache_seqlens`` is not updated: decode afterwards with ``cache_seqlens + new_tokens``. A slot
    out of range is an error and nothing is written (on a GPU: ``error``, an int32 [1], is set to 1).
    """
    handle = _stream_handle(k_cache, stream)
    n = _pk.kv_cache_append(_arg(k_cache, handle), _arg(v_cache, handle), _arg(block_table, handle),
                            _arg(cache_seqlens, handle), _arg(k_scale, handle), _arg(v_scale, handle), kv_dtype,
                            _arg(k_new, handle), _arg(v_new, handle), _arg(error, handle), device, handle, bind)
    return _done(n, None, bind)

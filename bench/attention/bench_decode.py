#!/usr/bin/env python3
"""Decode attention over a KV cache on the GPU: pk::attention_decode (through pk's Python module)
on paged caches with shuffled page tables, bf16 and FP8 (e4m3fn, per-KV-head scales), against PyTorch SDPA's
cuDNN and flash backends on the equivalent contiguous bf16 cache, measured in the same process with the same
CUDA events (bench_attention.time_ms: median of `reps` event-timed single calls after 3 warm-up calls).

Grid (the decode targets in shared/ANCHORS.md): head_dim 128, seqlen_q 1, GQA 32/8 and 8/1 query/KV heads,
batch {1, 4, 16, 64, 256} x context {1k, 4k, 16k, 64k, 128k}, keeping rows whose bf16 K+V is at most
--max-kv-gb; page sizes {16, 64, 256}, and 1 only for the --sweep-splits rows (batch 1 x 128k, 4 x 16k,
64 x 4k; a page-1 table is slow to build); KV bf16 and fp8. Page 0 (in --pages) is pk's contiguous cache,
read in place from the same tensor the SDPA anchors read.

Reported per row: pk's median time; TB/s of K+V attended (batch x context x heads_kv x head_dim x 2 x the
element size, over the time); that rate as a fraction of a measured device-to-device copy of 1 GiB (read +
write bytes over time); cuDNN and flash SDPA times on the contiguous bf16 cache ([b, hkv, ctx, d],
enable_gqa=True where the backend accepts it, else K/V expanded to the query heads); speed ratios (anchor
time / pk time: > 1 means pk is faster); for fp8 rows the speed-up over the bf16 pk row of the same shape.
Every row is checked before it is timed: pk's output and LSE on up to three sequences against a float64
reference computed by torch from the same (dequantized) cache; a wrong row is printed and not timed.

The L2 cache (60 MiB on an H200) is not flushed between the timed calls unless --flush-l2 is given: rows whose
K+V fit in it (marked) then read partly from L2, so their rates can exceed HBM bandwidth. With --flush-l2 a
buffer of twice the L2's size (at least 128 MiB) is written, untimed, before every timed call of pk and of the
anchors. Each timed call is one host call, so host launch overhead (pk's validation and planning, SDPA's
dispatch) is included where it exceeds the GPU time.

--sweep-splits: for the rows above (or --sweep-rows, and --pages, default 16) time pk at every forced split count
1, 2, 4, ..., 512 (or --splits) and the planner's own choice, and report the best against the plan (target:
within 5%).

--graph (grid and sweep): times leave out the host: 20 bound calls of pk (and of each SDPA anchor) captured in one
CUDA graph, the median of --reps replays over 20. With --flush-l2 as well, the calls of a graph cycle over enough
copies of the cache (and of the anchors' K/V) to hold at least twice the L2, so that each call reads its K/V from
HBM; no flush buffer is written.

  PYTHONPATH=<cuda build>/python python3 bench/attention/bench_decode.py --quick
"""
import argparse
import math
import os
import re
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_attention import time_ms  # noqa: E402  (the attention benchmark's event-timing helper)

DEV = "cuda"
HEAD_DIM = 128
GQAS = ((32, 8), (8, 1))
BATCHES = (1, 4, 16, 64, 256)
CONTEXTS = (1024, 4096, 16384, 65536, 131072)
SWEEP_ROWS = ((1, 131072), (4, 16384), (64, 4096))  # (batch, context): the split sweep, and the page-1 rows
QUICK_ROWS = ((32, 8, 1, 131072), (32, 8, 64, 4096), (8, 1, 16, 16384))  # (hq, hkv, batch, context)
SPLITS = tuple(2 ** i for i in range(10))  # 1 .. 512 (pk::max_decode_splits)
FP8_MAX = 448.0  # largest finite e4m3fn
TOL_OUT = 2e-2  # max |pk - ref| over max |ref| (bf16 output rounding is 2^-9 of that)
TOL_LSE = 1e-2  # max |pk - ref| of the natural-log LSE (one missing half of the keys moves it by 0.69)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def ctx_label(n):
    return f"{n // 1024}k" if n % 1024 == 0 else str(n)


def row_key(hq, hkv, b, ctx, page, kv):
    return f"{hq}/{hkv} b{b} ctx{ctx_label(ctx)} p{page} {kv}"


class PkError(RuntimeError):
    """pk returned a status other than ok (bad argument, unsupported): the row fails, the run goes on."""


class Pk:
    """The decode entry points through pk's Python module (pk.decode, pk.kv_cache_append, pk.plan)."""

    KV_DTYPE = {"bf16": None, "f16": None, "fp8": "f8e4m3fn"}

    def __init__(self):
        import pk
        self.pk = pk
        gpus = pk.devices()["gpus"]
        if not gpus:
            sys.exit("bench_decode: this pk build sees no GPU (a CUDA build's python/ must be on PYTHONPATH)")
        self.device = gpus[torch.cuda.current_device()]["name"]

    def _cache_kw(self, cache):
        return dict(block_table=cache["table"], kv_dtype=self.KV_DTYPE[cache["kv"]], k_scale=cache["k_scale"],
                    v_scale=cache["v_scale"])

    def decode_fn(self, q, out, cache, num_splits=0, lse=None, error=None, policy=None, stream=None):
        """A no-argument callable running pk.decode (arguments converted once, outside the timing: bind=True) on
        `stream` (default: the current stream)."""
        if policy is None and FORCED_POLICY:  # --policy: one candidate (by its name's tail) for every row
            policy = f"attn_decode_bf16_d{q.shape[3]}_{FORCED_POLICY}"
        try:
            run = self.pk.decode(q, cache["k"], cache["v"], cache["seqlens"], num_splits=num_splits, out=out,
                                 error=error, policy=policy, bind=True, stream=stream, **self._cache_kw(cache))
        except self.pk.Error as e:
            raise PkError(str(e)) from e
        if lse is not None:  # the LSE goes to the caller's tensor: run the unbound call
            def run_lse():
                try:
                    _, got = self.pk.decode(q, cache["k"], cache["v"], cache["seqlens"], num_splits=num_splits,
                                            out=out, error=error, policy=policy, return_lse=True,
                                            **self._cache_kw(cache))
                except self.pk.Error as e:
                    raise PkError(str(e)) from e
                lse.copy_(got)
            return run_lse

        def checked():
            try:
                run()
            except self.pk.Error as e:
                raise PkError(str(e)) from e
        return checked

    def append(self, cache, k_new, v_new, new_type="bf16", error=None):
        try:
            self.pk.kv_cache_append(cache["k"], cache["v"], cache["seqlens"], k_new, v_new, error=error,
                                    **self._cache_kw(cache))
        except self.pk.Error as e:
            raise PkError(str(e)) from e

    def plan(self, b, hq, hkv, ctx, page, kv, num_splits=0):
        """(splits, policy name, why) of pk's decode planner on the current device."""
        p = self.pk.plan("decode", device=self.device, dtype="bf16", kv_dtype="f8e4m3fn" if kv == "fp8" else kv,
                         batch=b, heads_q=hq, heads_kv=hkv, head_dim=HEAD_DIM, seqlen_q=1, context=ctx,
                         page_size=page, num_splits=num_splits)
        return p["splits"], p["name"], p["why"]


# ---- caches -------------------------------------------------------------------------------------------------

def fp8_scales(x):
    """Per-KV-head fp32 scales of a contiguous [b, hkv, ctx, d] bf16 cache: amax / 448 (no |x| temporary)."""
    amax = torch.maximum(x.amax(dim=(0, 2, 3)), -x.amin(dim=(0, 2, 3))).float()
    return (amax / FP8_MAX).clamp_min(1e-12).contiguous()


def quantize(x, scale):
    """[n, hkv, ctx, d] bf16 -> e4m3fn codes of x / scale (round to nearest even, clamped to +-448)."""
    return (x.float() / scale.view(1, -1, 1, 1)).clamp_(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)


def dequantize(x, scale):
    return x.float().double() * scale.double().view(1, -1, 1, 1)


def store_dtype(kv):
    return torch.float8_e4m3fn if kv == "fp8" else torch.bfloat16


def chunk_rows(x, nbytes=1 << 28):
    """Sequences per chunk so that one chunk of x [b, ...] (and its float temporaries) stays near 256 MiB."""
    per = x[0].numel() * 4
    return max(1, nbytes // per)


def build_cache(kc, vc, page, table, kv, scales):
    """The pk cache holding kc/vc ([b, hkv, ctx, d] bf16, contiguous) in `kv`'s dtype: paged [num_pages, page,
    hkv, d] with token t of sequence i in row t % page of page table[i, t // page], or for page 0 pk's
    contiguous [b, ctx, hkv, d] view (for bf16, of kc/vc themselves: no copy)."""
    b, hkv, ctx, d = kc.shape
    dt = store_dtype(kv)
    ks, vs = scales if kv == "fp8" else (None, None)
    conv = (lambda x, s: quantize(x, s)) if kv == "fp8" else (lambda x, s: x)
    n = chunk_rows(kc)
    out = {}
    for name, src, s in (("k", kc, ks), ("v", vc, vs)):
        if page == 0:
            if kv == "fp8":
                dst = torch.empty(b, hkv, ctx, d, dtype=dt, device=DEV)
                for i in range(0, b, n):
                    dst[i:i + n].view(torch.uint8).copy_(conv(src[i:i + n], s).view(torch.uint8))
            else:
                dst = src
            out[name] = dst.transpose(1, 2)  # [b, ctx, hkv, d], strides (hkv*ctx*d, d, ctx*d, 1)
            continue
        npp = ctx // page
        dst = torch.empty(b * npp, page, hkv, d, dtype=dt, device=DEV)
        d8 = dst.view(torch.uint8) if kv == "fp8" else dst  # index_put on the raw codes (fp8 indexing is patchy)
        for i in range(0, b, n):
            c = conv(src[i:i + n], s)  # [m, hkv, ctx, d]
            if kv == "fp8":
                c = c.view(torch.uint8)
            m = c.shape[0]
            c = c.view(m, hkv, npp, page, d).permute(0, 2, 3, 1, 4).reshape(m * npp, page, hkv, d)
            d8[table[i:i + m].reshape(-1).long()] = c
        out[name] = dst
    return {"kv": kv, "k": out["k"], "v": out["v"], "table": table if page else None,
            "seqlens": torch.full((b,), ctx, dtype=torch.int32, device=DEV), "k_scale": ks, "v_scale": vs}


def reference(q, kc, vc, idx, kv, scales):
    """float64 attention of q [b, 1, hq, d] over sequences idx of the cache as pk holds it (fp8: dequantized):
    out [len(idx), hq, d], natural-log LSE [len(idx), hq]."""
    outs, lses = [], []
    hq, d = q.shape[2], q.shape[3]
    hkv = kc.shape[1]
    for i in idx:
        if kv == "fp8":
            k = dequantize(quantize(kc[i:i + 1], scales[0]), scales[0])[0]
            v = dequantize(quantize(vc[i:i + 1], scales[1]), scales[1])[0]
        else:
            k, v = kc[i].double(), vc[i].double()  # [hkv, ctx, d]
        qi = q[i, 0].double().view(hkv, hq // hkv, d)  # query head h reads KV head h // (hq / hkv)
        s = torch.einsum("hgd,hcd->hgc", qi, k) / math.sqrt(d)
        lses.append(torch.logsumexp(s, dim=-1).reshape(hq))
        outs.append(torch.einsum("hgc,hcd->hgd", torch.softmax(s, dim=-1), v).reshape(hq, d))
        del k, v, s
    return torch.stack(outs), torch.stack(lses)


FORCED_POLICY = None  # set by --policy


def spot_idx(b):
    return sorted({0, b // 2, b - 1})


def check(shim, q, cache, ref, idx, num_splits=0):
    """Runs pk once (out pre-filled with NaN, LSE and the error flag requested) and compares sequences idx with
    the float64 reference. Returns (ok, normalized output error, message)."""
    b, _, hq, _ = q.shape
    out = torch.full_like(q, float("nan"))
    lse = torch.full((b, hq, 1), float("nan"), dtype=torch.float32, device=DEV)
    flag = torch.zeros(1, dtype=torch.int32, device=DEV)
    shim.decode_fn(q, out, cache, num_splits=num_splits, lse=lse, error=flag)()
    torch.cuda.synchronize()
    ro, rl = ref
    o = out[idx, 0].double()
    l_ = lse[idx, :, 0].double()
    err = ((o - ro).abs().max() / ro.abs().max().clamp_min(1e-30)).item()
    lerr = (l_ - rl).abs().max().item()
    ok = bool(torch.isfinite(o).all()) and bool(torch.isfinite(l_).all()) and err <= TOL_OUT and lerr <= TOL_LSE
    ok = ok and int(flag.item()) == 0
    msg = f"out err {err:.3g} (tol {TOL_OUT}), lse err {lerr:.3g} (tol {TOL_LSE}), error flag {int(flag.item())}"
    return ok, err, msg


# ---- anchors ------------------------------------------------------------------------------------------------

BEFORE = None  # --flush-l2: writes a buffer of twice the L2's size before each timed call


def timed(fn, reps):
    return time_ms(fn, reps, before=BEFORE)


GRAPH_CALLS = 20  # --graph: calls captured in one graph (the host's launch of the graph spread over them)


def graph_timed(make, reps):
    """Median ms per call, without the host: GRAPH_CALLS calls of make(stream)'s callables (cycled) captured in
    one CUDA graph, median of `reps` event-timed replays over GRAPH_CALLS, after warm-up."""
    st = torch.cuda.Stream()
    st.wait_stream(torch.cuda.current_stream())
    fns = make(st)
    with torch.cuda.stream(st):
        for f in fns:
            f()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=st):
        for i in range(GRAPH_CALLS):
            fns[i % len(fns)]()
    for _ in range(3):
        g.replay()
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / GRAPH_CALLS)
    return sorted(times)[len(times) // 2]


GRAPH_L2 = None  # --graph: (L2 bytes, whether --flush-l2); None: event-timed single calls


def flush_copies(first, nbytes, clone):
    """[first], and under --graph --flush-l2 clones of it (nbytes each) until they hold at least twice the L2, so
    that a graph cycling over them reads each call's data from HBM."""
    out = [first]
    if GRAPH_L2 is not None and GRAPH_L2[1]:
        while len(out) * nbytes < 2 * GRAPH_L2[0]:
            out.append(clone(first))
    return out


def cache_copies(cache):
    """The cache, and under --graph --flush-l2 copies of its K/V (same table and values), as flush_copies."""
    per = cache["k"].numel() * cache["k"].element_size() * 2
    return flush_copies(cache, per, lambda c: dict(c, k=c["k"].clone(), v=c["v"].clone()))


def measure(make, items, reps):
    """ms per call of make(item, stream), a no-argument callable: event-timed single calls on items[0] (stream
    None: the current one), or under --graph graph-timed, the captured calls cycling over items."""
    if GRAPH_L2 is None:
        return timed(make(items[0], None), reps)
    return graph_timed(lambda st: [make(it, st) for it in items], reps)


def sdpa_ms(qt, k, v, reps, **kw):
    """ms of SDPA (under the caller's backend context) on q [b, hq, 1, d], k/v [b, h, ctx, d], as measure (over
    copies of k/v)."""
    pairs = flush_copies((k, v), 2 * k.numel() * k.element_size(), lambda p: (p[0].clone(), p[1].clone()))
    return measure(lambda p, _: lambda: F.scaled_dot_product_attention(qt, p[0], p[1], **kw), pairs, reps)


def copy_roofline(reps):
    """Bytes/s of a device-to-device copy of 1 GiB, counting read + write."""
    n = 1 << 30
    x = torch.ones(n, dtype=torch.uint8, device=DEV)
    y = torch.empty_like(x)
    ms = time_ms(lambda: y.copy_(x), max(reps, 20))
    del x, y
    return 2 * n / (ms * 1e-3)


def sdpa_anchor(backend, qt, kc, vc, reps):
    """(ms, mode, out) of SDPA with one backend on q [b, hq, 1, d], k/v [b, hkv, ctx, d]: mode 'gqa'
    (enable_gqa=True) or 'expanded' (K/V repeated to hq heads, when the backend refuses GQA); (nan, reason,
    None) when it cannot run."""
    g = qt.shape[1] // kc.shape[1]
    try:
        with sdpa_kernel(backend):
            o = F.scaled_dot_product_attention(qt, kc, vc, enable_gqa=True)
            torch.cuda.synchronize()
            return sdpa_ms(qt, kc, vc, reps, enable_gqa=True), "gqa", o
    except (RuntimeError, TypeError) as e:
        why = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    need = 2 * kc.numel() * kc.element_size() * g
    if g > 1 and need > 0.9 * torch.cuda.mem_get_info()[0]:
        log(f"#   {backend}: no GQA ({why}); expanding needs {need / 1e9:.1f} GB: skipped")
        return float("nan"), "n/a", None
    ke = ve = None
    try:
        ke, ve = (kc, vc) if g == 1 else (kc.repeat_interleave(g, dim=1), vc.repeat_interleave(g, dim=1))
        with sdpa_kernel(backend):
            o = F.scaled_dot_product_attention(qt, ke, ve)
            torch.cuda.synchronize()
            return sdpa_ms(qt, ke, ve, reps), "expanded", o
    except RuntimeError as e:
        log(f"#   {backend}: unavailable ({why}; expanded: {str(e).splitlines()[0] if str(e) else ''})")
        return float("nan"), "n/a", None
    finally:
        del ke, ve
        torch.cuda.empty_cache()


def check_append(shim):
    """kv_cache_append spot check on a small paged cache (page 16, shuffled table, sequences of 0 / 5 / 30
    tokens, 3 new tokens each), bf16 and fp8, against the same scatter in torch. Returns a one-line verdict."""
    b, hkv, d, page, npp, new = 3, 2, HEAD_DIM, 16, 4, 3
    table = torch.randperm(b * npp, device=DEV).to(torch.int32).view(b, npp)
    seqlens = torch.tensor([0, 5, 30], dtype=torch.int32, device=DEV)
    kn = torch.randn(b, new, hkv, d, dtype=torch.bfloat16, device=DEV)
    vn = torch.randn(b, new, hkv, d, dtype=torch.bfloat16, device=DEV)
    pos = seqlens.long().view(b, 1) + torch.arange(new, device=DEV).view(1, new)  # [b, new]
    pg = torch.gather(table.long(), 1, pos // page)
    verdicts = []
    for kv in ("bf16", "fp8"):
        try:
            dt = store_dtype(kv)
            kcache = torch.zeros(b * npp, page, hkv, d, dtype=dt, device=DEV)
            vcache = torch.zeros_like(kcache)
            scales = (torch.rand(hkv, device=DEV) * 0.02 + 0.005, torch.rand(hkv, device=DEV) * 0.02 + 0.005)
            cache = {"kv": kv, "k": kcache, "v": vcache, "table": table, "seqlens": seqlens,
                     "k_scale": scales[0] if kv == "fp8" else None, "v_scale": scales[1] if kv == "fp8" else None}
            flag = torch.zeros(1, dtype=torch.int32, device=DEV)
            shim.append(cache, kn, vn, "bf16", flag)
            torch.cuda.synchronize()
            worst, mism = 0.0, 0
            for got, src, s in ((kcache, kn, scales[0]), (vcache, vn, scales[1])):
                want = torch.zeros(b * npp, page, hkv, d, dtype=torch.float64, device=DEV)
                if kv == "fp8":
                    # [b, new, hkv, d] -> quantize over [n, hkv, ...] with the heads in dim 1
                    codes = quantize(src.permute(0, 2, 1, 3), s).permute(0, 2, 1, 3)
                    vals = codes.float().double() * s.double().view(1, 1, hkv, 1)
                    have = got.float().double() * s.double().view(1, 1, hkv, 1)
                else:
                    vals, have = src.double(), got.double()
                want[pg.reshape(-1), (pos % page).reshape(-1)] = vals.reshape(b * new, hkv, d)
                diff = (have - want).abs()
                # fp8: x * (1/scale) and x / scale may round a near-tie apart: allow one code step (2^-3)
                mism += int((diff > 0).sum().item())
                worst = max(worst, (diff / want.abs().clamp_min(1e-30)).masked_fill(diff == 0, 0).max().item())
            n = 2 * b * new * hkv * d
            ok = int(flag.item()) == 0 and (mism == 0 if kv == "bf16" else (mism <= n // 1000 and worst <= 0.13))
            verdicts.append(f"{kv} {'ok' if ok else 'WRONG'} ({mism} of {n} values differ, worst rel {worst:.3g}, "
                            f"error flag {int(flag.item())})")
        except PkError as e:
            verdicts.append(f"{kv} failed: {e}")
    return "; ".join(verdicts)


# ---- the grid -----------------------------------------------------------------------------------------------

def kv_bytes(b, hkv, ctx, kv):
    return b * ctx * hkv * HEAD_DIM * 2 * (1 if kv == "fp8" else 2)


def cases(args):
    """[(hq, hkv, b, ctx, [(page, kv), ...]), ...] after the size limit, the page-1 rule and --rows."""
    if args.quick:
        shapes = [r for r in QUICK_ROWS if (r[0], r[1]) in args.gqa]
    else:
        shapes = [(hq, hkv, b, ctx) for hq, hkv in args.gqa for b in args.batches for ctx in args.contexts
                  if not args.sweep_splits or (b, ctx) in args.sweep_rows]
    out = []
    for hq, hkv, b, ctx in shapes:
        if kv_bytes(b, hkv, ctx, "bf16") > args.max_kv_gb * 1e9:
            continue
        rows = [(p, kv) for p in args.pages for kv in args.kv
                if (p != 1 or (b, ctx) in args.sweep_rows) and (p == 0 or ctx % p == 0)
                and (args.rows is None or re.search(args.rows, row_key(hq, hkv, b, ctx, p, kv)))]
        if rows:
            out.append((hq, hkv, b, ctx, rows))
    return out


def fmt(x, spec=".1f"):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def run_grid(args, shim, todo, copy_bw, l2, plot_rows):
    print("| q/kv heads | batch | context | page | KV | KV MiB | pk us | TB/s | of copy | cudnn us | flash us "
          "| pk vs cudnn | pk vs flash | fp8 vs bf16 pk | sdpa cudnn/flash | splits (plan) | check |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    bf16_us = {}
    nrows, done = sum(len(c[4]) for c in todo), 0
    for hq, hkv, b, ctx, rows in todo:
        d = HEAD_DIM
        q = torch.randn(b, 1, hq, d, dtype=torch.bfloat16, device=DEV)
        kc = torch.randn(b, hkv, ctx, d, dtype=torch.bfloat16, device=DEV)
        vc = torch.randn(b, hkv, ctx, d, dtype=torch.bfloat16, device=DEV)
        idx = spot_idx(b)
        refs = {"bf16": reference(q, kc, vc, idx, "bf16", None)}
        qt = q.transpose(1, 2)  # [b, hq, 1, d]
        anchors = {}
        for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
            ms, mode, o = sdpa_anchor(be, qt, kc, vc, args.reps)
            anchors[name] = (ms * 1e3, mode)
            if o is not None:  # the anchor computes the same thing (a warning only: its time is still shown)
                e = ((o[idx, :, 0].double() - refs["bf16"][0]).abs().max() / refs["bf16"][0].abs().max()).item()
                if e > TOL_OUT:
                    log(f"# WARNING {name} SDPA differs from the float64 reference: {e:.3g}")
            del o
        log(f"# {hq}/{hkv} b{b} ctx{ctx_label(ctx)}: cudnn {anchors['cudnn'][0]:.1f} us ({anchors['cudnn'][1]}), "
            f"flash {anchors['flash'][0]:.1f} us ({anchors['flash'][1]})")
        scales = fp8_scales(kc), fp8_scales(vc)
        for page in sorted({p for p, _ in rows}):
            npp = ctx // page if page else 0
            table = torch.randperm(b * npp, device=DEV).to(torch.int32).view(b, npp) if page else None
            for kv in sorted(k for p, k in rows if p == page):  # bf16 before fp8 (the fp8 speed-up's base)
                done += 1
                key = row_key(hq, hkv, b, ctx, page, kv)
                log(f"[{done}/{nrows}] {key}")
                nbytes = kv_bytes(b, hkv, ctx, kv)
                head = (f"| {hq}/{hkv} | {b} | {ctx_label(ctx)} | {page if page else 'contig'} | {kv} | "
                        f"{fmt(nbytes / 2**20, '.0f' if nbytes >= 10 * 2**20 else '.2f')}"
                        f"{' (L2)' if nbytes <= l2 else ''} |")
                cache = build_cache(kc, vc, page, table, kv, scales)
                if kv not in refs:
                    refs[kv] = reference(q, kc, vc, idx, kv, scales)
                try:
                    splits, pname, why = shim.plan(b, hq, hkv, ctx, page, kv)
                    log(f"#   plan: {pname} splits={splits}")
                    ok, err, msg = check(shim, q, cache, refs[kv], idx)
                    if not ok:
                        log(f"# WRONG {key}: {msg}")
                        print(f"{head} - | - | - | - | - | - | - | - | - | {splits} | WRONG: {msg} |", flush=True)
                        continue
                    out = torch.empty_like(q)
                    caches = cache_copies(cache)
                    us = measure(lambda c, st: shim.decode_fn(q, out, c, stream=st), caches, args.reps) * 1e3
                    del caches
                except PkError as e:
                    log(f"# FAILED {key}: {e}")
                    print(f"{head} - | - | - | - | - | - | - | - | - | - | pk error: {str(e).splitlines()[0]} |",
                          flush=True)
                    continue
                finally:
                    del cache
                tbs = nbytes / (us * 1e-6) / 1e12
                if kv == "bf16":
                    bf16_us[(hq, hkv, b, ctx, page)] = us
                base = bf16_us.get((hq, hkv, b, ctx, page)) if kv == "fp8" else None
                cu, fl = anchors["cudnn"][0], anchors["flash"][0]
                print(f"{head} {us:.1f} | {tbs:.2f} | {tbs * 1e12 / copy_bw:.0%} | {fmt(cu)} | {fmt(fl)} | "
                      f"{fmt(cu / us, '.2f')} | {fmt(fl / us, '.2f')} | "
                      f"{fmt(base / us if base else None, '.2f')} | {anchors['cudnn'][1]}/{anchors['flash'][1]} | "
                      f"{splits} | ok ({err:.1g}) |", flush=True)
                # the anchors read the contiguous bf16 cache: their rate counts its bytes
                anchor_bytes = kv_bytes(b, hkv, ctx, "bf16")
                series = {f"pk {kv}": tbs}
                for name, t in (("cuDNN", cu), ("SDPA flash", fl)):
                    if t and t == t:
                        series[name] = anchor_bytes / (t * 1e-6) / 1e12
                plot_rows.append((f"{hq}/{hkv} b{b} {ctx_label(ctx)} p{page if page else 'c'} {kv}", series))
            del table
        del q, kc, vc, qt, refs
        torch.cuda.empty_cache()


def run_sweep(args, shim, todo):
    splits = args.splits
    print("| q/kv heads | batch | context | page | KV | " + " | ".join(f"s={s} us" for s in splits) +
          " | best | plan (splits) us | plan / best | within 5% |")
    print("| --- " * (5 + len(splits) + 4) + "|")
    nrows, done = sum(len(c[4]) for c in todo), 0
    for hq, hkv, b, ctx, rows in todo:
        d = HEAD_DIM
        q = torch.randn(b, 1, hq, d, dtype=torch.bfloat16, device=DEV)
        kc = torch.randn(b, hkv, ctx, d, dtype=torch.bfloat16, device=DEV)
        vc = torch.randn(b, hkv, ctx, d, dtype=torch.bfloat16, device=DEV)
        idx = spot_idx(b)
        scales = fp8_scales(kc), fp8_scales(vc)
        refs = {}
        for page in sorted({p for p, _ in rows}):
            npp = ctx // page if page else 0
            table = torch.randperm(b * npp, device=DEV).to(torch.int32).view(b, npp) if page else None
            for kv in sorted(k for p, k in rows if p == page):  # bf16 before fp8 (the fp8 speed-up's base)
                done += 1
                key = row_key(hq, hkv, b, ctx, page, kv)
                log(f"[{done}/{nrows}] sweep {key}")
                if kv not in refs:
                    refs[kv] = reference(q, kc, vc, idx, kv, scales if kv == "fp8" else None)
                cache = build_cache(kc, vc, page, table, kv, scales)
                caches = cache_copies(cache)
                out = torch.empty_like(q)
                times = {}
                for s in (0,) + splits:  # 0: the planner's choice
                    try:
                        ok, _, msg = check(shim, q, cache, refs[kv], idx, num_splits=s)
                        if not ok:
                            log(f"# WRONG {key} splits={s}: {msg}")
                            times[s] = "wrong"
                            continue
                        times[s] = measure(lambda c, st: shim.decode_fn(q, out, c, num_splits=s, stream=st), caches,
                                           args.reps) * 1e3
                    except PkError as e:
                        log(f"#   {key} splits={s}: {str(e).splitlines()[0]}")
                        times[s] = "error"
                del cache, caches
                try:
                    plan_splits = shim.plan(b, hq, hkv, ctx, page, kv)[0]
                except PkError as e:
                    log(f"#   plan failed: {e}")
                    plan_splits = None
                num = {s: t for s, t in times.items() if s and isinstance(t, float)}
                cells = [fmt(times[s]) if isinstance(times[s], float) else times[s] for s in splits]
                if num and isinstance(times[0], float):
                    best = min(num, key=num.get)
                    ratio = times[0] / num[best]
                    tail = (f"{best}: {num[best]:.1f} | {times[0]:.1f} ({plan_splits}) | {ratio:.2f} | "
                            f"{'yes' if ratio <= 1.05 else 'NO'} |")
                else:
                    tail = f"- | {times[0] if not isinstance(times[0], float) else fmt(times[0])} ({plan_splits}) | - | - |"
                print(f"| {hq}/{hkv} | {b} | {ctx_label(ctx)} | {page if page else 'contig'} | {kv} | " +
                      " | ".join(cells) + f" | {tail}", flush=True)
            del table
        del q, kc, vc, refs
        torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=20, help="timed calls per measurement (median)")
    ap.add_argument("--quick", action="store_true", help=f"only {len(QUICK_ROWS)} shapes, page 16")
    ap.add_argument("--rows", default=None,
                    help="regex: keep rows whose key matches, e.g. '32/8 b1 ctx128k p16 bf16' ('^8/1 ', 'p(16|64) ')")
    ap.add_argument("--sweep-splits", action="store_true",
                    help="time every split count 1..512 on the sweep rows instead of the grid")
    ap.add_argument("--sweep-rows", default=",".join(f"{b}:{c}" for b, c in SWEEP_ROWS),
                    help="--sweep-splits (and page-1) rows as batch:context, comma-separated")
    ap.add_argument("--splits", default=",".join(map(str, SPLITS)),
                    help="--sweep-splits: the forced split counts, comma-separated (1..512)")
    ap.add_argument("--graph", action="store_true",
                    help="time CUDA graphs of bound calls, pk's and the anchors' (no host time); with --flush-l2, "
                         "over copies of the cache that together exceed the L2 twice")
    ap.add_argument("--pages", default=None,
                    help="page sizes (0 = contiguous cache); default 16,64,256,1 (--quick, --sweep-splits: 16)")
    ap.add_argument("--kv", default="bf16,fp8", help="cache types: bf16, fp8")
    ap.add_argument("--gqa", default="32/8,8/1", help="query/KV heads")
    ap.add_argument("--batches", default=",".join(map(str, BATCHES)))
    ap.add_argument("--contexts", default=",".join(map(str, CONTEXTS)))
    ap.add_argument("--policy", default=None,
                    help="run this decode candidate instead of the plan's, by its name's tail (e.g. b16x64_t128)")
    ap.add_argument("--max-kv-gb", type=float, default=40.0, help="largest bf16 K+V of a row, GB (1e9 bytes)")
    ap.add_argument("--flush-l2", action="store_true",
                    help="write a buffer of twice the L2's size (at least 128 MiB) before every timed call, "
                         "untimed: HBM rates")
    ap.add_argument("--svg", help="also write the grid's TB/s (pk, cuDNN, flash) as an SVG plot (bench/plot.py)")
    args = ap.parse_args()
    global FORCED_POLICY
    FORCED_POLICY = args.policy
    if args.pages is None:
        args.pages = "16" if args.quick or args.sweep_splits else "16,64,256,1"
    args.pages = [int(x) for x in args.pages.split(",")]
    args.kv = [x.strip() for x in args.kv.split(",")]
    if any(k not in ("bf16", "fp8") for k in args.kv):
        ap.error("--kv: bf16 and/or fp8")
    args.gqa = [tuple(int(y) for y in x.split("/")) for x in args.gqa.split(",")]
    args.batches = [int(x) for x in args.batches.split(",")]
    args.contexts = [int(x) for x in args.contexts.split(",")]
    args.sweep_rows = [tuple(int(y) for y in x.split(":")) for x in args.sweep_rows.split(",")]
    args.splits = tuple(int(x) for x in args.splits.split(","))
    if any(not 1 <= s <= SPLITS[-1] for s in args.splits):
        ap.error(f"--splits: counts 1..{SPLITS[-1]}")
    if any(p not in (0, 1, 2, 4, 8, 16, 32, 64, 128, 256) for p in args.pages):
        ap.error("--pages: 0 (contiguous) or powers of two 1..256")

    shim = Pk()
    torch.manual_seed(0)
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    l2 = getattr(props, "L2_cache_size", 0) or 0
    print(f"# device: {props.name}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
          f"L2 {l2 / 2**20:.0f} MiB")
    global BEFORE, GRAPH_L2
    flushed = "L2 not flushed"
    if args.flush_l2 and not args.graph:
        junk = torch.empty(max(2 * l2, 1 << 27), dtype=torch.uint8, device=DEV)
        BEFORE = junk.zero_
        flushed = f"L2 flushed before each call (a {junk.numel() / 2**20:.0f} MiB write, untimed)"
    if args.graph:
        GRAPH_L2 = (l2, args.flush_l2)
        flushed = (f"{GRAPH_CALLS} bound calls captured in one CUDA graph, the median of {args.reps} replays over "
                   f"{GRAPH_CALLS}" + (", cycling over copies of the cache (and of the anchors' K/V) that hold at "
                                       "least twice the L2" if args.flush_l2 else ", L2 not flushed"))
    todo = cases(args)
    if not todo:
        log("# no rows selected")
        return 1
    log(f"# {sum(len(c[4]) for c in todo)} rows in {len(todo)} shapes")
    timing = "graph-timed" if args.graph else "event-timed"
    if args.sweep_splits:
        print(f"# split sweep: head_dim {HEAD_DIM}, seqlen_q 1, median of {args.reps} "
              f"{timing} calls after warm-up, {flushed}; every split count checked against a float64 reference before timing; "
              f"'plan' = num_splits 0 (the planner's choice, its split count in parentheses)")
        run_sweep(args, shim, todo)
    else:
        copy_bw = copy_roofline(args.reps)
        print(f"# copy roofline: device-to-device copy of 1 GiB, {copy_bw / 1e9:.0f} GB/s counting read + write")
        print(f"# head_dim {HEAD_DIM}, seqlen_q 1, random shuffled page tables; times: median of {args.reps} "
              f"{timing} calls after warm-up, {flushed} ('(L2)': K+V fit in the L2; unflushed, rates partly "
              f"from it); TB/s = K+V bytes attended / pk time; 'of copy' = that over the copy roofline; cudnn/flash: "
              f"SDPA on the contiguous bf16 cache [b, hkv, ctx, d] (gqa = enable_gqa=True, expanded = K/V "
              f"repeated to the query heads); 'pk vs X' = X's time / pk's (> 1: pk faster); fp8 rows: scales per "
              f"KV head, anchors on the bf16 cache; check = max |pk - float64 ref| / max |ref| on up to 3 "
              f"sequences")
        plot_rows = []
        run_grid(args, shim, todo, copy_bw, l2, plot_rows)
        if args.svg:
            sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
            import plot
            plot.write_svg(args.svg, f"decode, head_dim {HEAD_DIM}, seqlen_q 1, on {props.name}", "TB/s",
                           copy_bw / 1e12, plot_rows, roofline_label=f"device-to-device copy {copy_bw / 1e12:.2f} TB/s")
    # last, so that a fault in the append kernel cannot cost the decode measurements above
    print(f"# kv_cache_append spot check (page 16, bf16 / fp8 cache, bf16 input): {check_append(shim)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

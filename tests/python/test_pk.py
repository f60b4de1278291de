"""The Python module on the emulator: every function on NumPy arrays (through DLPack and through the
buffer protocol), impersonating an sm_80 (wave32, mma.sync), a gfx942 (wave64, MFMA) and a gfx1100 (wave32,
WMMA) device, against float64 references computed here. Fresh random inputs each run (PK_PYTHON_SEED
reproduces one; the seed is printed), never zeros; outputs given with out= start as NaN so that every
element must be written; ragged sizes (1, warp +- 1, block +- 1, primes).

Run: PYTHONPATH=<build>/python python3 -m unittest -v test_pk   (ctest runs it as python.*)
"""
import array
import os
import sys
import unittest
import zlib

import numpy as np

import pk

SEED = int(os.environ.get("PK_PYTHON_SEED", np.random.SeedSequence().entropy % (1 << 32)))
print(f"test_pk: PK_PYTHON_SEED={SEED}", file=sys.stderr)

# One device per emulated code path (pk.devices() lists every name).
DEVICES = ["A100-SXM4-80GB", "MI300X", "RX 7900 XTX"]
SIZES = [1, 31, 33, 255, 257, 1021, 65537]

# Unit roundoff per dtype, and half the smallest subnormal (the absolute rounding error near 0): the
# tolerance rules below are multiples of them.
EPS = {np.float64: 2.0**-53, np.float32: 2.0**-24, np.float16: 2.0**-11}
TINY = {np.float64: 2.0**-1075, np.float32: 2.0**-150, np.float16: 2.0**-25}


def rng(tag):
    return np.random.default_rng([SEED, zlib.crc32(repr(tag).encode())])


def sum_bound(x64, dtype, n):
    """|fl(sum) - sum| <= gamma * sum|x| with the accumulation in fp32 (fp64 for f64), any order, plus the
    final rounding to dtype: a tree of depth log2(n) + a few levels per block."""
    acc = np.float64 if dtype == np.float64 else np.float32
    depth = np.log2(max(n, 2)) + 8
    return depth * EPS[acc] * np.abs(x64).sum() + EPS.get(dtype, 0) * abs(x64.sum()) * 2


class Reductions(unittest.TestCase):
    def test_every_op_every_dtype_ragged_sizes(self):
        for dev in DEVICES:
            for dt in (np.float32, np.float64, np.float16, np.int32, np.int64, np.int8, np.uint8):
                for n in SIZES:
                    r = rng((dev, str(dt), n))
                    if np.issubdtype(dt, np.integer):
                        info = np.iinfo(dt)
                        x = r.integers(max(info.min, -100), min(info.max, 100), n, endpoint=True).astype(dt)
                        x[x == 0] = 1
                    else:
                        x = (r.standard_normal(n) + 0.5).astype(dt)
                    x64 = x.astype(np.float64)
                    with self.subTest(device=dev, dtype=dt.__name__, n=n):
                        self.assertEqual(pk.argmax(x, device=dev), int(np.argmax(x)))
                        self.assertEqual(pk.argmin(x, device=dev), int(np.argmin(x)))
                        self.assertEqual(pk.max(x, device=dev), x.max())
                        self.assertEqual(pk.min(x, device=dev), x.min())
                        if dt in (np.int8, np.uint8):
                            with self.assertRaises(pk.Unsupported):
                                pk.sum(x, device=dev)
                            continue
                        s = pk.sum(x, device=dev)
                        self.assertEqual(type(s), dt)
                        if np.issubdtype(dt, np.integer):
                            # int64 accumulation, wrap, narrow: exact for these magnitudes
                            self.assertEqual(int(s), int(x.astype(np.int64).sum().astype(dt)))
                        else:
                            self.assertLessEqual(abs(float(s) - x64.sum()), sum_bound(x64, dt, n))

    def test_axis_on_strided_views(self):
        r = rng("axis")
        base = r.standard_normal((37, 66)).astype(np.float32) + 0.25
        for view in (base, base.T, base[:, ::2], base[3:30, 1:65]):
            for axis in range(view.ndim):
                with self.subTest(shape=view.shape, strides=view.strides, axis=axis):
                    got = pk.sum(view, axis=axis)
                    ref = view.astype(np.float64).sum(axis=axis)
                    bound = sum_bound(np.abs(view.astype(np.float64)).max(axis=axis), np.float32, view.shape[axis])
                    np.testing.assert_array_less(np.abs(got - ref), bound * view.shape[axis] + 1e-30)
                    np.testing.assert_array_equal(pk.argmax(view, axis=axis), np.argmax(view, axis=axis))

    def test_out_is_written_exactly(self):
        x = rng("out").standard_normal(1000).astype(np.float32)
        out = np.full(3, np.nan, np.float32)
        pk.sum(x, out=out[1:2])
        self.assertTrue(np.isnan(out[0]) and np.isnan(out[2]))
        self.assertAlmostEqual(float(out[1]), float(x.astype(np.float64).sum()), delta=1e-3)

    def test_reproducible_sum_same_bits_everywhere(self):
        x = (rng("repro").standard_normal(100003) * 1e3).astype(np.float32)
        bits = {dev: pk.sum(x, reproducible=True, device=dev).tobytes() for dev in DEVICES + ["H200", "RX 9070 XT"]}
        self.assertEqual(len(set(bits.values())), 1, bits)
        x[17] = np.nan
        self.assertEqual(pk.sum(x, reproducible=True).view(np.uint32), 0x7FC00000)

    def test_segmented(self):
        r = rng("seg")
        lengths = [0, 1, 31, 33, 257, 5, 0, 1000]
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        x = r.standard_normal(int(offsets[-1])).astype(np.float32)
        got = pk.segmented_reduce(x, offsets, "max", device="MI300X")
        for i, n in enumerate(lengths):
            ref = x[offsets[i]:offsets[i + 1]].max() if n else -np.inf
            self.assertEqual(got[i], ref)

    def test_mean_var_large_offset(self):
        x = (1e8 + 64 * rng("mv").standard_normal(4099)).astype(np.float32)  # fp32's spacing at 1e8 is 8
        m, v = pk.mean_var(x)
        x64 = x.astype(np.float64)
        self.assertLessEqual(abs(m - x64.mean()), 4 * EPS[np.float32] * abs(x64.mean()))
        self.assertLess(abs(v - x64.var()) / x64.var(), 1e-3)

    def test_buffer_protocol_and_readonly_inputs(self):
        a = array.array("f", [1.5, -2.0, 4.25, 3.0])
        self.assertEqual(pk.sum(a), 6.75)
        self.assertEqual(pk.argmax(memoryview(a)), 2)
        ro = np.arange(1, 101, dtype=np.float64)
        ro.setflags(write=False)
        self.assertEqual(pk.sum(ro), 5050.0)
        with self.assertRaises(pk.InvalidArgument):
            pk.sum(np.arange(4.0), out=ro[:1])


def softmax64(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


class Rows(unittest.TestCase):
    def test_row_ops_against_float64(self):
        for dev in DEVICES:
            for dt in (np.float32, np.float16):
                for rows, cols in ((3, 1), (5, 33), (2, 1025), (4, 8193)):
                    r = rng((dev, "rows", str(dt), rows, cols))
                    wide = (r.standard_normal((rows, cols + 8)) * 2).astype(dt)
                    x = wide[:, 3:cols + 3]  # a row stride that is not cols, starts not 16-byte aligned
                    w = (r.random(cols) + 0.5).astype(dt)
                    b = r.standard_normal(cols).astype(dt)
                    x64, w64, b64 = (a.astype(np.float64) for a in (x, w, b))
                    u = EPS[dt]
                    # outputs are rounded to dtype; math in fp32 over cols terms
                    tol = 4 * u + 8 * np.log2(cols + 1) * EPS[np.float32]
                    with self.subTest(device=dev, dtype=dt.__name__, rows=rows, cols=cols):
                        out = np.full(x.shape, np.nan, dt)
                        pk.softmax(x, out=out, device=dev)
                        ref = softmax64(x64)
                        np.testing.assert_array_less(np.abs(out - ref), tol * ref + 2 * TINY[dt] + 1e-300)
                        got = pk.log_softmax(x, device=dev)
                        ref = np.log(softmax64(x64))
                        np.testing.assert_array_less(np.abs(got - ref), tol * (np.abs(ref) + 1) * 4)
                        y, mean, rstd = pk.layer_norm(x, w, b, eps=1e-5, return_stats=True, device=dev)
                        mu = x64.mean(axis=-1, keepdims=True)
                        rs = 1 / np.sqrt(x64.var(axis=-1, keepdims=True) + 1e-5)
                        ref = (x64 - mu) * rs * w64 + b64
                        scale = np.abs(x64 - mu) * rs * w64 + np.abs(b64) + 1
                        np.testing.assert_array_less(np.abs(y - ref), 8 * tol * scale)
                        np.testing.assert_allclose(mean, mu[:, 0], rtol=0, atol=8 * tol * (np.abs(mu[:, 0]).max() + 1))
                        np.testing.assert_allclose(rstd, rs[:, 0], rtol=8 * tol)
                        y = pk.rms_norm(x, w, eps=1e-6, device=dev)
                        rs = 1 / np.sqrt((x64 * x64).mean(axis=-1, keepdims=True) + 1e-6)
                        ref = x64 * rs * w64
                        np.testing.assert_array_less(np.abs(y - ref), 8 * tol * (np.abs(ref) + 1))

    def test_in_place_and_leading_axes(self):
        x = rng("inplace").standard_normal((2, 3, 40)).astype(np.float32)
        ref = softmax64(x.astype(np.float64))
        pk.softmax(x, out=x)
        np.testing.assert_allclose(x, ref, rtol=1e-5, atol=1e-7)

    def test_special_values(self):
        x = np.array([[1.0, np.inf, 2.0], [-np.inf, -np.inf, -np.inf], [0.0, -np.inf, 1.0]], np.float32)
        y = pk.softmax(x)
        self.assertTrue(np.isnan(y[0]).all())
        np.testing.assert_array_equal(y[1], 0)
        self.assertEqual(y[2, 1], 0)
        c = np.full((1, 64), 3.0, np.float32)
        w = np.ones(64, np.float32)
        b = rng("b").standard_normal(64).astype(np.float32)
        np.testing.assert_array_equal(pk.layer_norm(c, w, b, eps=0.0), b[None, :])

    def test_row_mean_var(self):
        x = rng("rmv").standard_normal((7, 300)).astype(np.float64)
        m, v = pk.row_mean_var(x, correction=1)
        np.testing.assert_allclose(m, x.mean(axis=1), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(v, x.var(axis=1, ddof=1), rtol=1e-12)


def attention64(q, k, v, causal=False, window=(-1, -1), scale=None):
    """float64 reference and the fp32 'naive' one (P rounded to q's dtype) on [b, s, h, d] arrays."""
    b, sq, hq, d = q.shape
    sk, hk = k.shape[1], k.shape[2]
    scale = scale or 1 / np.sqrt(d)
    g = hq // hk
    kk = np.repeat(k, g, axis=2)
    vv = np.repeat(v, g, axis=2)
    i = np.arange(sq)[:, None]
    j = np.arange(sk)[None, :]
    diag = sk - sq
    right = 0 if causal else window[1]
    allowed = np.ones((sq, sk), bool)
    if right >= 0:
        allowed &= j <= i + diag + right
    if window[0] >= 0:
        allowed &= j >= i + diag - window[0]
    outs = []
    for prec in (np.float64, np.float32):
        s = np.einsum("bqhd,bkhd->bhqk", q.astype(prec), kk.astype(prec)) * prec(scale)
        s = np.where(allowed, s, -np.inf)
        m = s.max(axis=-1, keepdims=True)
        full = np.isfinite(m)
        e = np.exp(np.where(full, s - np.where(full, m, 0), -np.inf))
        l = e.sum(axis=-1, keepdims=True)
        p = np.where(full, e / np.where(l > 0, l, 1), 0)
        lse = np.where(full[..., 0], np.log(np.where(l > 0, l, 1))[..., 0] + np.where(full, m, 0)[..., 0], -np.inf)
        if prec == np.float32:
            p = p.astype(q.dtype).astype(np.float32)
        o = np.einsum("bhqk,bkhd->bqhd", p, vv.astype(prec))
        if prec == np.float32:
            o = o.astype(q.dtype)
        outs.append((o.astype(np.float64), lse.astype(np.float64)))
    return outs


def check_attention(tc, got, lse, q, k, v, **mask):
    (ref, rlse), (naive, nlse) = attention64(q, k, v, **mask)
    # FlashAttention's two-reference rule (tests/kernels/attention/attention_case.hpp)
    noise = 2 * np.abs((ref + 0.3).astype(q.dtype).astype(np.float64) - 0.3 - ref).max()
    err = np.abs(got.astype(np.float64) - ref).max()
    tc.assertLessEqual(err, 2 * np.abs(naive - ref).max() + 2 * noise)
    fin = np.isfinite(rlse)
    np.testing.assert_array_equal(np.isfinite(lse), fin)
    if fin.any():
        lerr = np.abs(lse[fin] - rlse[fin]).max()
        tc.assertLessEqual(lerr, 2 * np.abs(nlse[fin] - rlse[fin]).max() + 1e-5 * (np.abs(rlse[fin]).max() + 1))
    np.testing.assert_array_equal(got[np.broadcast_to(~fin.transpose(0, 2, 1)[..., None], got.shape)], 0)


class Attention(unittest.TestCase):
    def test_forward_gqa_causal_window_lse(self):
        for dev in DEVICES:
            for causal, window in ((False, (-1, -1)), (True, (-1, -1)), (False, (7, 3))):
                r = rng((dev, "attn", causal, window))
                b, sq, sk, hq, hk, d = 2, 37, 70, 4, 2, 64
                q = r.standard_normal((b, sq, hq, d)).astype(np.float16)
                k = r.standard_normal((b, sk, hk, d)).astype(np.float16)
                v = r.standard_normal((b, sk, hk, d)).astype(np.float16)
                with self.subTest(device=dev, causal=causal, window=window):
                    out = np.full(q.shape, np.nan, np.float16)
                    o, lse = pk.attention(q, k, v, causal=causal, window=window, return_lse=True, out=out,
                                          device=dev)
                    self.assertIs(o, out)
                    check_attention(self, o, lse, q, k, v, causal=causal, window=window)

    def test_varlen(self):
        r = rng("varlen")
        lq, lk, h, d = [5, 0, 33], [9, 4, 33], 2, 64
        cq = np.concatenate([[0], np.cumsum(lq)]).astype(np.int32)
        ck = np.concatenate([[0], np.cumsum(lk)]).astype(np.int32)
        q = r.standard_normal((cq[-1], h, d)).astype(np.float16)
        k = r.standard_normal((ck[-1], h, d)).astype(np.float16)
        v = r.standard_normal((ck[-1], h, d)).astype(np.float16)
        o, lse = pk.attention(q, k, v, causal=True, cu_seqlens_q=cq, cu_seqlens_k=ck, max_seqlen_q=max(lq),
                              max_seqlen_k=max(lk), return_lse=True, device="MI300X")
        self.assertEqual(lse.shape, (h, cq[-1]))
        for i in range(3):
            if lq[i] == 0:
                continue
            qs, ks = slice(cq[i], cq[i + 1]), slice(ck[i], ck[i + 1])
            check_attention(self, o[None, qs], lse[None, :, qs], q[None, qs], k[None, ks], v[None, ks], causal=True)

    def test_bad_input(self):
        q = np.ones((1, 8, 2, 40), np.float16)
        with self.assertRaisesRegex(pk.Unsupported, "head_dim"):
            pk.attention(q, q, q)
        q = np.ones((1, 8, 2, 64), np.float32)
        with self.assertRaises(pk.Unsupported):
            pk.attention(q, q, q)
        q = np.ones((1, 8, 3, 64), np.float16)
        k = np.ones((1, 8, 2, 64), np.float16)
        with self.assertRaisesRegex(pk.InvalidArgument, "heads"):
            pk.attention(q, k, k)
        with self.assertRaisesRegex(pk.InvalidArgument, "policy|candidate"):
            pk.attention(k, k, k, policy="no_such_policy")


def e4m3fn_decode(codes):
    """OCP e4m3fn code -> value (no infinities; 0x7f/0xff are NaN)."""
    c = codes.astype(np.int32)
    s = np.where(c & 0x80, -1.0, 1.0)
    e = (c >> 3) & 0xF
    m = c & 0x7
    v = np.where(e == 0, m / 8.0 * 2.0**-6, (1 + m / 8.0) * 2.0 ** (e - 7))
    return s * v


class Decode(unittest.TestCase):
    def test_paged_against_contiguous_reference(self):
        r = rng("decode")
        b, hq, hk, d, page = 3, 8, 2, 64, 16
        lens = np.array([1, 0, 45], np.int32)
        pages_per_seq = 4
        num_pages = b * pages_per_seq + 3
        table = r.permutation(num_pages)[: b * pages_per_seq].reshape(b, pages_per_seq).astype(np.int32)
        kc = r.standard_normal((num_pages, page, hk, d)).astype(np.float16)
        vc = r.standard_normal((num_pages, page, hk, d)).astype(np.float16)
        q = r.standard_normal((b, 2, hq, d)).astype(np.float16)
        o, lse = pk.decode(q, kc, vc, lens, block_table=table, causal=True, return_lse=True, device="RX 7900 XTX")
        for i in range(b):
            k = kc[table[i]].reshape(-1, hk, d)[: lens[i]]
            v = vc[table[i]].reshape(-1, hk, d)[: lens[i]]
            if lens[i] == 0:
                np.testing.assert_array_equal(o[i], 0)
                self.assertTrue(np.isneginf(lse[i]).all())
                continue
            check_attention(self, o[i:i + 1], lse[i:i + 1], q[i:i + 1], k[None], v[None], causal=True)

    def test_fp8_cache_and_append(self):
        r = rng("fp8")
        b, hq, hk, d, cap = 2, 4, 1, 64, 40
        codes = r.integers(0, 256, (2, b, cap, hk, d)).astype(np.uint8)
        codes[(codes & 0x7F) == 0x7F] = 0x3C  # no NaN codes
        scale = np.array([0.5], np.float32)
        lens = np.array([40, 17], np.int32)
        q = r.standard_normal((b, 1, hq, d)).astype(np.float16)
        o = pk.decode(q, codes[0], codes[1], lens, kv_dtype="f8e4m3fn", k_scale=scale, v_scale=scale)
        k = (e4m3fn_decode(codes[0]) * 0.5).astype(np.float16)
        v = (e4m3fn_decode(codes[1]) * 0.5).astype(np.float16)
        for i in range(b):
            (ref, _), (naive, _) = attention64(q[i:i + 1], k[i:i + 1, : lens[i]], v[i:i + 1, : lens[i]])
            noise = 2 * np.abs((ref + 0.3).astype(np.float16).astype(np.float64) - 0.3 - ref).max()
            self.assertLessEqual(np.abs(o[i:i + 1] - ref).max(), 2 * np.abs(naive - ref).max() + 2 * noise)
        # append 16-bit tokens into a 16-bit cache, then decode equals decode over the cache filled here
        kc = r.standard_normal((b, cap, hk, d)).astype(np.float16)
        vc = r.standard_normal((b, cap, hk, d)).astype(np.float16)
        knew = r.standard_normal((b, 3, hk, d)).astype(np.float16)
        vnew = r.standard_normal((b, 3, hk, d)).astype(np.float16)
        start = np.array([5, 0], np.int32)
        filled_k, filled_v = kc.copy(), vc.copy()
        for i in range(b):
            filled_k[i, start[i]:start[i] + 3] = knew[i]
            filled_v[i, start[i]:start[i] + 3] = vnew[i]
        pk.kv_cache_append(kc, vc, start, knew, vnew)
        np.testing.assert_array_equal(kc, filled_k)
        np.testing.assert_array_equal(vc, filled_v)
        with self.assertRaises(pk.InvalidArgument):
            pk.kv_cache_append(kc, vc, np.array([38, 0], np.int32), knew, vnew)
        np.testing.assert_array_equal(kc, filled_k)


class Interface(unittest.TestCase):
    def test_devices(self):
        d = pk.devices()
        names = {x["name"] for x in d["database"]}
        self.assertTrue({"H200 SXM", "MI300X", "A100-SXM4-80GB"} <= names, names)
        self.assertIn("host_sm80", d["code_targets"])

    def test_plan(self):
        p = pk.plan("attention", device="H200", head_dim=128, seqlen_q=4096)
        self.assertEqual(p["strategy"], "ws_wgmma_tma")
        self.assertIn("strategy", p["why"])
        p = pk.plan("attention", device="A100-SXM4-80GB", head_dim=128, seqlen_q=4096)
        self.assertEqual(p["strategy"], "tiled_mma")
        p = pk.plan("decode", device="H200", batch=1, heads_q=32, heads_kv=8, context=131072, page_size=16)
        self.assertGreater(p["splits"], 1)
        self.assertEqual(p["rows"], 4)
        p = pk.plan("rows", device="MI300X", op="layer_norm", rows=4096, cols=4096, dtype="bf16")
        self.assertTrue(any(c["name"] == p["name"] and c["fits"] for c in p["candidates"]))
        self.assertGreater(pk.plan("reduce", n=1 << 26)["predicted_us"], 0)
        with self.assertRaises(pk.InvalidArgument):
            pk.plan("rows", colz=3)
        with self.assertRaises(pk.NotFound):
            pk.plan("reduce", device="no such GPU")

    def test_errors_carry_pk_messages(self):
        x = np.ones((4, 4), np.float32)
        with self.assertRaisesRegex(pk.InvalidArgument, "contiguous"):
            pk.sum(x[:, ::2])
        with self.assertRaisesRegex(pk.InvalidArgument, "axis"):
            pk.sum(x, axis=5)
        with self.assertRaisesRegex(pk.NotFound, "device"):
            pk.sum(x, device="Voodoo 2")
        with self.assertRaisesRegex(pk.InvalidArgument, "out"):
            pk.sum(x, out=np.empty(1, np.float64))
        with self.assertRaises(pk.InvalidArgument):
            pk.layer_norm(x, np.ones(3, np.float32))
        self.assertTrue(issubclass(pk.InvalidArgument, ValueError))


if __name__ == "__main__":
    unittest.main()

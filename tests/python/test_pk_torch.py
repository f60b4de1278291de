"""The Python module on the GPU with PyTorch tensors: pk against torch.nn.functional.scaled_dot_product_attention
(in float64 on upcast inputs, and the two-reference rule against SDPA in the input dtype), torch.sum and
torch.softmax, on the caller's current stream (a side stream included). Exits 77 (ctest: skipped) when
PyTorch, a CUDA device or pk's CUDA backend is missing, saying which.

Run: PYTHONPATH=<build>/python python3 tests/python/test_pk_torch.py
"""
import os
import sys
import unittest

SKIP = 77


def _skip(why):
    print(f"test_pk_torch: skipped: {why}", file=sys.stderr)
    sys.exit(SKIP)


try:
    import torch
    import torch.nn.functional as F
except ImportError:
    _skip("PyTorch is not installed")
if not torch.cuda.is_available():
    _skip("no CUDA device")
import pk  # noqa: E402

if not pk.devices()["gpus"]:
    _skip("this pk build has no CUDA backend (configure with -DPK_ENABLE_CUDA=ON)")

SEED = int(os.environ.get("PK_PYTHON_SEED", torch.seed() % (1 << 31)))
print(f"test_pk_torch: PK_PYTHON_SEED={SEED}", file=sys.stderr)
GEN = torch.Generator(device="cuda").manual_seed(SEED)


def randn(*shape, dtype=torch.bfloat16):
    return torch.randn(*shape, generator=GEN, device="cuda", dtype=torch.float32).to(dtype)


def sdpa64(q, k, v, causal):
    """SDPA in float64 on [b, s, h, d] tensors (GQA by repeating K/V heads); causal bottom-right aligned."""
    g = q.shape[2] // k.shape[2]
    qt, kt, vt = (t.double().transpose(1, 2) for t in (q, k.repeat_interleave(g, 2), v.repeat_interleave(g, 2)))
    mask = None
    if causal:
        sq, sk = q.shape[1], k.shape[1]
        i = torch.arange(sq, device="cuda")[:, None]
        j = torch.arange(sk, device="cuda")[None, :]
        mask = j <= i + (sk - sq)
    return F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask).transpose(1, 2)


def sdpa_lowp(q, k, v, causal):
    g = q.shape[2] // k.shape[2]
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k.repeat_interleave(g, 2), v.repeat_interleave(g, 2)))
    assert q.shape[1] == k.shape[1] or not causal
    return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal).transpose(1, 2)


class Torch(unittest.TestCase):
    def test_attention_against_sdpa(self):
        for dtype in (torch.bfloat16, torch.float16):
            for d in (64, 128, 256):
                for causal in (False, True):
                    b, s, hq, hk = 2, 1000, 8, 2
                    q, k, v = randn(b, s, hq, d, dtype=dtype), randn(b, s, hk, d, dtype=dtype), randn(b, s, hk, d, dtype=dtype)
                    with self.subTest(dtype=str(dtype), d=d, causal=causal):
                        out = torch.full_like(q, float("nan"))
                        o, lse = pk.attention(q, k, v, causal=causal, return_lse=True, out=out)
                        self.assertIs(o, out)
                        self.assertEqual(lse.shape, (b, hq, s))
                        ref = sdpa64(q, k, v, causal)
                        low = sdpa_lowp(q, k, v, causal).double()
                        err = (o.double() - ref).abs().max().item()
                        err_sdpa = (low - ref).abs().max().item()
                        self.assertFalse(torch.isnan(o).any().item())
                        self.assertLessEqual(err, 2 * err_sdpa + 1e-3, f"pk {err}, SDPA {err_sdpa}")

    def test_side_stream_and_reductions(self):
        x = randn(1 << 24, dtype=torch.float32) + 0.5
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            s = pk.sum(x)          # enqueued on `side`, the current stream here
            m = pk.argmax(x)
        torch.cuda.current_stream().wait_stream(side)
        self.assertEqual(s.device.type, "cuda")
        ref = x.double().sum().item()
        self.assertLessEqual(abs(s.item() - ref), 32 * 2.0**-24 * x.double().abs().sum().item())
        self.assertEqual(m.item(), torch.argmax(x).item())
        xb = x.to(torch.bfloat16)
        self.assertEqual(pk.max(xb).item(), xb.max().item())

    def test_softmax_layer_norm(self):
        x = randn(4096, 4096)
        y = pk.softmax(x)
        ref = torch.softmax(x.double(), dim=-1)
        self.assertLessEqual(((y.double() - ref).abs() / ref.clamp_min(1e-30)).max().item(), 2**-7)
        w, bias = randn(4096) + 1, randn(4096)
        y = pk.layer_norm(x, w, bias, eps=1e-5)
        ref = F.layer_norm(x.double(), (4096,), w.double(), bias.double(), 1e-5)
        low = F.layer_norm(x, (4096,), w, bias, 1e-5).double()
        self.assertLessEqual((y.double() - ref).abs().max().item(), 2 * (low - ref).abs().max().item() + 1e-2)

    def test_errors(self):
        q = randn(1, 64, 2, 64)
        with self.assertRaises(pk.InvalidArgument):
            pk.attention(q, q, q.cpu())
        with self.assertRaises(pk.InvalidArgument):
            pk.sum(randn(8), device="MI300X")


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
"""Attention forward on the GPU: pk (through libpk_attention_shim.so, ctypes) against PyTorch SDPA's
flash and cuDNN backends, measured in the same process on the same tensors with the same CUDA events.

FlashAttention grid: batch * seqlen = 16384 tokens, hidden = heads * head_dim = 2048, bf16, forward;
TFLOP/s = 4 * b * h * s^2 * d (halved when causal); median of `reps` event-timed runs after warm-up.

  python3 bench/attention/bench_attention.py --lib build/attn-cuda/bench/attention/libpk_attention_shim.so
"""
import argparse
import ctypes
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def time_ms(fn, reps, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--dims", default="64,128")
    ap.add_argument("--seqlens", default="512,1024,2048,4096,8192,16384")
    ap.add_argument("--candidates", action="store_true", help="also time every fitting candidate policy")
    args = ap.parse_args()
    lib = ctypes.CDLL(args.lib)
    i64p = ctypes.POINTER(ctypes.c_int64)
    lib.pk_attention_forward.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, i64p, i64p, ctypes.c_void_p,
                                         ctypes.c_void_p, i64p, i64p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                                         ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int]
    lib.pk_attention_plan.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                      ctypes.c_int64, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    print(f"# device: {torch.cuda.get_device_name()}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}")
    print("| head_dim | seqlen | causal | pk (plan) | flash | cudnn | pk/flash | pk/cudnn | max abs diff vs flash "
          "| pk plan | best candidate (TFLOP/s) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    torch.manual_seed(0)
    err = ctypes.create_string_buffer(4096)
    for d in [int(x) for x in args.dims.split(",")]:
        for s in [int(x) for x in args.seqlens.split(",")]:
            b, h = 16384 // s, 2048 // d
            q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
            out = torch.empty_like(q)
            shape = (ctypes.c_int64 * 4)(*q.shape)
            stride = (ctypes.c_int64 * 4)(*q.stride())
            for causal in (False, True):
                stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)

                def run_pk(policy=None):
                    rc = lib.pk_attention_forward(stream, 0, q.data_ptr(), shape, stride, k.data_ptr(), v.data_ptr(),
                                                  shape, stride, out.data_ptr(), None, int(causal), policy, err, 4096)
                    if rc != 0:
                        raise RuntimeError(err.value.decode())

                qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
                res = {}
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    ref = F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal).transpose(1, 2)
                    res["flash"] = time_ms(lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal), args.reps)
                try:
                    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                        res["cudnn"] = time_ms(lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal), args.reps)
                except RuntimeError as e:
                    print(f"# cudnn unavailable: {e}", file=sys.stderr)
                    res["cudnn"] = float("nan")
                run_pk()
                torch.cuda.synchronize()
                diff = (out.float() - ref.float()).abs().max().item()
                res["pk"] = time_ms(run_pk, args.reps)
                flops = 4.0 * b * h * s * s * d / (2 if causal else 1)
                tf = {n: flops / (t * 1e-3) / 1e12 for n, t in res.items()}
                plan = ctypes.create_string_buffer(8192)
                lib.pk_attention_plan(stream, 0, b, h, d, s, int(causal), plan, 8192)
                name, fitting, _ = plan.value.decode().split("|", 2)
                cands = {}
                if args.candidates:
                    for c in fitting.split(","):
                        t = time_ms(lambda: run_pk(c.encode()), args.reps)
                        cands[c] = flops / (t * 1e-3) / 1e12
                best = max(cands.items(), key=lambda x: x[1]) if cands else ("-", float("nan"))
                print(f"| {d} | {s} | {'yes' if causal else 'no'} | {tf['pk']:.0f} | {tf['flash']:.0f} | {tf['cudnn']:.0f} | "
                      f"{tf['pk'] / tf['flash']:.2f} | {tf['pk'] / tf['cudnn']:.2f} | {diff:.3g} | {name} | "
                      f"{best[0].replace('attn_fwd_bf16_', '')} ({best[1]:.0f}) |", flush=True)


if __name__ == "__main__":
    main()

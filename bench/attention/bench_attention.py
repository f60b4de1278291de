#!/usr/bin/env python3
"""Attention forward on the GPU: pk (the Python module, on PyTorch tensors) against PyTorch SDPA's
flash and cuDNN backends and the autotuned Triton anchor (shared/anchors/triton_attn.py), measured in the
same process on the same tensors with the same CUDA events. Triton autotunes on a first call per shape,
before any timed run; if the anchor cannot be loaded (no triton) or fails for a shape, its column is nan.

FlashAttention grid: batch * seqlen = 16384 tokens, hidden = heads * head_dim = 2048, bf16, forward;
TFLOP/s = 4 * b * h * s^2 * d (halved when causal); median of `reps` event-timed runs after warm-up.

  PYTHONPATH=<cuda build>/python python3 bench/attention/bench_attention.py [--svg results.svg]
"""
import argparse
import ast
import importlib.util
import pathlib
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def time_ms(fn, reps, warmup=3, before=None):
    """Median ms of `reps` event-timed calls of fn after `warmup` calls; `before` (untimed) runs before each."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        if before is not None:
            before()
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def load_triton_anchor(path):
    """The anchor's definitions (imports, configs, kernels, triton_attention) without its module-level script:
    run as a file it checks correctness and benchmarks its own grid, so only imports, assignments and
    function definitions are executed. Line numbers and the file name are kept, so @triton.jit finds its source."""
    spec = importlib.util.spec_from_file_location("pk_bench_triton_attn", path)
    if spec is None:
        raise ImportError(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    tree = ast.parse(pathlib.Path(path).read_text(), filename=str(path))
    keep = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.Assign, ast.AnnAssign)
    tree.body = [n for n in tree.body if isinstance(n, keep)]
    sys.modules[spec.name] = mod
    try:
        exec(compile(tree, str(path), "exec"), mod.__dict__)
    except BaseException:
        del sys.modules[spec.name]
        raise
    if not callable(getattr(mod, "triton_attention", None)):
        raise ImportError(f"{path} defines no triton_attention(q, k, v, causal)")
    return mod


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--dims", default="64,128,256")
    ap.add_argument("--seqlens", default="512,1024,2048,4096,8192,16384")
    ap.add_argument("--causal", choices=("both", "yes", "no"), default="both")
    ap.add_argument("--triton-anchor", default="../shared/anchors/triton_attn.py",
                    help="the Triton attention anchor, relative to the repository root")
    ap.add_argument("--candidates", action="store_true", help="also time every fitting candidate policy")
    ap.add_argument("--svg", help="also write the table as an SVG plot (bench/plot.py) to this path")
    args = ap.parse_args()
    causals = {"both": (False, True), "yes": (True,), "no": (False,)}[args.causal]
    repo_root = pathlib.Path(__file__).resolve().parent.parent.parent
    anchor_path = (repo_root / args.triton_anchor).resolve()
    try:
        anchor = load_triton_anchor(anchor_path)
    except Exception as e:  # no triton, missing file, ...
        print(f"# triton unavailable: {type(e).__name__}: {e}", file=sys.stderr)
        anchor = None
    import pk
    gpus = pk.devices()["gpus"]
    if not gpus:
        sys.exit("bench_attention: this pk build sees no GPU (a CUDA build's python/ must be on PYTHONPATH)")
    device = gpus[torch.cuda.current_device()]["name"]
    plot_rows = []
    print(f"# device: {torch.cuda.get_device_name()}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}")
    if anchor is not None:
        print(f"# triton {anchor.triton.__version__} anchor: {anchor_path}")
    print("| head_dim | seqlen | causal | pk (plan) | flash | cudnn | triton | pk/flash | pk/cudnn | pk/triton "
          "| max abs diff vs flash | pk plan | best candidate (TFLOP/s) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    torch.manual_seed(0)
    for d in [int(x) for x in args.dims.split(",")]:
        for s in [int(x) for x in args.seqlens.split(",")]:
            b, h = 16384 // s, 2048 // d
            q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
            out = torch.empty_like(q)
            for causal in causals:
                def run_pk(policy=None):
                    # bound once (arguments converted outside the timing), then re-enqueued per call
                    return pk.attention(q, k, v, causal=causal, out=out, policy=policy, bind=True)

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
                res["triton"] = float("nan")
                if anchor is not None:
                    try:
                        # the anchor takes [b, h, s, d] with unit stride along d and reads whole BLOCK_M/BLOCK_N
                        # tiles without masks (its configs go up to 128): refuse other seqlens rather than read
                        # out of bounds, which would poison the CUDA context for every later measurement
                        if s % 128:
                            raise ValueError("seqlen not a multiple of 128 (the anchor does not mask partial tiles)")
                        tq, tk, tv = (x if x.stride(-1) == 1 else x.contiguous() for x in (qt, kt, vt))
                        anchor.triton_attention(tq, tk, tv, causal)  # autotunes for (s, d, causal), untimed
                        torch.cuda.synchronize()
                        res["triton"] = time_ms(lambda: anchor.triton_attention(tq, tk, tv, causal), args.reps)
                        cfg = getattr(anchor._fwd, "best_config", None)
                        if cfg is not None:
                            print(f"# triton d={d} s={s} causal={int(causal)}: BLOCK_M={cfg.kwargs.get('BLOCK_M')} "
                                  f"BLOCK_N={cfg.kwargs.get('BLOCK_N')} stages={cfg.num_stages} "
                                  f"warps={cfg.num_warps}", file=sys.stderr)
                    except Exception as e:
                        print(f"# triton failed d={d} s={s} causal={int(causal)}: {type(e).__name__}: {e}",
                              file=sys.stderr)
                        res["triton"] = float("nan")
                run_pk()()
                torch.cuda.synchronize()
                diff = (out.float() - ref.float()).abs().max().item()
                res["pk"] = time_ms(run_pk(), args.reps)
                flops = 4.0 * b * h * s * s * d / (2 if causal else 1)
                tf = {n: flops / (t * 1e-3) / 1e12 for n, t in res.items()}
                plan = pk.plan("attention", device=device, batch=b, heads_q=h, head_dim=d, seqlen_q=s, causal=causal)
                name = plan["name"]
                fitting = [c["name"] for c in plan["candidates"] if c["fits"]]
                cands = {}
                if args.candidates:
                    for c in fitting:
                        t = time_ms(run_pk(c), args.reps)
                        cands[c] = flops / (t * 1e-3) / 1e12
                    # Every candidate's rate, for calibrating the planner's models against measurement.
                    print(f"# candidates d={d} s={s} causal={int(causal)} plan={name}: " +
                          ", ".join(f"{k.replace('attn_fwd_bf16_', '')}={v:.0f}" for k, v in cands.items()), file=sys.stderr)
                best = (max(cands.items(), key=lambda x: x[1]) if cands else None)
                print(f"| {d} | {s} | {'yes' if causal else 'no'} | {tf['pk']:.0f} | {tf['flash']:.0f} | {tf['cudnn']:.0f} | {tf['triton']:.0f} | "
                      f"{tf['pk'] / tf['flash']:.2f} | {tf['pk'] / tf['cudnn']:.2f} | {tf['pk'] / tf['triton']:.2f} | "
                      f"{diff:.3g} | {name} | "
                      + (f"{best[0].replace('attn_fwd_bf16_', '')} ({best[1]:.0f})" if best else "not timed (--candidates)")
                      + " |", flush=True)
                series = {"pk": tf["pk"], "SDPA flash": tf["flash"], "cuDNN": tf["cudnn"], "Triton": tf["triton"]}
                plot_rows.append((f"d{d} s{s}{' causal' if causal else ''}",
                                  {n: x for n, x in series.items() if x == x}))  # nan: the anchor did not run
    if args.svg:
        sys.path.insert(0, str(repo_root / "bench"))
        import plot
        peak = pk.devices()["gpus"][torch.cuda.current_device()]["peak_bf16_tflops"]
        plot.write_svg(args.svg, f"attention forward, bf16, {torch.cuda.get_device_name()}", "TFLOP/s", peak,
                       plot_rows, roofline_label=f"datasheet dense bf16 peak {peak:.0f} TFLOP/s")


if __name__ == "__main__":
    main()

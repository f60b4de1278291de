"""Every row candidate forced, beside the planner's own choice, on the GPU pk's Python module sees.

    PYTHONPATH=<cuda build>/python python3 bench/reduction/rows_candidates.py [--cols 1024,4096,...]
        [--ops softmax,rms_norm,layer_norm] [--dtypes bf16,f32] [--elems 2^25] [--reps 30]

For each (op, dtype, cols) with rows = elems / cols: PyTorch's time, the planned call's (no policy: what a
user gets) and every candidate that the plan says fits, each forced by name; median of CUDA-event-timed
runs after warm-up, on the same randn tensors, each result checked against PyTorch in float64 (the larger
of 2^-6 relative and absolute: 16-bit outputs and another summation order). The last columns name the
plan's pick and the fastest candidate and give planned/fastest, so a planner miss shows as a ratio above
1. A device-to-device copy measured in the same process gives the roofline."""
import argparse

import torch

import pk
from torch_bench import time_us  # the same timing as the reduction anchors (same folder)

TORCH_DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


def calls(op, x, w, b, policy):
    """(pk bound call, PyTorch call) for one row operation."""
    cols = x.shape[-1]
    if op == "softmax":
        return pk.softmax(x, policy=policy, bind=True), lambda: torch.softmax(x, dim=-1)
    if op == "rms_norm":
        return (pk.rms_norm(x, w, 1e-5, policy=policy, bind=True),
                lambda: torch.nn.functional.rms_norm(x, (cols,), w, 1e-5))
    if op == "layer_norm":
        return (pk.layer_norm(x, w, b, 1e-5, policy=policy, bind=True),
                lambda: torch.nn.functional.layer_norm(x, (cols,), w, b, 1e-5))
    raise ValueError(op)


def parse_count(s):
    return 1 << int(s[2:]) if s.startswith("2^") else int(s)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cols", default="1024,4096,8192,16384")
    ap.add_argument("--ops", default="softmax,rms_norm,layer_norm")
    ap.add_argument("--dtypes", default="bf16,f32")
    ap.add_argument("--elems", default="2^25")
    ap.add_argument("--reps", type=int, default=30)
    a = ap.parse_args()
    torch.manual_seed(0)
    print(f"# seed 0, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    gpu = pk.devices()["gpus"][0]
    device = gpu["name"]
    big = torch.empty(1 << 28, device="cuda", dtype=torch.float32)
    copy = 2 * big.numel() * 4 / time_us(lambda: big.clone(), a.reps) / 1e3
    del big
    print(f"# pk plans for '{device}' (code target {gpu['code_target']}); copy roofline {copy:.0f} GB/s;"
          f" median of {a.reps}\n")
    print("| op | dtype | shape | torch us | planned us | planned % of copy | plan | fastest | fastest us |"
          " planned/fastest | every candidate us |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    elems = parse_count(a.elems)
    for dt in a.dtypes.split(","):
        for cols in map(int, a.cols.split(",")):
            rows = max(1, elems // cols)
            x = torch.randn(rows, cols, device="cuda", dtype=TORCH_DTYPES[dt])
            w = torch.randn(cols, device="cuda", dtype=x.dtype)
            b = torch.randn(cols, device="cuda", dtype=x.dtype)
            nbytes = 2.0 * x.numel() * x.element_size()
            for op in a.ops.split(","):
                p = pk.plan("rows", device=device, op=op, rows=rows, cols=cols, dtype=dt)
                names = [c["name"] for c in p["candidates"] if c["fits"]]
                times = {}
                torch_us = None
                for name in [None] + names:
                    run, ref = calls(op, x, w, b, name)
                    got = run().double()
                    want = ref().double()
                    err = ((got - want).abs() / want.abs().clamp_min(1.0)).max().item()
                    if not err <= 2.0 ** -6:
                        times[name] = f"wrong ({err:.2g})"
                        continue
                    times[name] = time_us(run, a.reps)
                    if torch_us is None:
                        torch_us = time_us(ref, a.reps)
                timed = {n: t for n, t in times.items() if n is not None and isinstance(t, float)}
                best = min(timed, key=timed.get) if timed else "-"
                planned = times[None]
                pl = f"{planned:.1f}" if isinstance(planned, float) else planned
                pct = f"{100 * nbytes / planned / 1e3 / copy:.0f}%" if isinstance(planned, float) else "-"
                ratio = f"{planned / timed[best]:.2f}" if isinstance(planned, float) and timed else "-"
                each = ", ".join(f"{n} {t:.1f}" if isinstance(t, float) else f"{n} {t}"
                                 for n, t in times.items() if n is not None)
                print(f"| {op} | {dt} | {rows}x{cols} | {torch_us or float('nan'):.1f} | {pl} | {pct} | {p['name']} |"
                      f" {best} | {timed.get(best, float('nan')):.1f} | {ratio} | {each} |", flush=True)
            del x, w, b


if __name__ == "__main__":
    main()

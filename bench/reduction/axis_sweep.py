"""Reduce along the last (unit-stride) axis, every compiled candidate against PyTorch, in one process.

    PYTHONPATH=<cuda build>/python python3 bench/reduction/axis_sweep.py [--ops sum,max] [--reps N]

For each shape and dtype: torch.sum / torch.amax over dim -1, pk with its plan and with each
segment candidate forced by name (``policy=``), median of CUDA-event-timed runs after warm-up; every pk
result is checked against PyTorch's first. GB/s count the input read (the output is rows elements).
The copy roofline (a device-to-device clone of 2^28 fp32) is measured in the same process."""
import argparse

import torch

import pk
from torch_bench import time_us  # the same timer as the reduction anchors (bench/reduction/torch_bench.py)

CANDIDATES = ["seg_b256_g256_u4", "seg_b256_g32_u4", "seg_b1024_g1024_u4"]
SHAPES = [(131072, 256), (32768, 1024), (8192, 4096), (2048, 16384), (512, 65536), (128, 262144)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", default="sum")
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()
    torch.manual_seed(0)
    dev = torch.device("cuda")
    big = torch.empty(1 << 28, device=dev, dtype=torch.float32)
    copy = 2 * big.numel() * 4 / time_us(lambda: big.clone(), args.reps) / 1e3
    del big
    print(f"# reduce along the last axis on {torch.cuda.get_device_name()}, PyTorch {torch.__version__}; "
          f"copy roofline {copy:.0f} GB/s; median of {args.reps}\n")
    print("| op | type | rows x cols | torch us | pk (plan) us | " + " | ".join(CANDIDATES) +
          " | best/torch GB/s | torch/pk |")
    print("|---" * (7 + len(CANDIDATES)) + "|")
    for op in args.ops.split(","):
        tf = {"sum": lambda x: torch.sum(x, dim=-1), "max": lambda x: torch.amax(x, dim=-1)}[op]
        pf = {"sum": pk.sum, "max": pk.max}[op]
        for dt in (torch.bfloat16, torch.float32):
            for rows, cols in SHAPES:
                x = torch.randn(rows, cols, device=dev, dtype=dt)
                ref = tf(x).float()
                nbytes = x.numel() * x.element_size()
                t_torch = time_us(lambda: tf(x), args.reps)
                cells, best = [], float("inf")
                for name in [None] + CANDIDATES:
                    try:
                        r = pf(x, axis=1, policy=name)
                    except Exception as e:  # noqa: BLE001 - a candidate that cannot run is reported as such
                        cells.append(f"- ({type(e).__name__})")
                        continue
                    # Both results rounded to x's dtype: one ulp of the larger each (bf16: 2^-7 relative),
                    # plus the fp32 accumulation's order difference.
                    ulp = 2.0 ** -7 if dt == torch.bfloat16 else 2.0 ** -23
                    excess = (r.float() - ref).abs() - (2 * ulp * ref.abs() + 1e-5 * cols ** 0.5)
                    if excess.max().item() > 0:
                        cells.append(f"WRONG ({excess.max().item():.3g})")
                        continue
                    bound = pf(x, axis=1, policy=name, bind=True)
                    us = time_us(bound, args.reps)
                    best = min(best, us)
                    cells.append(f"{us:.1f}")
                print(f"| {op} | {str(dt).replace('torch.', '')} | {rows} x {cols} | {t_torch:.1f} | " +
                      " | ".join(cells) + f" | {nbytes / best / 1e3:.0f} / {nbytes / t_torch / 1e3:.0f} | "
                      f"{t_torch / float(cells[0]) if cells[0][0].isdigit() else float('nan'):.2f} |", flush=True)
                del x


if __name__ == "__main__":
    main()

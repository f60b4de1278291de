"""PyTorch anchor for bench_reduce.cu: the same shapes and dtypes, random normal data (seed 0; not the
same values as pk's device-filled data), median of CUDA-event-timed runs after warm-up. Run in the same
device call as pk_bench_reduce:  python3 bench/reduction/torch_bench.py [--quick]"""
import sys
import torch

REPS = 10 if "--quick" in sys.argv else 30
WARMUP = 5


def time_us(f):
    for _ in range(WARMUP):
        f()
    start = [torch.cuda.Event(enable_timing=True) for _ in range(REPS)]
    end = [torch.cuda.Event(enable_timing=True) for _ in range(REPS)]
    for i in range(REPS):
        start[i].record()
        f()
        end[i].record()
    torch.cuda.synchronize()
    t = sorted(s.elapsed_time(e) * 1000.0 for s, e in zip(start, end))
    return t[len(t) // 2]


def main():
    torch.manual_seed(0)
    dev = torch.device("cuda")
    print(f"# PyTorch {torch.__version__} on {torch.cuda.get_device_name()} (median of {REPS})\n")
    print("| op | type | shape | us | GB/s |\n|---|---|---|---|---|")
    for lg in ([20, 28] if "--quick" in sys.argv else [16, 20, 24, 28]):
        for dt in (torch.float32, torch.float64, torch.bfloat16):
            x = torch.randn(1 << lg, device=dev, dtype=dt)
            us = time_us(lambda: torch.sum(x))
            print(f"| sum | {dt} | 2^{lg} | {us:.1f} | {x.numel() * x.element_size() / us / 1e3:.0f} |")
            del x
    elems = 1 << 25
    widths = [1024, 16384, 262144] if "--quick" in sys.argv else [1024, 4096, 16384, 65536, 262144]
    for dt in (torch.bfloat16, torch.float32):
        for cols in widths:
            rows = elems // cols
            x = torch.randn(rows, cols, device=dev, dtype=dt)
            w = torch.randn(cols, device=dev, dtype=dt)
            b = torch.randn(cols, device=dev, dtype=dt)
            by = 2.0 * x.numel() * x.element_size()
            cases = [
                ("softmax", lambda: torch.softmax(x, dim=-1), by),
                ("layer_norm", lambda: torch.nn.functional.layer_norm(x, (cols,), w, b, 1e-5), by),
                ("rms_norm", lambda: torch.nn.functional.rms_norm(x, (cols,), w, 1e-5), by),
                ("row sum", lambda: torch.sum(x, dim=-1), by / 2),
            ]
            for name, f, nbytes in cases:
                us = time_us(f)
                print(f"| {name} | {dt} | {rows} x {cols} | {us:.1f} | {nbytes / us / 1e3:.0f} |")
            del x, w, b


if __name__ == "__main__":
    main()

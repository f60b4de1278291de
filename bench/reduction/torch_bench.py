"""PyTorch anchor for bench_reduce.cu: the same shapes and dtypes, random normal data (seed 0; not the
same values as pk's device-filled data), median of CUDA-event-timed runs after warm-up. Run in the same
device call as pk_bench_reduce:  python3 bench/reduction/torch_bench.py [--quick] [--svg PATH]

When pk's Python module is importable (PYTHONPATH=<cuda build>/python), pk runs on the same tensors in the
same process (a bound call: its arguments converted once, outside the timing), each result checked
against PyTorch's, and the table gains pk's time and the ratio; --svg writes the row operations' GB/s
(pk, PyTorch, against a device-to-device copy measured here) as a plot (bench/plot.py)."""
import pathlib
import sys

import torch

try:
    import pk
except ImportError:
    pk = None

REPS = 10 if "--quick" in sys.argv else 30
WARMUP = 5


def time_us(f, reps=None):
    """Median of `reps` (default REPS) CUDA-event-timed calls of f after WARMUP untimed ones, in us."""
    reps = reps or REPS
    for _ in range(WARMUP):
        f()
    start = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    end = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        start[i].record()
        f()
        end[i].record()
    torch.cuda.synchronize()
    t = sorted(s.elapsed_time(e) * 1000.0 for s, e in zip(start, end))
    return t[len(t) // 2]


def main():
    torch.manual_seed(0)
    dev = torch.device("cuda")
    print(f"# PyTorch {torch.__version__} on {torch.cuda.get_device_name()} (median of {REPS})"
          f"{'; pk through its Python module' if pk else ''}\n")
    print("| op | type | shape | us | GB/s |" + (" pk us | pk GB/s | torch/pk |" if pk else "") +
          "\n|---|---|---|---|---|" + ("---|---|---|" if pk else ""))
    big = torch.empty(1 << 28, device=dev, dtype=torch.float32)
    copy_gbps = 2 * big.numel() * 4 / time_us(lambda: big.clone()) / 1e3
    del big
    plot_rows = []
    for lg in ([20, 28] if "--quick" in sys.argv else [16, 20, 24, 28]):
        for dt in (torch.float32, torch.float64, torch.bfloat16):
            x = torch.randn(1 << lg, device=dev, dtype=dt)
            us = time_us(lambda: torch.sum(x))
            nbytes = x.numel() * x.element_size()
            line = f"| sum | {dt} | 2^{lg} | {us:.1f} | {nbytes / us / 1e3:.0f} |"
            if pk:
                line += pk_columns(lambda: pk.sum(x, bind=True), lambda r: r.reshape(()), lambda: torch.sum(x),
                                   nbytes, us)[0]
            print(line)
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
                ("softmax", lambda: torch.softmax(x, dim=-1), by, lambda: pk.softmax(x, bind=True)),
                ("layer_norm", lambda: torch.nn.functional.layer_norm(x, (cols,), w, b, 1e-5), by,
                 lambda: pk.layer_norm(x, w, b, 1e-5, bind=True)),
                ("rms_norm", lambda: torch.nn.functional.rms_norm(x, (cols,), w, 1e-5), by,
                 lambda: pk.rms_norm(x, w, 1e-5, bind=True)),
                ("row sum", lambda: torch.sum(x, dim=-1), by / 2, lambda: pk.sum(x, axis=1, bind=True)),
            ]
            for name, f, nbytes, bind in cases:
                us = time_us(f)
                line = f"| {name} | {dt} | {rows} x {cols} | {us:.1f} | {nbytes / us / 1e3:.0f} |"
                series = {"PyTorch": nbytes / us / 1e3}
                if pk:
                    cols_text, pk_gbps = pk_columns(bind, lambda r: r, f, nbytes, us)
                    line += cols_text
                    series["pk"] = pk_gbps
                print(line, flush=True)
                plot_rows.append((f"{name} {str(dt).replace('torch.', '')} {rows}x{cols}", series))
            del x, w, b


    if "--svg" in sys.argv:
        sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
        import plot
        plot.write_svg(sys.argv[sys.argv.index("--svg") + 1], f"row operations on {torch.cuda.get_device_name()}",
                       "GB/s", copy_gbps, plot_rows, roofline_label=f"device-to-device copy {copy_gbps:.0f} GB/s")


def pk_columns(bind, result_of, torch_f, nbytes, torch_us):
    """pk's time on the same tensors (a bound call), its result checked against PyTorch's (the larger of
    2^-6 relative and 2^-6 absolute: 16-bit outputs and a different summation order)."""
    run = bind()
    got = result_of(run()).double()
    want = torch_f().double()
    err = ((got - want).abs() / want.abs().clamp_min(1.0)).max().item()
    if not err <= 2.0 ** -6:
        return f" wrong (max rel err {err:.3g}) | - | - |", float("nan")
    us = time_us(run)
    return f" {us:.1f} | {nbytes / us / 1e3:.0f} | {torch_us / us:.2f} |", nbytes / us / 1e3


if __name__ == "__main__":
    main()

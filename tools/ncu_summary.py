#!/usr/bin/env python3
"""Where one profiled kernel spends its time, from an Nsight Compute report of one launch (ncu --set full).

    python3 tools/ncu_summary.py REPORT.ncu-rep [--ncu PATH] [--hot 20]
    python3 tools/ncu_summary.py --sass SASS.csv [--raw RAW.csv]

With a report it exports the SASS source page and the raw metrics as CSV through ncu (so it runs where ncu
is: the GPU machine; tools/device_round.sh's profile step calls it); with --sass/--raw it reads such exports.
Prints markdown:
- the pipes' utilization (tensor, MUFU/XU, ALU, FMA, LSU, shared-memory wavefronts) and issue-slot use;
- warp stall reasons as shares of all PC samples (samples whose reason the export has no column for are
  counted as such: on sm_90a most of those sit on the warpgroup MMA instructions);
- the instruction mix: warp-level instructions executed per opcode and each opcode's share of the samples;
- the hottest instructions with their top stall reasons.
The stall reasons are ncu's ("wait": a fixed-latency dependency; "long_sb": a global/local memory or
barrier-try result; "mio": the memory input/output queue, shared memory and MUFU among them; "math": a
pipe busy; "selected"/"not_selected": issuing or ready).
"""
import argparse
import collections
import csv
import io
import re
import subprocess
import sys

PIPE_METRICS = [
    ("tensor pipe active", "sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed"),
    ("XU (MUFU) instructions", "sm__inst_executed_pipe_xu_realtime.avg.pct_of_peak_sustained_elapsed"),
    ("ALU instructions", "sm__inst_executed_pipe_alu_realtime.avg.pct_of_peak_sustained_elapsed"),
    ("FMA instructions", "sm__inst_executed_pipe_fma_realtime.avg.pct_of_peak_sustained_elapsed"),
    ("LSU instructions", "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_elapsed"),
    ("shared-memory wavefronts", "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed"),
    ("issue slots busy", "sm__inst_issued.avg.pct_of_peak_sustained_active"),
    ("DRAM throughput", "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"),
]


def export(report, page, ncu):
    args = [ncu, "--import", report, "--page", page, "--csv"]
    if page == "source":
        args += ["--print-source", "sass"]
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def metric_row(text):
    """The raw page: a header row, a units row, then one row per kernel (the first is taken)."""
    rows = list(csv.reader(io.StringIO(text)))
    rows = [r for r in rows if r]
    if len(rows) < 3:
        return {}
    return dict(zip(rows[0], rows[2]))


def sass_rows(text):
    """The source page: an optional 'Kernel Name' line, the header, then one row per instruction."""
    rows = [r for r in csv.reader(io.StringIO(text)) if r]
    start = next((i for i, r in enumerate(rows) if "Address" in r and "Source" in r), None)
    if start is None:
        raise SystemExit("ncu_summary: no SASS table (header with Address and Source) in the source export")
    header = rows[start]
    return header, [r for r in rows[start + 1:] if len(r) == len(header)]


def as_int(x):
    try:
        return int(float(x.replace(",", "")))
    except (ValueError, AttributeError):
        return 0


def as_float(x):
    try:
        return float(x.replace(",", ""))
    except (ValueError, AttributeError):
        return float("nan")


def opcode(src):
    s = re.sub(r"^@!?U?P\w+\s+", "", src.strip())
    return s.split()[0].split(".")[0] if s else ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("report", nargs="?", help="an .ncu-rep of one kernel launch")
    ap.add_argument("--sass", help="an export of the SASS source page (CSV) instead of a report")
    ap.add_argument("--raw", help="an export of the raw page (CSV)")
    ap.add_argument("--ncu", default="ncu")
    ap.add_argument("--hot", type=int, default=20, help="hottest instructions listed")
    a = ap.parse_args()
    if a.report:
        sass_text, raw_text = export(a.report, "source", a.ncu), export(a.report, "raw", a.ncu)
    elif a.sass:
        sass_text = open(a.sass).read()
        raw_text = open(a.raw).read() if a.raw else ""
    else:
        ap.error("a report or --sass is required")

    raw = metric_row(raw_text) if raw_text else {}
    if raw:
        print("## Pipes (% of peak)\n\n| what | % |\n|---|---|")
        for name, key in PIPE_METRICS:
            # Some metrics carry a section prefix in the raw page (SM_A.TriageCompute.<metric>).
            hit = next((k for k in raw if k == key or k.endswith("." + key)), None)
            if hit is not None:
                print(f"| {name} | {as_float(raw[hit]):.1f} |")
        print()

    header, rows = sass_rows(sass_text)
    col = {k: i for i, k in enumerate(header)}
    samples_key = next((k for k in header if k.startswith("Warp Stall Sampling (All")), None)
    exec_key = "Instructions Executed"
    stalls = [k for k in header if k.startswith("stall_") and "Not Issued" not in k]
    if samples_key is None or exec_key not in col:
        raise SystemExit("ncu_summary: the SASS export lacks the sampling or executed-instruction columns "
                         "(profile with --set full)")
    total_samples = sum(as_int(r[col[samples_key]]) for r in rows) or 1
    total_exec = sum(as_int(r[col[exec_key]]) for r in rows) or 1

    by_reason = collections.Counter()
    for r in rows:
        for k in stalls:
            by_reason[k] += as_int(r[col[k]])
    print(f"## Warp stall reasons ({total_samples} samples)\n\n| reason | % of samples |\n|---|---|")
    for k, v in by_reason.most_common(10):
        print(f"| {k[len('stall_'):]} | {100 * v / total_samples:.1f} |")
    # Samples whose reason has no column in the export (on sm_90a most of those on the warpgroup MMA).
    other = total_samples - sum(by_reason.values())
    if other > 0:
        print(f"| (a reason without a column in the export) | {100 * other / total_samples:.1f} |")

    ex, smp = collections.Counter(), collections.Counter()
    for r in rows:
        op = opcode(r[col["Source"]])
        ex[op] += as_int(r[col[exec_key]])
        smp[op] += as_int(r[col[samples_key]])
    print(f"\n## Instruction mix ({total_exec / 1e6:.1f}M warp instructions summed over the SASS rows)\n")
    print("| opcode | executed (M) | % of executed | % of samples |\n|---|---|---|---|")
    for op, v in ex.most_common(20):
        print(f"| {op} | {v / 1e6:.2f} | {100 * v / total_exec:.1f} | {100 * smp[op] / total_samples:.1f} |")

    print("\n## Hottest instructions\n\n| address | samples % | executed | top stalls | instruction |\n|---|---|---|---|---|")
    hot = sorted(rows, key=lambda r: -as_int(r[col[samples_key]]))[: a.hot]
    for r in hot:
        top = sorted(stalls, key=lambda k: -as_int(r[col[k]]))[:2]
        why = ", ".join(f"{k[len('stall_'):]} {as_int(r[col[k]])}" for k in top if as_int(r[col[k]]) > 0)
        src = r[col["Source"]].strip().replace("|", "\\|")
        print(f"| {r[col['Address']][-6:]} | {100 * as_int(r[col[samples_key]]) / total_samples:.1f} | "
              f"{as_int(r[col[exec_key]])} | {why} | `{src}` |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

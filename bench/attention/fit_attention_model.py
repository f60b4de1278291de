#!/usr/bin/env python3
"""Refits the attention planner's calibration constants (archdb: a device entry's "calibration" object, the
keys "attention.*" that kernels/attention/src/attention_api.cpp reads) to a measured grid.

  pk bench attention --json > attn.json                      (on the GPU: every candidate forced by name)
  python3 bench/attention/fit_attention_model.py attn.json --pk build/host/tools/pk/pk [--device "H200 SXM"]

For every candidate of every row it reads the model's terms from `pk plan attention` (waves, key tiles per
block, the warpgroup MMA and exp2 time of a tile, the tiled model's prediction) and fits, by least squares on
the relative error:
  warp-specialized: time = tiles x (share x (MMA + exp2) + per-tile cost) + waves x per-wave cost
                    + items x per-item cost, where one block per item walks waves x its key tiles and a
                    persistent grid's busiest block its items and their key tiles; share per consumer count
  tiled:            time = scale x (its model without the wave cost) + waves x per-wave cost
It prints the fitted constants, each row's planned-vs-best with the model's current constants and with the
fit, and the mean |predicted / measured - 1|. The fit is of the planner as built: run it with a pk whose wave
costs are zero to refit from scratch, or read the current residuals.
"""
import argparse
import json
import re
import subprocess

import numpy as np


def model_terms(pk, device, problem):
    args = [pk, "plan", "attention", "--device", device, "--head-dim", str(problem["head_dim"]), "--heads",
            str(problem["heads_q"]), "--batch", str(problem["batch"]), "--seqlen-q", str(problem["seqlen_q"])]
    if problem["causal"]:
        args.append("--causal")
    lines = subprocess.run(args, capture_output=True, text=True, check=True).stdout.split("\n")
    out = {}
    for i, line in enumerate(lines):
        m = re.match(r"^\s*>?\s*(attn_fwd_\S+)\s+yes", line)
        if not m:
            continue
        why = lines[i + 1]
        name = m.group(1)
        t = {"pred": float(re.search(r"predicted ([\d.]+) us", why).group(1)),
             "ws": "_ws_" in name or "_wsp_" in name, "persistent": "_wsp_" in name}
        w = re.search(r"(\d) consumer warpgroups .*per tile ([\d.e-]+) us of warpgroup MMA \+ ([\d.e-]+) us of exp2, "
                      r"([\d.]+) of the sum exposed \+ ([\d.]+) us hand-offs, ([\d.]+) us a wave", why)
        if t["ws"] and w:
            cons, mma, exp, share, tile, wave = map(float, w.groups())
            t["cons"], t["sum"] = int(cons), mma + exp
            if t["persistent"]:
                # the busiest block of the persistent grid: its items and key tiles
                b = re.search(r"the busiest (\d+) items of (\d+) key tiles", why)
                t["waves"], t["tiles"], t["items"] = 0, int(b.group(2)), int(b.group(1))
            else:
                t["waves"] = int(re.search(r"\d+ blocks in (\d+) waves", why).group(1))
                t["tiles"] = t["waves"] * (t["pred"] / t["waves"] - wave) / (share * t["sum"] + tile)
                t["items"] = 0
        else:
            t["waves"] = int(re.search(r"\d+ blocks in (\d+) waves", why).group(1))
            w = re.search(r", ([\d.]+) us a wave \((?:a priori|measured on [^)]*)\)", why)
            t["base"] = t["pred"] - (t["waves"] * float(w.group(1)) if w else 0.0)
        out[name] = t
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bench_json")
    ap.add_argument("--pk", default="build/host/tools/pk/pk")
    ap.add_argument("--device", default="H200 SXM")
    a = ap.parse_args()
    bench = json.load(open(a.bench_json))
    cands = []
    for row in bench["rows"]:
        terms = model_terms(a.pk, a.device, row["problem"])
        for run in row["runs"][1:]:  # runs[0] is the plan, the rest every candidate forced by name
            c = dict(terms[run["name"]], row=row["label"], name=run["name"], meas=run["time"]["median_us"])
            cands.append(c)
    ws = [c for c in cands if c["ws"]]
    ti = [c for c in cands if not c["ws"]]
    # Key tiles x the exposed share of (MMA + exp2), per consumer count: 2 consumer warpgroups take turns
    # (ping-pong), 3 do not; key tiles x the per-tile cost; waves x the per-wave cost (one block per item);
    # the busiest persistent block's items x the per-item cost.
    fw = [lambda c: c["tiles"] * c["sum"] * (c["cons"] == 2), lambda c: c["tiles"] * c["sum"] * (c["cons"] == 3),
          lambda c: c["tiles"], lambda c: c["waves"], lambda c: c["items"]]
    ft = [lambda c: c["base"], lambda c: c["waves"]]

    def fit(group, feats):
        A = np.array([[f(c) / c["meas"] for f in feats] for c in group])
        return np.linalg.lstsq(A, np.ones(len(group)), rcond=None)[0]

    xw, xt = fit(ws, fw), fit(ti, ft)
    print("warp-specialized: share %.3f (2 consumer warpgroups) %.3f (3), per tile %.3f us, per wave %.2f us, "
          "per persistent item %.2f us" % tuple(xw))
    print("tiled: scale %.3f (share of the peak / scale), per wave %.2f us" % tuple(xt))
    print("archdb calibration: attention.ws_sum_share %.2f, attention.ws_sum_share_3wg %.2f, attention.ws_tile_us %.2f, "
          "attention.ws_wave_us %.1f, attention.ws_persistent_item_us %.2f, attention.tiled_wave_us %.1f; "
          "attention.tiled_matrix_share = the device's current share / %.3f" % (*xw, xt[1], xt[0]))
    fitted = lambda c: sum(k * f(c) for k, f in zip(xw if c["ws"] else xt, fw if c["ws"] else ft))
    for label, pred in (("current model", lambda c: c["pred"]), ("fitted", fitted)):
        rows, errs = {}, []
        for c in cands:
            rows.setdefault(c["row"], []).append(c)
            errs.append(abs(pred(c) / c["meas"] - 1))
        print("\n%s: mean |predicted / measured - 1| %.1f%%" % (label, 100 * np.mean(errs)))
        for r, cs in rows.items():
            best, pick = min(cs, key=lambda c: c["meas"]), min(cs, key=pred)
            print("  %-22s planned %-40s best %-40s %.3f" % (r, pick["name"], best["name"], pick["meas"] / best["meas"]))


if __name__ == "__main__":
    main()

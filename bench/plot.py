"""Self-contained SVG bar plots for pk's benchmark drivers (standard library only).

The Python twin of the pk tool's SVG writer (tools/pk/svg_plot.cpp, used by ``pk bench``): the same
layout, colours and legend, so plots from the Python drivers and from ``pk bench`` look alike. One
group of bars per row (one bar per series), a dashed horizontal roofline, axis labels, a legend and a
title.

Use from a driver (bench/attention/*.py, bench/reduction/torch_bench.py)::

    import sys, pathlib
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # the bench/ folder
    from plot import write_svg

    rows = [
        ("d128 s4k causal", {"pk": 512.0, "FlashAttention": 540.0, "torch SDPA": 480.0}),
        ("d128 s16k",       {"pk": 601.0, "FlashAttention": 590.0}),  # a missing series draws no bar
    ]
    write_svg("out/attention.svg", "attention fwd bf16 on H200 SXM", "TFLOP/s",
              roofline=790.0, rows=rows, roofline_label="roofline: cuBLAS GEMM 790 TFLOP/s")

Values are in ``unit`` (the y axis starts at 0); ``roofline`` <= 0 (or None) draws no line. Series
appear in the legend in order of first appearance. Run this file to write a demonstration plot:
``python3 bench/plot.py OUT.svg``.
"""

import math
import sys
from xml.sax.saxutils import escape

# Layout in SVG user units (pixels): the same numbers as tools/pk/svg_plot.cpp; keep them in step.
MARGIN_LEFT = 80  # room for the y tick labels and the rotated unit
MARGIN_RIGHT = 24
MARGIN_TOP = 64  # title, then the legend
MARGIN_BOTTOM = 120  # x labels rotated by 35 degrees
BAR_WIDTH = 14
GROUP_GAP = 18
PLOT_HEIGHT = 300
MIN_PLOT_WIDTH = 480
TARGET_TICKS = 5
# Colour-blind-safe palette (Okabe-Ito), one per series in order; the roofline is vermillion.
PALETTE = ["#0072B2", "#56B4E9", "#009E73", "#E69F00", "#CC79A7", "#F0E442", "#000000"]
ROOFLINE_COLOUR = "#D55E00"


def _esc(s):
    return escape(str(s), {'"': "&quot;"})


def _num(v):
    return "%.1f" % v


def _tick(v):
    """Tick label: ticks are round (_nice_step), so 6 significant digits print them whole."""
    return "%.6g" % v


def _value(v):
    """A bar's value in its tooltip: 4 significant digits."""
    return "%.4g" % v


def _nice_step(top):
    """A round tick step (1, 2 or 5 times a power of ten) giving about TARGET_TICKS ticks up to top."""
    raw = top / TARGET_TICKS
    mag = 10.0 ** math.floor(math.log10(raw))
    for m in (1.0, 2.0, 5.0):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def _finite(v):
    return v is not None and isinstance(v, (int, float)) and math.isfinite(v)


def svg_bar_plot(title, unit, roofline, rows, roofline_label=None):
    """The SVG document as a string; arguments as write_svg's."""
    roofline = roofline if _finite(roofline) and roofline > 0 else 0.0
    if roofline_label is None:
        roofline_label = "roofline %s %s" % (_value(roofline), unit)
    rows = [(label, list(values.items()) if isinstance(values, dict) else list(values)) for label, values in rows]
    series = []
    top = roofline
    for _, values in rows:
        for name, v in values:
            if name not in series:
                series.append(name)
            if _finite(v):
                top = max(top, float(v))
    if top <= 0:
        top = 1.0
    step = _nice_step(top * 1.05)
    ymax = math.ceil(top * 1.05 / step) * step
    group_width = max(len(series), 1) * BAR_WIDTH + GROUP_GAP
    plot_width = max(MIN_PLOT_WIDTH, group_width * len(rows))
    width = MARGIN_LEFT + plot_width + MARGIN_RIGHT
    height = MARGIN_TOP + PLOT_HEIGHT + MARGIN_BOTTOM
    x0, y0 = MARGIN_LEFT, MARGIN_TOP + PLOT_HEIGHT

    def ypos(v):
        return y0 - v / ymax * PLOT_HEIGHT

    o = []
    o.append('<?xml version="1.0" encoding="UTF-8"?>\n')
    o.append('<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" '
             'font-family="sans-serif" font-size="11">\n' % (_num(width), _num(height), _num(width), _num(height)))
    o.append('<rect width="100%" height="100%" fill="white"/>\n')
    o.append('<text x="%s" y="20" text-anchor="middle" font-size="14" font-weight="bold">%s</text>\n'
             % (_num(width / 2), _esc(title)))
    # Legend: one swatch per series, then the roofline's dashed line.
    lx, ly = float(x0), 40.0
    for i, name in enumerate(series):
        o.append('<rect x="%s" y="%s" width="10" height="10" fill="%s"/><text x="%s" y="%s">%s</text>\n'
                 % (_num(lx), _num(ly - 9), PALETTE[i % len(PALETTE)], _num(lx + 14), _num(ly), _esc(name)))
        lx += 14 + 7.0 * len(name) + 16  # about 7 units per character at size 11
    if roofline > 0:
        o.append('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2" stroke-dasharray="6,3"/>'
                 '<text x="%s" y="%s">%s</text>\n'
                 % (_num(lx), _num(ly - 4), _num(lx + 20), _num(ly - 4), ROOFLINE_COLOUR, _num(lx + 24), _num(ly),
                    _esc(roofline_label)))
    # Grid and y axis.
    v = 0.0
    while v <= ymax * (1 + 1e-9):
        y = ypos(v)
        o.append('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#dddddd"/><text x="%s" y="%s" text-anchor="end">%s</text>\n'
                 % (_num(x0), _num(y), _num(x0 + plot_width), _num(y), _num(x0 - 6), _num(y + 4), _tick(v)))
        v += step
    o.append('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="black"/>\n' % (_num(x0), _num(MARGIN_TOP), _num(x0), _num(y0)))
    o.append('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="black"/>\n' % (_num(x0), _num(y0), _num(x0 + plot_width), _num(y0)))
    mid = MARGIN_TOP + PLOT_HEIGHT / 2
    o.append('<text x="16" y="%s" text-anchor="middle" transform="rotate(-90 16 %s)">%s</text>\n'
             % (_num(mid), _num(mid), _esc(unit)))
    # Bars, one group per row, and the row labels.
    for r, (label, values) in enumerate(rows):
        gx = x0 + group_width * r + GROUP_GAP / 2
        for name, val in values:
            if not _finite(val) or val < 0:
                continue
            k = series.index(name)
            bx = gx + BAR_WIDTH * k
            o.append('<rect x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s, %s: %s %s</title></rect>\n'
                     % (_num(bx), _num(ypos(val)), _num(BAR_WIDTH - 2), _num(y0 - ypos(val)), PALETTE[k % len(PALETTE)],
                        _esc(label), _esc(name), _value(val), _esc(unit)))
        cx = gx + (group_width - GROUP_GAP) / 2
        o.append('<text x="%s" y="%s" text-anchor="end" transform="rotate(-35 %s %s)">%s</text>\n'
                 % (_num(cx), _num(y0 + 14), _num(cx), _num(y0 + 14), _esc(label)))
    if roofline > 0:
        o.append('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2" stroke-dasharray="6,3"/>\n'
                 % (_num(x0), _num(ypos(roofline)), _num(x0 + plot_width), _num(ypos(roofline)), ROOFLINE_COLOUR))
    o.append("</svg>\n")
    return "".join(o)


def write_svg(path, title, unit, roofline, rows, roofline_label=None):
    """Writes a bar plot of `rows` to `path` (an .svg file).

    path: the file to write. title: the plot's title (put the device and the family in it).
    unit: the y axis label and unit ("GB/s", "TFLOP/s"). roofline: the dashed line's value in `unit`
    (<= 0 or None: no line). rows: a list of (label, {series_name: value}) pairs, one group of bars per
    row, in order; values None, NaN or negative draw no bar. roofline_label: the legend text of the line
    (default "roofline <value> <unit>").
    """
    with open(path, "w", encoding="utf-8") as f:
        f.write(svg_bar_plot(title, unit, roofline, rows, roofline_label))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: plot.py OUT.svg  (writes a demonstration plot)")
    write_svg(sys.argv[1], "plot.py demonstration <&>", "GB/s", 4000.0,
              [("sum f32 2^24", {"pk (planned)": 3100.0, "best candidate": 3200.0, "anchor (CUB)": 3000.0}),
               ("sum bf16 2^28", {"pk (planned)": 3900.0, "best candidate": 3950.0}),
               ("max f32 2^28", {"pk (planned)": float("nan"), "anchor (CUB)": 3500.0})],
              roofline_label="roofline: copy 4000 GB/s")

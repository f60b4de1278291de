#!/usr/bin/env bash
# bench_check.sh PYTHON PK FAMILY DIR: `pk bench FAMILY` on the emulator impersonating an A100 with
# --out DIR exits 0, prints the markdown table on stdout and writes it to DIR/bench-FAMILY.md (header,
# table columns, every row verified) and DIR/bench-FAMILY.svg (an SVG document).
# PK and FAMILY "-": checks bench/plot.py's SVG instead (DIR/plot.svg).
set -u
py=$1 pk=$2 family=$3 dir=$4
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir" && mkdir -p "$dir" || exit 1
fail() { echo "bench_check.sh: $*" >&2; exit 1; }
parse_svg() {
  "$py" -c 'import sys, xml.dom.minidom as m
d = m.parse(sys.argv[1]).documentElement
assert d.tagName == "svg", d.tagName
n = len(d.getElementsByTagName("rect"))
assert n >= 3, n
print("svg ok:", sys.argv[1], n, "rects")' "$1" || fail "$1 is not a valid SVG document"
}
if [[ $pk == - ]]; then
  "$py" "$here/../../bench/plot.py" "$dir/plot.svg" || fail "bench/plot.py failed"
  parse_svg "$dir/plot.svg"
  "$py" -c 'import sys; sys.path.insert(0, sys.argv[1]); import plot
s = plot.svg_bar_plot("t", "GB/s", 0, [("a", {"x": 1.0})]); assert "stroke-dasharray" not in s, "no roofline line"
assert "<title>a, x: 1 GB/s</title>" in s' "$here/../../bench" || fail "plot.svg_bar_plot"
  exit 0
fi
"$pk" bench "$family" --device "A100-SXM4-80GB" --quick --out "$dir" > "$dir/stdout.md" 2> "$dir/stderr.txt"
rc=$?
cat "$dir/stdout.md" "$dir/stderr.txt"
[[ $rc -eq 0 ]] || fail "pk bench $family: exit status $rc, expected 0"
md=$dir/bench-$family.md
[[ -f $md ]] || fail "$md missing"
for re in "^# pk bench $family on A100-SXM4-80GB" "^- device: " "^- date: [0-9]{4}-" "^- pk commit: " \
          "^- command: \`pk bench $family --device A100-SXM4-80GB --quick --out " "^- roofline \(" "\*\*emulator\*\*" \
          "^\| problem \| planned \| planned time \| best candidate \| best time \| planned/best \| pk (GB/s|TFLOP/s) \| % of roofline \| anchor \| anchor time \| pk/anchor \| check \|" \
          "\| ok \([0-9]+ runs verified\) \|$"; do
  grep -Eq -- "$re" "$md" || fail "$md does not match /$re/"
done
! grep -q "WRONG\|ERROR" "$md" || fail "$md reports an error"
grep -Eq "host wall-clock" "$dir/stderr.txt" || fail "no emulator warning on stderr"
cmp -s "$md" "$dir/stdout.md" || fail "stdout differs from $md"
parse_svg "$dir/bench-$family.svg"
exit 0

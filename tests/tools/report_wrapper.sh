#!/usr/bin/env bash
# Test of cmake/pk_report.sh (the resource reports of a build with PK_RESOURCE_REPORTS): the report file
# holds the compiler's whole standard error, the build's output keeps the warnings and drops the report
# lines, and a failed compile leaves no report and keeps its exit status.
#   report_wrapper.sh PATH/TO/pk_report.sh
set -u
wrap=${1:?pk_report.sh}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "report_wrapper.sh: $*" >&2; exit 1; }
cat > "$dir/compiler.sh" <<'EOS'
#!/bin/sh
# A stand-in compiler: a warning, ptxas lines and a clang remark with its excerpt on stderr; exit $RC.
cat >&2 <<'EOT'
k.cu(3): warning #177-D: variable "x" was declared but never referenced
ptxas info    : Compiling entry function '_Z1kv' for 'sm_80'
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, 352 bytes cmem[0]
In file included from k.hip:1:
k.hpp:5:1: remark: Function Name: _Z1kv [-Rpass-analysis=kernel-resource-usage]
    5 | __global__ void k() {}
      | ^
EOT
exit "${RC:-0}"
EOS
out=$(RC=0 sh "$wrap" "$dir/reports" sm_80.ptxas.log sh "$dir/compiler.sh" -O3 -c /src/pk_targets/cuda/reduce_f32.cu -o x.o 2>&1)
rc=$?
[[ $rc == 0 ]] || fail "exit status $rc for a compile that succeeded"
log="$dir/reports/reduce_f32.sm_80.ptxas.log"
[[ -f $log ]] || fail "no report at $log"
[[ $(grep -c 'ptxas info' "$log") == 2 && $(grep -c 'remark:' "$log") == 1 ]] || fail "the report lacks lines: $(cat "$log")"
grep -q 'warning #177-D' <<< "$out" || fail "the warning did not reach the build's output: $out"
if grep -Eq 'ptxas info|remark:|bytes stack frame|^ +5 \||In file included' <<< "$out"; then fail "report lines reached the build's output: $out"; fi
RC=3 sh "$wrap" "$dir/reports" gfx942.remarks sh "$dir/compiler.sh" -c /src/repro_f64.hip -o y.o > "$dir/fail.txt" 2>&1
rc=$?
[[ $rc == 3 ]] || fail "exit status $rc for a compile that failed with 3"
[[ ! -e $dir/reports/repro_f64.gfx942.remarks && ! -e $dir/reports/repro_f64.gfx942.remarks.part ]] || fail "a failed compile left a report"
grep -q 'remark:' "$dir/fail.txt" || fail "a failed compile's output was filtered"
echo "report_wrapper.sh: ok"

#!/usr/bin/env bash
# One round on the GPU machine: GPU tests, compute-sanitizer (memcheck, racecheck, synccheck) and
# benchmarks with their anchors, from a build folder made on the CI kind (binaries built there run on
# the GPU machine) and carried along. Logs go to $OUT; a short summary is printed last.
#
#   tools/device_round.sh BUILD_DIR [tests|sanitize|bench|python|pkbench|all]...
#
# python: the Python module's PyTorch test (tests/python/test_pk_torch.py) with BUILD_DIR/python on the
# path; pkbench: `pk bench reduce` and `pk bench attention` (markdown and SVG under $OUT/pkbench).
set -u
build=${1:?build dir}; shift
steps=${*:-all}
out=${OUT:-/tmp/pk-round}
mkdir -p "$out"
summary=()
note() { summary+=("$*"); }
has() { [[ " $steps " == *" all "* || " $steps " == *" $1 "* ]]; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader > "$out/gpu.txt" 2>&1
note "gpu: $(cat "$out/gpu.txt")"

tests=()
while IFS= read -r t; do tests+=("$t"); done < <(find "$build/tests" -type f -name 'pk_test_*' -perm -u+x | sort)

if has tests; then
  for t in "${tests[@]}"; do
    n=$(basename "$t")
    "$t" --gtest_brief=1 > "$out/$n.log" 2>&1; rc=$?
    note "test $n: rc=$rc $(grep -E '^\[  (PASSED|FAILED) ' "$out/$n.log" | tr '\n' ' ')"
  done
fi

if has sanitize; then
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for tool in memcheck racecheck synccheck; do
    for t in "${tests[@]}"; do
      n=$(basename "$t")
      [[ $n == pk_test_numeric || $n == pk_test_archdb ]] && continue   # no device code
      # The GPU instances of the parameterized tests; a binary without them (GPU-only tests such as
      # pk_test_graph_capture) runs whole. SAN_EXCLUDE: a gtest pattern left out under the sanitizers
      # (cases too large to run instrumented).
      pattern='*/cuda'
      [[ $("$t" --gtest_list_tests --gtest_filter='*/cuda' | grep -c '^  ') == 0 ]] && pattern='*'
      "$cs" --tool "$tool" --error-exitcode 17 "$t" --gtest_filter="$pattern${SAN_EXCLUDE:+-$SAN_EXCLUDE}" --gtest_brief=1 > "$out/san_${tool}_$n.log" 2>&1; rc=$?
      note "sanitizer $tool $n: rc=$rc $(grep -E 'ERROR SUMMARY|Hazard|RACECHECK SUMMARY' "$out/san_${tool}_$n.log" | tail -1)"
    done
  done
fi

if has bench; then
  while IFS= read -r b; do
    n=$(basename "$b")
    "$b" > "$out/$n.txt" 2> "$out/$n.err"; rc=$?
    note "bench $n: rc=$rc"
  done < <(find "$build/bench" -type f -name 'pk_bench_*' -perm -u+x 2>/dev/null | sort)
  if [[ -f bench/reduction/torch_bench.py ]]; then
    PYTHONUNBUFFERED=1 python3 bench/reduction/torch_bench.py > "$out/torch_bench.txt" 2>&1; note "bench torch (reduction anchors): rc=$?"
  fi
fi

if has python; then
  PYTHONPATH="$build/python" PYTHONUNBUFFERED=1 python3 tests/python/test_pk_torch.py -v \
    > "$out/python_torch.log" 2>&1; rc=$?
  note "python test_pk_torch: rc=$rc $(grep -E '^(OK|FAILED|Ran )' "$out/python_torch.log" | tr '\n' ' ')"
fi

if has pkbench; then
  for fam in reduce attention; do
    "$build/tools/pk/pk" bench "$fam" --out "$out/pkbench" > "$out/pkbench_$fam.txt" 2> "$out/pkbench_$fam.err"; rc=$?
    note "pk bench $fam: rc=$rc"
  done
fi

echo "==== summary ===="
printf '%s\n' "${summary[@]}"

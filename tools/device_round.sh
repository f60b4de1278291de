#!/usr/bin/env bash
# One round on the GPU machine: build there (16 cores) or use a build folder made on the CI kind and
# carried along (binaries built there run on the GPU machine), then GPU tests, compute-sanitizer
# (memcheck, racecheck, synccheck), the Python module's PyTorch test and benchmarks with their anchors.
# Logs go to $OUT, packed into $OUT/round.tgz (PACK=0: left loose); a short summary is printed last.
#
#   tools/device_round.sh BUILD_DIR [build|tests|sanitize|bench|python|pkbench|decode|decode-sweep|profile|all]...
#
# build: configures BUILD_DIR on the GPU machine (CUDA sm_90a, the sm80 emulator target, tests, benchmarks,
#   the Python module) from the kit tools/device_kit.sh assembles in .devdeps (carry it), and builds
#   $BUILD_TARGETS (default: the pk tool, the Python module, the reduction benchmark and the GPU tests).
# tests: every pk_test_* binary, or those matching $TESTS (a regex on the name); $GTEST_FILTER applies.
# sanitize: memcheck, racecheck and synccheck over each test binary's GPU instances ('*/cuda'), or over
#   $SAN_FILTER (a gtest pattern, e.g. the attention suite's smaller cases:
#   TESTS=pk_test_attention SAN_FILTER='*Variable*/cuda:*NonContig*/cuda:*EveryCandidate*/cuda:*AttentionDecode*/cuda'),
#   less $SAN_EXCLUDE.
# python: the Python module's PyTorch test (tests/python/test_pk_torch.py) with BUILD_DIR/python on the
#   path; pkbench: `pk bench reduce` and `pk bench attention` (markdown and SVG under $OUT/pkbench).
# decode: bench/attention/bench_decode.py ($DECODE_ARGS, e.g. --quick) against SDPA's cuDNN and flash
#   backends; decode-sweep: the same with every split count beside the planner's ($DECODE_SWEEP_ARGS).
# profile: ncu --set full of the first kernel matching $PROFILE_KERNEL (a regex; default attn_fwd) in
#   `pk $PROFILE_ARGS` (default: run attention --head-dim 128 --seqlen-q 4096 --batch 4 --heads 16); the report
#   ($OUT/profile.ncu-rep), its details page as text ($OUT/profile.txt), tools/ncu_summary.py's pipes, stall
#   reasons, instruction mix and hottest SASS lines ($OUT/profile_summary.md), the headline metrics in the summary.
set -u
build=${1:?build dir}; shift
steps=${*:-all}
out=${OUT:-/tmp/pk-round}
mkdir -p "$out"
summary=()
note() { summary+=("$*"); }
has() { [[ " $steps " == *" all "* || " $steps " == *" $1 "* ]]; }

if has build; then
  kit=$PWD/.devdeps
  t0=$SECONDS
  if [[ ! -d $kit ]]; then
    note "build: no .devdeps kit (run tools/device_kit.sh here and carry .devdeps)"
  else
    gt=/tmp/pk-gtest
    [[ -f $gt/lib/cmake/GTest/GTestConfig.cmake ]] || {
      cmake -S "$kit/src/googletest" -B /tmp/pk-gtest-build -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_INSTALL_PREFIX=$gt -DCMAKE_POSITION_INDEPENDENT_CODE=ON > "$out/gtest-build.log" 2>&1 &&
        ninja -C /tmp/pk-gtest-build install >> "$out/gtest-build.log" 2>&1; }
    pyinc=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
    [[ -f $pyinc/Python.h ]] || pyinc=$kit/include/python3.12
    # The system compiler, whose libstdc++ is the one PyTorch loads: the image's CXX/CC/CUDAHOSTCXX name
    # another GCC (/opt/gcc), whose link directories make the Python module take its libstdc++ statically,
    # and a second libstdc++ in the Python process crashes in the first iostream call.
    unset CXX CC CUDAHOSTCXX
    cxx=/usr/bin/g++; [[ -x $cxx ]] || cxx=$(command -v g++)
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPK_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a \
      -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CUDA_HOST_COMPILER="$cxx" \
      -DCMAKE_CUDA_COMPILER="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" "-DCMAKE_CUDA_FLAGS=-lineinfo" \
      -DPK_HOST_ARCHS=sm80 -DPK_BUILD_TESTS=ON -DPK_BUILD_BENCH=ON -DPK_PYTHON=ON \
      -DPython3_EXECUTABLE="$(command -v python3)" -DPython3_INCLUDE_DIR="$pyinc" \
      -Dpybind11_DIR="$(python3 -m pybind11 --cmakedir 2>/dev/null)" -DCMAKE_INCLUDE_PATH="$kit/include" \
      -DCLI11_DIR="$kit/share/cmake/CLI11" -Dnlohmann_json_DIR="$kit/share/cmake/nlohmann_json" \
      -Dboost_context_DIR="$kit/cmake/boost_context-1.83.0" -DGTest_DIR=$gt/lib/cmake/GTest > "$out/configure.log" 2>&1
    rc=$?
    if ((rc == 0)); then
      # shellcheck disable=SC2086
      ninja -C "$build" -j"$(nproc)" ${BUILD_TARGETS:-pk pk_python pk_bench_reduce pk_test_reduction pk_test_graph_capture pk_test_numeric_gpu} > "$out/build.log" 2>&1
      rc=$?
    fi
    note "build: rc=$rc in $((SECONDS - t0)) s ($(tail -1 "$out/build.log" 2>/dev/null || tail -1 "$out/configure.log"))"
  fi
fi

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader > "$out/gpu.txt" 2>&1
note "gpu: $(cat "$out/gpu.txt")"

tests=()
while IFS= read -r t; do
  [[ -z ${TESTS:-} || $(basename "$t") =~ $TESTS ]] && tests+=("$t")
done < <(find "$build/tests" -type f -name 'pk_test_*' -perm -u+x 2>/dev/null | sort)

if has tests; then
  for t in "${tests[@]}"; do
    n=$(basename "$t")
    "$t" --gtest_brief=1 ${GTEST_FILTER:+--gtest_filter="$GTEST_FILTER"} > "$out/$n.log" 2>&1; rc=$?
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
      pattern=${SAN_FILTER:-'*/cuda'}
      [[ $("$t" --gtest_list_tests --gtest_filter="$pattern" | grep -c '^  ') == 0 ]] && pattern='*'
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
  if [[ -f bench/attention/bench_attention.py && -d $build/python ]]; then
    anchor=../shared/anchors/triton_attn.py; [[ -f $anchor ]] || anchor=.anchors/triton_attn.py
    PYTHONPATH="$build/python" PYTHONUNBUFFERED=1 python3 bench/attention/bench_attention.py --triton-anchor "$anchor" \
      ${ATTN_BENCH_ARGS:---dims 64,128 --seqlens 1024,4096,16384 --reps 10} --svg "$out/pkbench/attention-anchors.svg" \
      > "$out/pkbench/attention-anchors.md" 2> "$out/pkbench/attention-anchors.err"
    note "attention anchors (bench_attention.py through the module): rc=$?"
  fi
fi

for step in decode decode-sweep; do
  has $step || continue
  args=${DECODE_ARGS:-}; [[ $step == decode-sweep ]] && args="--sweep-splits ${DECODE_SWEEP_ARGS:-}"
  # shellcheck disable=SC2086
  PYTHONPATH="$build/python" PYTHONUNBUFFERED=1 python3 bench/attention/bench_decode.py $args > "$out/$step.md" 2> "$out/$step.err"
  note "$step (bench_decode.py $args): rc=$?"
done

if has profile; then
  ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  # shellcheck disable=SC2086
  "$ncu" --clock-control none --set full -k "regex:${PROFILE_KERNEL:-attn_fwd}" -c 1 -f -o "$out/profile" \
    "$build/tools/pk/pk" ${PROFILE_ARGS:-run attention --head-dim 128 --seqlen-q 4096 --batch 4 --heads 16} \
    > "$out/profile_run.txt" 2>&1; rc=$?
  "$ncu" --import "$out/profile.ncu-rep" --page details > "$out/profile.txt" 2>&1
  # Pipes, stall reasons, instruction mix and the hottest SASS lines (tools/ncu_summary.py).
  python3 tools/ncu_summary.py "$out/profile.ncu-rep" --ncu "$ncu" > "$out/profile_summary.md" 2>&1
  note "profile: rc=$rc $(grep -m1 -oE '[a-z_]*attn[a-z_0-9]*|[a-z_]+_kernel' "$out/profile.txt")"
  while IFS= read -r line; do note "  $line"; done < <(grep -E '^ +(Duration|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|Issue Slots Busy|Executed Ipc Active|Registers Per Thread|Achieved Occupancy|No Eligible) ' "$out/profile.txt" | sed 's/  */ /g' | head -12)
  while IFS= read -r line; do note "  $line"; done < <(grep -E '^\| (tensor pipe active|XU|[a-z_]+ \| [0-9])' "$out/profile_summary.md" | head -8)
fi

printf '%s\n' "${summary[@]}" > "$out/summary.txt"
# One file comes back more reliably than many (the device tool returns a limited count): pack the logs.
if [[ ${PACK:-1} != 0 ]]; then
  tar -czf /tmp/pk-round.tgz -C "$out" . && find "$out" -mindepth 1 -delete && mv /tmp/pk-round.tgz "$out/round.tgz"
fi
echo "==== summary ===="
printf '%s\n' "${summary[@]}"

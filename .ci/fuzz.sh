#!/usr/bin/env bash
# The libFuzzer targets of tests/fuzz over their corpora, for a bounded time each, in the host-asan build
# (clang-19, AddressSanitizer + UndefinedBehaviorSanitizer, the sm80 host target). Fails on any crash,
# sanitizer report, leak, timeout or wrong answer (the targets abort on those); the input that did it is
# written to build/host-asan/fuzz/<target>-crash-* (or -leak-, -timeout-) and is reproduced with
#   build/host-asan/tests/fuzz/<target> <that file>
#
#   .ci/fuzz.sh [SECONDS]      seconds per target (default $PK_FUZZ_SECONDS, else 60)
#
# The mutation seed is fixed ($PK_FUZZ_SEED, default 1), so a run repeats the same inputs in the same order
# and CI does not turn red by chance on a change that did not cause it; PK_FUZZ_SEED=0 draws a new seed.
#
# New interesting inputs go to build/host-asan/fuzz/<target>/, not to the repository; to keep some, merge
# them into the committed corpus (docs/contributing.md, "Sanitizers and fuzzing").
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-${PK_FUZZ_SECONDS:-60}}
build=build/host-asan
[[ -f $build/build.ninja ]] || cmake --preset host-asan >/dev/null
cmake --build "$build" --target pk_fuzzers

# One input may take seconds on the emulator under the sanitizers (attention at head_dim 256 on the
# A100's grid); more than 30 s is a hang. 512 bytes hold every choice a target makes.
per_input_s=30
max_len=512
# The targets run side by side, each a single-threaded process on its own core (CI's machine has 2):
# the same fuzzing time each, half the wall time of running them in turn.
targets=(fuzz_reduce fuzz_attention)
pids=()
for target in "${targets[@]}"; do
  work=$build/fuzz/$target
  rm -rf "$work"
  mkdir -p "$work"
  echo "== $target: ${secs} s over tests/fuzz/corpus/$target (log: $build/fuzz/$target.log)"
  "$build/tests/fuzz/$target" "$work" "tests/fuzz/corpus/$target" -max_total_time="$secs" -timeout="$per_input_s" \
    -max_len="$max_len" -rss_limit_mb=4096 -seed="${PK_FUZZ_SEED:-1}" -print_final_stats=1 -artifact_prefix="$build/fuzz/$target-" \
    > "$build/fuzz/$target.log" 2>&1 &
  pids+=($!)
done
failed=0
for i in "${!targets[@]}"; do
  rc=0
  wait "${pids[$i]}" || rc=$?
  echo "== ${targets[$i]}: exit $rc"
  cat "$build/fuzz/${targets[$i]}.log"
  (( rc == 0 )) || failed=1
done
exit $failed

#!/bin/bash
# One device round for attention on the GPU machine: GPU tests, compute-sanitizer (memcheck, racecheck,
# synccheck on the smaller cases), the benchmark against PyTorch SDPA and the decode benchmark (paged KV
# caches against SDPA's cuDNN and flash backends; decode-sweep: every split count against the planner's).
# Logs to $OUT. pk is called through its Python module (a CUDA build with the module: $B/python).
#   BUILD_DIR=build/attn-cuda BENCH_ARGS="--reps 10 --candidates" bash bench/attention/device_round.sh tests memcheck racecheck bench
#   BENCH_DECODE_ARGS="--quick" bash bench/attention/device_round.sh decode decode-sweep
set -u
B=${BUILD_DIR:-build/attn-cuda}
T=$B/tests/kernels/attention/pk_test_attention
out=${OUT:-/tmp/o}; mkdir -p $out
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader > $out/gpu.txt 2>&1
steps=" $* "
if [[ $steps == *" tests "* ]]; then
  /usr/bin/time -f "%e s" $T --gtest_filter='*/cuda:AttentionPlan*' > $out/tests.log 2>&1; echo "tests rc=$?"; grep -E "PASSED|FAILED|Failure" $out/tests.log | head -20; tail -1 $out/tests.log
fi
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [[ $steps == *" memcheck "* ]]; then
  $cs --tool memcheck --error-exitcode 17 $T --gtest_filter='*Variable*/cuda:*NonContig*/cuda:*EveryHead*/cuda:*CausalUnequal*/cuda:*Windows*/cuda:*EveryCandidate*/cuda:*Grouped*/cuda:*AttentionDecode*/cuda' --gtest_brief=1 > $out/memcheck.log 2>&1; echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $out/memcheck.log | tail -3
fi
if [[ $steps == *" racecheck "* ]]; then
  $cs --tool racecheck --error-exitcode 17 $T --gtest_filter='*Variable*/cuda:*NonContig*/cuda:*EveryHead*/cuda:*EveryCandidate*/cuda:*AttentionDecode*/cuda' --gtest_brief=1 > $out/racecheck.log 2>&1; echo "racecheck rc=$?"; grep -E "RACECHECK SUMMARY|ERROR SUMMARY|Hazard|PASSED|FAILED" $out/racecheck.log | tail -3
  $cs --tool synccheck --error-exitcode 17 $T --gtest_filter='*Variable*/cuda:*NonContig*/cuda:*EveryCandidate*/cuda:*AttentionDecode*/cuda' --gtest_brief=1 > $out/synccheck.log 2>&1; echo "synccheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $out/synccheck.log | tail -3
fi
if [[ $steps == *" bench "* ]]; then
  # The autotuned Triton anchor: ../shared/anchors/triton_attn.py, copied into the git-ignored .anchors/
  # (carried to the GPU machine with the working tree) when the shared folder is not beside the checkout.
  anchor=../shared/anchors/triton_attn.py; [[ -f $anchor ]] || anchor=.anchors/triton_attn.py
  PYTHONPATH=$B/python PYTHONUNBUFFERED=1 python3 bench/attention/bench_attention.py --triton-anchor $anchor ${BENCH_ARGS:-} > $out/bench.md 2> $out/bench.err; echo "bench rc=$?"; cat $out/bench.md; tail -5 $out/bench.err
fi
if [[ $steps == *" decode "* ]]; then
  PYTHONPATH=$B/python PYTHONUNBUFFERED=1 python3 bench/attention/bench_decode.py ${BENCH_DECODE_ARGS:-} > $out/decode.md 2> $out/decode.err; echo "decode rc=$?"; cat $out/decode.md; tail -5 $out/decode.err
fi
if [[ $steps == *" decode-sweep "* ]]; then
  PYTHONPATH=$B/python PYTHONUNBUFFERED=1 python3 bench/attention/bench_decode.py --sweep-splits ${BENCH_DECODE_SWEEP_ARGS:-} > $out/decode-sweep.md 2> $out/decode-sweep.err; echo "decode-sweep rc=$?"; cat $out/decode-sweep.md; tail -5 $out/decode-sweep.err
fi

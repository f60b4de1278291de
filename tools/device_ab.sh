#!/usr/bin/env bash
# An A/B of builds made on this machine, in one call of the GPU machine: every variant's benchmark run
# interleaved (REPS rounds), then tools/device_round.sh's GPU tests on every variant and its compute-sanitizer
# step on the variants that would land.
#
# Here (no GPU):
#   tools/device_ab.sh pack DIR NAME BUILD_DIR BINARY...
#       copies BUILD_DIR's binaries named BINARY (found anywhere under it, e.g. pk_bench_reduce
#       pk_test_reduction), stripped, into DIR/NAME/ laid out as a build folder (tests/pk_test_*,
#       bench/pk_bench_*, tools/pk/pk: what device_round.sh finds), and appends NAME and the commit (with "+"
#       when the tree has changes) to DIR/MANIFEST; the order of the packs is the order the variants run in.
#   tools/device_ab.sh bundle DIR
#       packs DIR into DIR.tar.xz with xz -9e, whose 64 MiB dictionary spans similar builds of binaries
#       smaller than it: a second build of the same binaries costs little of the 64 MiB the device tool carries
#       (docs/contributing.md). Larger binaries gain little: five sm_90a reduction binaries of 73 MB each (the
#       emulator's targets left out) packed to 51.8 MB, against 54 MB with xz -6 -T2 (2026-12-07).
# There (carry DIR.tar.xz and call it from the repository root):
#   AB_BENCH="pk_bench_reduce --segmented" AB_TESTS=pk_test_reduction GTEST_FILTER='*/cuda' \
#   SAN_FILTER='*Segmented*/cuda' tools/device_ab.sh run DIR.tar.xz
#     AB_BENCH  a benchmark binary of each variant and its arguments, run REPS times (default 2) per variant,
#               the variants interleaved within each round (so drift of the machine falls on all of them alike);
#     AB_TESTS  device_round.sh's `tests` step (its TESTS: a regex on the test binaries' names; GTEST_FILTER
#               applies) on every variant, and its `sanitize` step (SAN_FILTER, SAN_EXCLUDE) on each variant in
#               AB_SAN_VARIANTS (default: the last one packed); left out when empty;
#     AB_GREP   the lines of each benchmark output the summary shows (an extended regex; default: table rows);
#     CAP       the seconds the run may take (default 570): a step that starts with too little of it left is
#               skipped and the summary says so; a step is stopped at CAP.
#   The logs go to $OUT/ab/ (device_round.sh's under $OUT/ab/<step>_<variant>/), packed into $OUT/ab.tar.xz (one
#   file comes back more reliably than many); a short summary is printed last.
set -u
mode=${1:?"pack DIR NAME BUILD_DIR BINARY... | bundle DIR | run BUNDLE"}
shift

case $mode in
  pack)
    dir=${1:?DIR}; name=${2:?NAME}; build=${3:?BUILD_DIR}; shift 3
    (($# > 0)) || { echo "device_ab pack: name the binaries to copy" >&2; exit 2; }
    [[ $name =~ ^[A-Za-z0-9_.-]+$ ]] || { echo "device_ab pack: NAME '$name' must be letters, digits, _ . -" >&2; exit 2; }
    for b in "$@"; do
      f=$(find "$build" -type f -name "$b" -perm -u+x 2>/dev/null | head -1)
      [[ -n $f ]] || { echo "device_ab pack: no executable $b under $build" >&2; exit 1; }
      case $b in pk_test_*) sub=tests ;; pk_bench_*) sub=bench ;; pk) sub=tools/pk ;; *) sub=. ;; esac
      mkdir -p "$dir/$name/$sub" && cp "$f" "$dir/$name/$sub/$b" && strip "$dir/$name/$sub/$b"
    done
    rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
    [[ -n $(git status --porcelain --untracked-files=no 2>/dev/null) ]] && rev="$rev+"
    grep -v "^$name " "$dir/MANIFEST" 2>/dev/null > "$dir/MANIFEST.new"
    echo "$name $rev $*" >> "$dir/MANIFEST.new" && mv "$dir/MANIFEST.new" "$dir/MANIFEST"
    echo "packed $name ($rev): $*"
    ;;
  bundle)
    dir=${1:?DIR}; dir=${dir%/}
    [[ -f $dir/MANIFEST ]] || { echo "device_ab bundle: $dir has no MANIFEST (pack first)" >&2; exit 1; }
    tar -C "$(dirname "$dir")" -cf - "$(basename "$dir")" | xz -9e > "$dir.tar.xz"
    ls -l "$dir.tar.xz"
    ;;
  run)
    bundle=${1:?BUNDLE}
    set -f  # the steps' arguments are split on spaces but never globbed (--gtest_filter=*/cuda)
    out=${OUT:-/tmp/pk-ab}; L=$out/ab; mkdir -p "$L"; t0=$SECONDS; cap=${CAP:-570}
    summary=()
    note() { summary+=("$*"); }
    # Runs a step ($1: its name) with what is left of CAP, when more than $2 s are left; logs its status.
    run_step() {
      local name=$1 need=$2 rc; shift 2
      (( cap - (SECONDS - t0) > need )) || { note "skipped (CAP $cap s): $name"; return 1; }
      timeout $((cap - (SECONDS - t0))) "$@"; rc=$?
      echo "$name rc=$rc at $((SECONDS - t0)) s" >> "$L/steps.txt"
      return $rc
    }
    work=$(mktemp -d)
    tar -C "$work" -xJf "$bundle" || { echo "device_ab run: cannot unpack $bundle" >&2; exit 1; }
    root=$(dirname "$(find "$work" -name MANIFEST | head -1)")
    mapfile -t variants < <(awk '{print $1}' "$root/MANIFEST")
    cp "$root/MANIFEST" "$L/"
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$L/gpu.txt" 2>&1
    note "gpu: $(cat "$L/gpu.txt")"
    note "variants (name commit binaries): $(tr '\n' ';' < "$root/MANIFEST")"
    if [[ -n ${AB_BENCH:-} ]]; then
      read -r bin args <<< "$AB_BENCH"
      for ((rep = 1; rep <= ${REPS:-2}; ++rep)); do
        for v in "${variants[@]}"; do
          if [[ ! -x $root/$v/bench/$bin ]]; then
            ((rep == 1)) && note "no bench/$bin in $v: not benchmarked"
            continue
          fi
          # shellcheck disable=SC2086
          run_step "bench_${v}_$rep" 60 "$root/$v/bench/$bin" $args > "$L/bench_${v}_$rep.txt" 2>&1
        done
      done
    fi
    if [[ -n ${AB_TESTS:-} ]]; then
      round=$(dirname "$0")/device_round.sh
      for v in "${variants[@]}"; do
        [[ -d $root/$v/tests ]] || { note "$v: no test binaries packed"; continue; }
        steps=tests
        [[ " ${AB_SAN_VARIANTS:-${variants[-1]}} " == *" $v "* ]] && steps="tests sanitize"
        TESTS=$AB_TESTS OUT=$L/round_$v PACK=0 run_step "round_$v ($steps)" 45 "$round" "$root/$v" $steps > "$L/round_$v.txt" 2>&1
        [[ -s $L/round_$v.txt ]] && note "$v: $(sed -n '/^==== summary ====$/,$p' "$L/round_$v.txt" | grep -E '^(test|sanitizer) ' | tr '\n' ';')"
      done
    fi
    set +f
    rm -rf "$work"
    tar -C "$out" -cJf "$out/ab.tar.xz" ab
    echo "==== bench rows ===="
    for f in "$L"/bench_*.txt; do
      [[ -f $f ]] || continue
      echo "== $(basename "$f" .txt)"
      grep -E "${AB_GREP:-^\|}" "$f" | grep -v -E '^\|[-| ]+\|$' | cut -c1-200 | head -40
    done
    echo "==== summary ===="
    cat "$L/steps.txt" 2>/dev/null
    printf '%s\n' "${summary[@]}"
    ;;
  *)
    echo "device_ab: unknown mode '$mode' (pack, bundle, run)" >&2
    exit 2
    ;;
esac

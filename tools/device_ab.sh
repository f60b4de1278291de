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
#       pk_python names the Python module: BUILD_DIR/python is copied to DIR/NAME/python (the extension stripped).
#   tools/device_ab.sh bundle DIR
#       packs DIR into DIR.tar.xz with xz -9e, whose 64 MiB dictionary spans similar builds of binaries
#       smaller than it: a second build of the same binaries costs little of the 64 MiB the device tool carries
#       (docs/contributing.md). Larger binaries gain little: five sm_90a reduction binaries of 73 MB each (the
#       emulator's targets left out) packed to 51.8 MB, against 54 MB with xz -6 -T2 (2026-12-07).
#   tools/device_ab.sh variant SRC NAME REV [BASE]
#       records variant NAME for `build`: the files REV (a commit or branch) changed since it left BASE's history
#       (BASE: default HEAD; refused when BASE has changed one of those files too: rebase REV) in SRC/NAME/files.tar
#       (git archive: modes and links kept), the files it deleted in SRC/NAME/deleted, BASE's version of each
#       (SRC/NAME/base.sha256, or SRC/NAME/base.absent where BASE has no such file), and "NAME REV BASE" in
#       SRC/VARIANTS (the order of the calls is the order the variants build and run in). The variants travel as
#       sources (carry SRC, git-ignored, e.g. .gpu/src), a few KB where binaries are tens of MB.
# There, building (carry SRC and .devdeps; the working tree carried is the base, at BASE):
#   tools/device_ab.sh build SRC DIR BUILD_DIR TARGET...
#       builds TARGET... (ninja targets: pk_bench_reduce pk_test_reduction ...) in BUILD_DIR (configured by
#       tools/device_round.sh's build step when it has no build.ninja), packs them into DIR as variant "base"
#       (benchmarks and the pk tool only: the base's tests ran when it landed), then, for each variant of
#       SRC/VARIANTS in turn: checks that the tree is BASE where the variant changes it, makes its deletions, lays
#       its files over the tree, rebuilds (only what they touch), packs it (tests included) and puts the tree back
#       (also when the build fails or the script is stopped). The build logs go to DIR/logs, the variants that did
#       not build or pack to DIR/FAILED (and the exit status is 1). DIR is then ready for `run DIR`, which returns
#       those logs with its own and names the failed variants.
# There (carry DIR.tar.xz and call it from the repository root):
#   AB_BENCH="pk_bench_reduce --segmented" AB_TESTS=pk_test_reduction GTEST_FILTER='*/cuda' \
#   SAN_FILTER='*Segmented*/cuda' tools/device_ab.sh run DIR.tar.xz
#     AB_BENCH  a benchmark binary of each variant and its arguments, run REPS times (default 2) per variant,
#               the variants interleaved within each round (so drift of the machine falls on all of them alike);
#     AB_PY     a Python script of the repository and its arguments (e.g. "bench/attention/bench_decode.py
#               --sweep-splits --graph --flush-l2"), run like AB_BENCH with each variant's packed module first on
#               PYTHONPATH (variants built with the pk_python target); its output in py_<variant>_<round>.txt;
#     AB_TESTS  device_round.sh's `tests` step (its TESTS: a regex on the test binaries' names; GTEST_FILTER
#               applies) on every variant, and its `sanitize` step (SAN_FILTER, SAN_EXCLUDE) on each variant in
#               AB_SAN_VARIANTS (default: the last one packed); left out when empty;
#     AB_GREP   the lines of each benchmark output the summary shows (an extended regex; default: table rows);
#     CAP       the seconds the run may take (default 570): a step that starts with too little of it left is
#               skipped and the summary says so; a step is stopped at CAP.
#   The logs go to $OUT/ab/ (device_round.sh's under $OUT/ab/<step>_<variant>/), packed into $OUT/ab.tar.xz (one
#   file comes back more reliably than many); a short summary is printed last.
set -u
mode=${1:?"pack DIR NAME BUILD_DIR BINARY... | bundle DIR | variant SRC NAME REV [BASE] | build SRC DIR BUILD_DIR TARGET... | run BUNDLE|DIR"}
shift

# Replaces the line of FILE whose first word is NAME (or appends it): the manifests of packs and variants.
put_line() {
  local file=$1 name=$2 line=$3
  awk -v n="$name" '$1 != n' "$file" 2>/dev/null > "$file.new"
  echo "$line" >> "$file.new" && mv "$file.new" "$file"
}

case $mode in
  pack)
    dir=${1:?DIR}; name=${2:?NAME}; build=${3:?BUILD_DIR}; shift 3
    (($# > 0)) || { echo "device_ab pack: name the binaries to copy" >&2; exit 2; }
    [[ $name =~ ^[A-Za-z0-9_.-]+$ ]] || { echo "device_ab pack: NAME '$name' must be letters, digits, _ . -" >&2; exit 2; }
    rm -rf "${dir:?}/$name"  # nothing of an earlier pack of the same name
    for b in "$@"; do
      if [[ $b == pk_python ]]; then
        [[ -d $build/python/pk ]] || { echo "device_ab pack: no Python module under $build/python" >&2; exit 1; }
        mkdir -p "$dir/$name" && cp -r "$build/python" "$dir/$name/python" || exit 1
        find "$dir/$name/python" -name '_pk*.so' -exec strip --strip-unneeded {} + || exit 1
        continue
      fi
      f=$(find "$build" -type f -name "$b" -perm -u+x 2>/dev/null | head -1)
      [[ -n $f ]] || { echo "device_ab pack: no executable $b under $build" >&2; exit 1; }
      case $b in pk_test_*) sub=tests ;; pk_bench_*) sub=bench ;; pk) sub=tools/pk ;; *) sub=. ;; esac
      mkdir -p "$dir/$name/$sub" && cp "$f" "$dir/$name/$sub/$b" && strip "$dir/$name/$sub/$b"
    done
    if [[ -n ${AB_REV:-} ]]; then
      rev=$AB_REV  # `build` names the variant's commit (the GPU machine's tree has no git)
    else
      rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
      [[ -n $(git status --porcelain --untracked-files=no 2>/dev/null) ]] && rev="$rev+"
    fi
    put_line "$dir/MANIFEST" "$name" "$name $rev $*"
    echo "packed $name ($rev): $*"
    ;;
  bundle)
    dir=${1:?DIR}; dir=${dir%/}
    [[ -f $dir/MANIFEST ]] || { echo "device_ab bundle: $dir has no MANIFEST (pack first)" >&2; exit 1; }
    tar -C "$(dirname "$dir")" -cf - "$(basename "$dir")" | xz -9e > "$dir.tar.xz"
    ls -l "$dir.tar.xz"
    ;;
  variant)
    src=${1:?SRC}; name=${2:?NAME}; rev=${3:?REV}; base=${4:-HEAD}
    [[ $name =~ ^[A-Za-z0-9_.-]+$ && $name != base ]] || { echo "device_ab variant: NAME '$name' must be letters, digits, _ . - (and not 'base')" >&2; exit 2; }
    git rev-parse --verify -q "$rev^{commit}" > /dev/null || { echo "device_ab variant: no commit '$rev'" >&2; exit 1; }
    git rev-parse --verify -q "$base^{commit}" > /dev/null || { echo "device_ab variant: no commit '$base'" >&2; exit 1; }
    # The variant's own changes (since it left BASE's history); a file BASE has changed since then too would be
    # laid over BASE's newer version and revert it: rebase first.
    mb=$(git merge-base "$base" "$rev") || { echo "device_ab variant: $rev and $base share no history" >&2; exit 1; }
    both=$(comm -z -12 <(git diff -z --no-renames --name-only "$mb" "$rev" | sort -z) \
                       <(git diff -z --no-renames --name-only "$mb" "$base" | sort -z) | tr '\0' ' ')
    [[ -z $both ]] || { echo "device_ab variant: $base changed these files since $rev left it; rebase $rev on $base: $both" >&2; exit 1; }
    rm -rf "${src:?}/$name" && mkdir -p "$src/$name" || exit 1
    changed=() deleted=()
    while IFS= read -r -d '' st && IFS= read -r -d '' path; do
      [[ $path != *$'\n'* ]] || { echo "device_ab variant: a file name holds a newline: $path" >&2; exit 1; }
      if [[ $st == D ]]; then deleted+=("$path"); else changed+=("$path"); fi
    done < <(git diff -z --no-renames --name-status "$mb" "$rev")
    # REV's files as a tar (modes and links kept), the deletions, and BASE's version of every path touched: its
    # sha256 where BASE has the file, else the path in the list of those it must not have.
    if ((${#changed[@]} > 0)); then
      git archive --format=tar -o "$src/$name/files.tar" "$rev" -- "${changed[@]}" || { echo "device_ab variant: git archive failed" >&2; exit 1; }
    fi
    printf '%s\0' "${deleted[@]}" | sed -z '/^$/d' > "$src/$name/deleted"
    : > "$src/$name/base.sha256"; : > "$src/$name/base.absent"
    for path in "${changed[@]}" "${deleted[@]}"; do
      if git cat-file -e "$base:$path" 2>/dev/null; then
        printf '%s  %s\n' "$(git show "$base:$path" | sha256sum | cut -d' ' -f1)" "$path" >> "$src/$name/base.sha256"
      else
        printf '%s\0' "$path" >> "$src/$name/base.absent"
      fi
    done
    put_line "$src/VARIANTS" "$name" "$name $(git rev-parse --short "$rev") $(git rev-parse --short "$base")"
    echo "variant $name: ${#changed[@]} files changed and ${#deleted[@]} deleted by $rev over $base"
    ;;
  build)
    src=${1:?SRC}; dir=${2:?DIR}; build=${3:?BUILD_DIR}; shift 3
    (($# > 0)) || { echo "device_ab build: name the targets to build" >&2; exit 2; }
    [[ -f $src/VARIANTS ]] || { echo "device_ab build: $src has no VARIANTS (record them with 'variant')" >&2; exit 1; }
    (($(awk '{print $3}' "$src/VARIANTS" | sort -u | wc -l) == 1)) || { echo "device_ab build: the variants of $src were recorded over different bases" >&2; exit 1; }
    base_rev=$(awk 'NR == 1 {print $3}' "$src/VARIANTS")
    t0=$SECONDS; targets=("$@"); failed=()
    # `pack` runs from a copy of this script: a variant may change or delete the tree's.
    self=$(mktemp) && cp "$0" "$self" || exit 1
    mkdir -p "$dir/logs" && rm -f "$dir/MANIFEST" "$dir/FAILED" || exit 1
    # Packs the targets that are executables, and the Python module (other library targets are built, not packed).
    pack_built() {
      local name=$1 rev=$2 with_tests=$3 b bins=()
      for b in "${targets[@]}"; do
        [[ $b == pk_test_* && $with_tests == 0 ]] && continue
        [[ $b == pk_python ]] && { bins+=("$b"); continue; }
        [[ -n $(find "$build" -type f -name "$b" -perm -u+x 2>/dev/null | head -1) ]] && bins+=("$b")
      done
      if ((${#bins[@]} == 0)); then echo "$name: no executable among the targets to pack"; return 0; fi
      AB_REV=$rev bash "$self" pack "$dir" "$name" "$build" "${bins[@]}"
    }
    if [[ -f $build/build.ninja ]]; then
      ninja -C "$build" "${targets[@]}" > "$dir/logs/build_base.log" 2>&1
    else
      BUILD_TARGETS="${targets[*]}" OUT="$dir/logs/round_build" PACK=0 "$(dirname "$0")/device_round.sh" "$build" build > "$dir/logs/build_base.log" 2>&1 &&
        grep -q 'build: rc=0 ' "$dir/logs/build_base.log"
    fi
    rc=$?
    echo "build base ($base_rev): rc=$rc at $((SECONDS - t0)) s"
    if ((rc == 0)); then pack_built base "$base_rev" 0 || failed+=(base); else failed+=(base); fi
    # A variant in place: its deletions made, its files laid over the tree; `restore` puts the tree back from the
    # tar of the originals (extracted with new times, so that ninja rebuilds what depends on them for the next
    # variant: the objects of this one are newer than their old times), and removes the directories it made.
    keep=
    restore() {
      [[ -n $keep ]] || return 0
      local f ok=1
      while IFS= read -r -d '' f; do rm -f -- "$f" || ok=0; done < "$keep/paths"
      [[ -s $keep/dirs ]] && tac "$keep/dirs" | while IFS= read -r f; do rmdir -- "$f" 2>/dev/null; done
      [[ -s $keep/orig.tar ]] && { tar -xmf "$keep/orig.tar" || ok=0; }
      ((ok)) || { echo "device_ab build: the tree could not be put back (originals in $keep)" >&2; exit 1; }
      rm -rf "$keep"; keep=
    }
    trap 'restore' EXIT
    trap 'restore; exit 130' INT TERM
    while read -r name rev _ <&3; do
      [[ -n $name ]] || continue
      v=$src/$name
      if [[ -s $v/base.sha256 ]] && ! sha256sum --quiet -c "$v/base.sha256" > "$dir/logs/base_check_$name.log" 2>&1; then
        echo "build $name ($rev): the tree is not $base_rev where the variant changes it (logs/base_check_$name.log)"
        failed+=("$name"); continue
      fi
      present=0
      while IFS= read -r -d '' f; do [[ -e $f || -L $f ]] && present=1; done < "$v/base.absent"
      ((present == 0)) || { echo "build $name ($rev): the tree has files $base_rev does not"; failed+=("$name"); continue; }
      keep=$(mktemp -d)
      : > "$keep/listing"
      [[ -f $v/files.tar ]] && tar --quoting-style=literal -tf "$v/files.tar" > "$keep/listing"
      { grep -v '/$' "$keep/listing" | tr '\n' '\0'; cat "$v/deleted"; } > "$keep/paths"
      # The originals (the paths the variant touches that the tree has), then the directories it will make.
      tr '\0' '\n' < "$keep/paths" | while IFS= read -r f; do [[ -e $f || -L $f ]] && printf '%s\0' "$f"; done > "$keep/present"
      ok=1
      [[ -s $keep/present ]] && { tar -cf "$keep/orig.tar" --null --verbatim-files-from -T "$keep/present" || ok=0; }
      while IFS= read -r f; do
        d=$(dirname "$f")
        while [[ $d != . && ! -e $d ]]; do echo "$d"; d=$(dirname "$d"); done
      done < "$keep/listing" | sort -u | awk '{print length, $0}' | sort -n | cut -d' ' -f2- > "$keep/dirs"
      if ((ok)); then
        while IFS= read -r -d '' f; do rm -f -- "$f" || ok=0; done < "$v/deleted"
        [[ -f $v/files.tar ]] && { tar -xmf "$v/files.tar" || ok=0; }
      fi
      if ((ok)); then
        ninja -C "$build" "${targets[@]}" > "$dir/logs/build_$name.log" 2>&1
        rc=$?
        echo "build $name ($rev): rc=$rc at $((SECONDS - t0)) s"
        if ((rc == 0)); then pack_built "$name" "$rev" 1 || failed+=("$name"); else failed+=("$name"); fi
      else
        echo "build $name ($rev): its files could not be laid over the tree"
        failed+=("$name")
      fi
      restore
    done 3< "$src/VARIANTS"
    trap - EXIT INT TERM
    rm -f "$self"
    if ((${#failed[@]} > 0)); then
      echo "${failed[*]}" > "$dir/FAILED"
      echo "device_ab build: failed: ${failed[*]}" >&2
      exit 1
    fi
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
    if [[ -d $bundle ]]; then
      root=${bundle%/}
    else
      tar -C "$work" -xJf "$bundle" || { echo "device_ab run: cannot unpack $bundle" >&2; exit 1; }
      root=$(dirname "$(find "$work" -name MANIFEST | head -1)")
    fi
    [[ -f $root/MANIFEST ]] || { echo "device_ab run: no MANIFEST in $bundle" >&2; exit 1; }
    mapfile -t variants < <(awk '{print $1}' "$root/MANIFEST")
    cp "$root/MANIFEST" "$L/"
    rm -rf "$L/build_logs"
    [[ -d $root/logs ]] && cp -r "$root/logs" "$L/build_logs"  # `build`'s
    [[ -f $root/FAILED ]] && note "not built or not packed: $(cat "$root/FAILED")"
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
    if [[ -n ${AB_PY:-} ]]; then
      read -r script args <<< "$AB_PY"
      for ((rep = 1; rep <= ${REPS:-2}; ++rep)); do
        for v in "${variants[@]}"; do
          if [[ ! -d $root/$v/python/pk ]]; then
            ((rep == 1)) && note "no Python module in $v: $script not run"
            continue
          fi
          # shellcheck disable=SC2086
          PYTHONPATH="$root/$v/python" PYTHONUNBUFFERED=1 run_step "py_${v}_$rep" 60 python3 "$script" $args > "$L/py_${v}_$rep.txt" 2>&1
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
    for f in "$L"/bench_*.txt "$L"/py_*.txt; do
      [[ -f $f ]] || continue
      echo "== $(basename "$f" .txt)"
      grep -E "${AB_GREP:-^\|}" "$f" | grep -v -E '^\|[-| ]+\|$' | cut -c1-200 | head -40
    done
    echo "==== summary ===="
    cat "$L/steps.txt" 2>/dev/null
    printf '%s\n' "${summary[@]}"
    ;;
  *)
    echo "device_ab: unknown mode '$mode' (pack, bundle, variant, build, run)" >&2
    exit 2
    ;;
esac

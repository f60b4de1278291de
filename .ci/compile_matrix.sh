#!/usr/bin/env bash
# The compile matrix: every device translation unit (from <build>/pk_matrix/*.manifest, written by
# CMake) compiled device-only for every CUDA arch (nvcc -cubin, ptxas -v report) and every HIP arch
# (clang-19; clang-22 for the archs clang-19 does not know, see hip_flags), kernel-resource-usage remarks. Any failure fails the script.
#   .ci/compile_matrix.sh BUILD_DIR OUT_DIR
# Outputs per TU and arch: OUT_DIR/<tu>.<sm_XX>.ptxas.log, OUT_DIR/<tu>.<gfxN>.remarks, and
# OUT_DIR/timings.tsv (tu, arch, seconds, rc).
set -uo pipefail
build=${1:?build dir}; out=${2:?out dir}
# sm_100a (B200) and sm_120 (RTX 5090, RTX PRO 6000 Blackwell) are columns since 2026-12-02: about 130 s each on
# 2 cores (34 TUs). Their spills beyond the kernels declared on every arch, the f32/f16/bf16 mean/variance
# instances of the device-wide reduce (IEEE division's slow-path calls), are declared for those two archs alone
# (reduce_policy.hpp, declared_spilling_kernels).
cuda_archs=${PK_MATRIX_CUDA_ARCHS:-"80 86 89 90a 100a 120"}
# gfx1201 (RX 9070 XT: RDNA4, whose WMMA operands differ from RDNA3's) is compiled by clang-19; gfx950 (MI355X)
# is newer than clang-19 and is compiled by clang-22 (hip_flags below).
hip_archs=${PK_MATRIX_HIP_ARCHS:-"gfx90a gfx942 gfx950 gfx1100 gfx1201"}
jobs=${PK_MATRIX_JOBS:-$(nproc)}
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
clang=${HIP_CLANG:-clang++-19}
clang_new=${HIP_CLANG_NEW:-clang++-22}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
devlibs="$out/hip-devlibs"
# shellcheck disable=SC2086
sh "$here/cmake/hip_devlibs.sh" "$devlibs" $hip_archs >/dev/null || { echo "hip_devlibs.sh failed"; exit 1; }

# The compiler and extra flags of a HIP arch. clang-22 with Debian's ROCm 5.2 device libraries and headers:
# code object v5 (clang-22's default v6 needs ROCm 6.3 device libraries), and __AMDGCN_WAVEFRONT_SIZE, which
# clang-22 no longer predefines and ROCm 5.2's amd_warp_functions.h reads (pk itself takes the wave size
# from archdb).
if [[ " $hip_archs " == *" gfx950 "* ]] && ! command -v "$clang_new" >/dev/null; then
  echo "compile matrix: gfx950 needs $clang_new (tools/setup/check.sh --install hipnew), or leave it out of PK_MATRIX_HIP_ARCHS"
  exit 1
fi
hip_flags() {
  case $1 in
    gfx950) echo "$clang_new -mcode-object-version=5 -D__AMDGCN_WAVEFRONT_SIZE=64" ;;
    *) echo "$clang" ;;
  esac
}

# PK_MATRIX_REUSE_REPORTS=1: a TU x arch whose report is already in OUT_DIR (a library build configured
# with -DPK_RESOURCE_REPORTS=OUT_DIR wrote it, through cmake/pk_report.sh) is not compiled again.
reuse=${PK_MATRIX_REUSE_REPORTS:-0}; reused=0
jobsfile="$out/jobs.txt"; : > "$jobsfile"; : > "$jobsfile.plain"
# PLAIN translation units (no matrix instructions, tensor copies or FP8 conversions: the reductions, marked
# `plain=` in the manifests, see pk_target_sources) give the same PTX for every arch that one NVVM generation of
# nvcc compiles: nvcc 13.0 compiles compute_80 .. compute_90a with NVVM 7 and compute_100a and compute_120 with
# NVVM 20 (the "Based on NVVM" line of the PTX), and the 14 reduction TUs' PTX was identical, bar the .target
# line, for 80/86/89/90a and for 100a/120 (checked 2026-12-03). Such a TU is compiled to PTX once per generation,
# for the generation's base (compute_80; compute_100, since ptxas does not take compute_100a PTX to sm_120), and
# ptxas makes each arch's code and report from it (the same registers, spills and stack as a compile for the
# arch alone: checked on reduce_f32/bf16/i8 and repro_f64 for sm_86, sm_90a, sm_120). ptxas, not the front end,
# is most of these TUs' compile: the reduce and repro TUs of the five CUDA columns took 467 s of job time
# compiled per arch and 393 s this way with a sixth (sm_80) column. The guard below checks the rule on one TU
# every run.
ptx_base() {
  case $1 in
    80 | 86 | 89 | 90a) echo 80 ;;
    100a | 120) echo 100 ;;
    *) echo "$1" ;;
  esac
}
plain_guard_tu=""
for m in "$build"/pk_matrix/*.manifest; do
  incs=$(sed -n 's/^includes=//p' "$m" | tr ':' '\n' | grep -v '^/usr/include$' | sort -u | sed 's/^/-I/' | tr '\n' ' ')
  while read -r src; do
    [[ -z $src || $src == includes=* ]] && continue
    plain=0
    if [[ $src == plain=* ]]; then plain=1; src=${src#plain=}; fi
    tu=$(basename "${src%.*}")
    declare -A group=()
    for a in $cuda_archs; do
      if [[ $reuse == 1 && -s $out/$tu.sm_$a.ptxas.log ]]; then ((reused += 1)); continue; fi
      if [[ $plain == 1 ]]; then
        group[$(ptx_base "$a")]+="${group[$(ptx_base "$a")]:+,}$a"
      else
        echo "cuda|$a|$tu|$src|$incs" >> "$jobsfile"
      fi
    done
    for b in "${!group[@]}"; do echo "cudaplain|$b:${group[$b]}|$tu|$src|$incs" >> "$jobsfile.plain"; done
    unset group
    if [[ $plain == 1 && ( -z $plain_guard_tu || $tu == repro_f32 ) ]]; then plain_guard_tu="$tu|$src|$incs"; fi
    for a in $hip_archs; do
      if [[ $reuse == 1 && -s $out/$tu.$a.remarks ]]; then ((reused += 1)); continue; fi
      echo "hip|$a|$tu|$src|$incs" >> "$jobsfile"
    done
  done < "$m"
done

# The guard of the PLAIN rule: one PLAIN TU (repro_f32 where the build has it: about 2 s a compile) compiled
# to PTX for every CUDA arch; each PTX must equal its generation's base PTX but for the .target and .version
# lines and the comments. A difference fails the matrix: the TU, or the toolchain, broke the rule.
[[ -n $plain_guard_tu ]] && echo "plainguard|$cuda_archs|$plain_guard_tu" >> "$jobsfile.plain"
# The PLAIN groups are the longest jobs (a PTX and up to four ptxas runs): they go first.
cat "$jobsfile" >> "$jobsfile.plain" && mv "$jobsfile.plain" "$jobsfile"

ptx_body() { grep -v -E '^[[:space:]]*\.(target|version)[[:space:]]|^[[:space:]]*//' "$1"; }
compile_one() {
  IFS='|' read -r kind arch tu src incs <<< "$1"
  local t0=$SECONDS rc
  if [[ $kind == plainguard ]]; then
    local a b only diffs=""
    for a in $(for a in $arch; do ptx_base "$a"; echo "$a"; done | sort -u); do
      only=0; [[ $a == 90a ]] && only=1
      # shellcheck disable=SC2086
      "$nvcc" -x cu -std=c++20 --expt-relaxed-constexpr -O3 -ptx -gencode "arch=compute_${a},code=compute_${a}" \
        -DPK_CUDA_SM90A=$only $incs "$src" -o "$out/guard.$tu.$a.ptx" > "$out/guard.$tu.$a.log" 2>&1 || { diffs+=" $a(compile)"; continue; }
    done
    for a in $arch; do
      b=$(ptx_base "$a")
      [[ $a == "$b" || ! -s $out/guard.$tu.$a.ptx ]] && continue
      cmp -s <(ptx_body "$out/guard.$tu.$b.ptx") <(ptx_body "$out/guard.$tu.$a.ptx") || diffs+=" $a(differs from compute_$b)"
    done
    rm -f "$out"/guard."$tu".*.ptx
    log="$out/guard.$tu.log"; echo "PLAIN PTX guard, $tu:${diffs:- every arch's PTX is its generation's}" > "$log"
    rc=0; [[ -n $diffs ]] && { rc=1; echo "error: $tu's PTX depends on the arch within a generation:$diffs (ptx_base in .ci/compile_matrix.sh)" >> "$log"; }
  elif [[ $kind == cudaplain ]]; then
    # arch is "<base>:<arch>,<arch>...": the base arch's PTX, then ptxas for each arch (its report under the
    # name of a compile for it alone).
    local base=${arch%%:*} a ptx="$out/$tu.compute_${arch%%:*}.ptx"
    # shellcheck disable=SC2086
    "$nvcc" -x cu -std=c++20 --expt-relaxed-constexpr -O3 -ptx -gencode "arch=compute_${base},code=compute_${base}" \
      -DPK_CUDA_SM90A=0 $incs "$src" -o "$ptx" > "$out/$tu.compute_$base.log" 2>&1
    rc=$?; log="$out/$tu.compute_$base.log"
    local archs; IFS=, read -ra archs <<< "${arch#*:}"
    for a in "${archs[@]}"; do
      [[ $rc != 0 ]] && break
      "$(dirname "$nvcc")/ptxas" -arch="sm_$a" -O3 -v -warn-spills "$ptx" -o "$out/$tu.sm_$a.cubin" > "$out/$tu.sm_$a.ptxas.log" 2>&1
      rc=$?; log="$out/$tu.sm_$a.ptxas.log"
    done
    rm -f "$ptx"
  elif [[ $kind == cuda ]]; then
    # Each arch as a build for it alone: only a 90a build has the warp-specialized instances.
    local only=0; [[ $arch == 90a ]] && only=1
    # shellcheck disable=SC2086
    "$nvcc" -x cu -std=c++20 --expt-relaxed-constexpr -O3 -cubin -gencode "arch=compute_${arch},code=sm_${arch}" \
      -DPK_CUDA_SM90A=$only -Xptxas -v -Xptxas -warn-spills $incs "$src" -o "$out/$tu.sm_$arch.cubin" > "$out/$tu.sm_$arch.ptxas.log" 2>&1
    rc=$?; log="$out/$tu.sm_$arch.ptxas.log"
  else
    # shellcheck disable=SC2086
    $(hip_flags "$arch") -x hip -std=c++20 -O3 --rocm-path=/usr --rocm-device-lib-path="$devlibs" --cuda-device-only \
      --no-gpu-bundle-output --offload-arch="$arch" -Rpass-analysis=kernel-resource-usage $incs -c "$src" \
      -o "$out/$tu.$arch.o" > "$out/$tu.$arch.remarks" 2>&1
    rc=$?; log="$out/$tu.$arch.remarks"
  fi
  printf '%s\t%s\t%s\t%s\n' "$tu" "$arch" $((SECONDS - t0)) "$rc" >> "$out/timings.tsv"
  if [[ $rc != 0 ]]; then echo "FAILED: $kind $arch $src"; grep -E 'error' "$log" | head -20; return 1; fi
  echo "ok: $kind $arch $tu ($((SECONDS - t0)) s)"
}
export -f compile_one hip_flags ptx_base ptx_body
export out nvcc clang clang_new devlibs
: > "$out/timings.tsv"
start=$SECONDS
if ! xargs -a "$jobsfile" -d '\n' -P "$jobs" -I{} bash -c 'compile_one "$@"' _ {}; then
  echo "compile matrix: FAILED ($((SECONDS - start)) s)"; exit 1
fi
echo "compile matrix: $(wc -l < "$jobsfile") compiles passed in $((SECONDS - start)) s ($reused reports reused from the library builds)"

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
jobsfile="$out/jobs.txt"; : > "$jobsfile"
for m in "$build"/pk_matrix/*.manifest; do
  incs=$(sed -n 's/^includes=//p' "$m" | tr ':' '\n' | grep -v '^/usr/include$' | sort -u | sed 's/^/-I/' | tr '\n' ' ')
  while read -r src; do
    [[ -z $src || $src == includes=* ]] && continue
    tu=$(basename "${src%.*}")
    for a in $cuda_archs; do
      if [[ $reuse == 1 && -s $out/$tu.sm_$a.ptxas.log ]]; then ((reused += 1)); continue; fi
      echo "cuda|$a|$tu|$src|$incs" >> "$jobsfile"
    done
    for a in $hip_archs; do
      if [[ $reuse == 1 && -s $out/$tu.$a.remarks ]]; then ((reused += 1)); continue; fi
      echo "hip|$a|$tu|$src|$incs" >> "$jobsfile"
    done
  done < "$m"
done

compile_one() {
  IFS='|' read -r kind arch tu src incs <<< "$1"
  local t0=$SECONDS rc
  if [[ $kind == cuda ]]; then
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
export -f compile_one hip_flags
export out nvcc clang clang_new devlibs
: > "$out/timings.tsv"
start=$SECONDS
if ! xargs -a "$jobsfile" -d '\n' -P "$jobs" -I{} bash -c 'compile_one "$@"' _ {}; then
  echo "compile matrix: FAILED ($((SECONDS - start)) s)"; exit 1
fi
echo "compile matrix: $(wc -l < "$jobsfile") compiles passed in $((SECONDS - start)) s ($reused reports reused from the library builds)"

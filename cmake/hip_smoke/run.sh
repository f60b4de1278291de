#!/bin/bash
# Smoke check of the HIP toolchain recipe (cmake/hip_devlibs.sh) and of pk/portable/numeric.hpp
# under nvcc and clang HIP. Usage: cmake/hip_smoke/run.sh [WORKDIR]   (run from anywhere)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${1:-/tmp/pk_hip_smoke}
mkdir -p "$work"
devlibs=$work/devlibs
sh "$root/cmake/hip_devlibs.sh" "$devlibs"

timed() {  # timed LABEL CMD... : runs CMD, prints label, rc and wall seconds
  local label=$1; shift
  local t0 t1 rc=0
  t0=$(date +%s%N)
  "$@" || rc=$?
  t1=$(date +%s%N)
  printf '%-40s rc=%d %6.2f s\n' "$label" "$rc" "$(( (t1 - t0) / 1000000 ))e-3"
  return $rc
}

hipdev=(clang++-19 -x hip -std=c++17 -O3 --rocm-path=/usr --rocm-device-lib-path="$devlibs"
        --cuda-device-only --no-gpu-bundle-output -Rpass-analysis=kernel-resource-usage)
for a in gfx90a gfx942 gfx1100; do
  timed "hip device k.hip $a" "${hipdev[@]}" --offload-arch=$a -c "$here/k.hip" -o "$work/k_$a.o" \
      2> "$work/k_$a.remarks"
  llvm-objdump-19 -d --mcpu=$a "$work/k_$a.o" | grep -oE 'v_(mfma|wmma)_[a-z0-9_]*' | sort -u
  timed "hip device numeric_k.cu $a" "${hipdev[@]}" -I"$root/portable/include" --offload-arch=$a \
      -c "$here/numeric_k.cu" -o "$work/nk_$a.o" 2> "$work/nk_$a.remarks"
done

timed "hip host+device host.hip" clang++-19 -x hip -std=c++17 -O2 -I"$root/portable/include" \
    --rocm-path=/usr --rocm-device-lib-path="$devlibs" --offload-arch=gfx942 --offload-arch=gfx90a \
    -c "$here/host.hip" -o "$work/host.o"
timed "link -lamdhip64" clang++-19 "$work/host.o" -o "$work/host" -L/usr/lib/x86_64-linux-gnu -lamdhip64
"$work/host"

nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
for std in c++17 c++20; do
  for g in arch=compute_80,code=sm_80 arch=compute_90a,code=sm_90a; do
    timed "nvcc $std $g" "$nvcc" -std=$std --expt-relaxed-constexpr -O3 -I"$root/portable/include" \
        -gencode "$g" -x cu -c "$here/numeric_k.cu" -o "$work/nk_cuda.o"
  done
done

#!/bin/sh
# hip_devlibs.sh OUTDIR [gfxNNN ...]
#
# Builds an AMDGPU device-library overlay for clang-19 on top of Debian's ROCm 5.2 bitcode
# (package rocm-device-libs, /usr/lib/x86_64-linux-gnu/amdgcn/bitcode). Debian's set stops at
# gfx940: it has no oclc_isa_version_{941,942,950,1100,...}.bc, and clang's HIP driver refuses to
# compile for an --offload-arch whose oclc_isa_version_<N>.bc is missing. Those files hold a single
# constant, so OUTDIR gets a symlink to every Debian .bc plus generated ones for the missing targets.
# Idempotent: re-running refreshes the symlinks and regenerates nothing that already exists.
# Extra gfx names on the command line are added to the default list below.
#
# Generated file = Debian's oclc_isa_version_940.bc disassembled (llvm-dis-19), with the constant
# replaced, reassembled with clang-19 -x ir. Same linkage as Debian's:
#   @__oclc_ISA_version = linkonce_odr protected local_unnamed_addr addrspace(4) constant i32 <V>, align 4
#   V = major*1000 + minor*100 + stepping   (gfx90a -> 9010, gfx942 -> 9402, gfx1100 -> 11000)
#
# Working commands (clang 19.1.7 + Debian 12 ROCm 5.2 bitcode/headers; the CI compile matrix and the HIP
# library build use them; wall times on the 2-core dev machine):
#   sh cmake/hip_devlibs.sh /tmp/pk_devlibs; DEVLIBS=/tmp/pk_devlibs          # 0.4 s, 62 files
#   Device-only ELF code object, one invocation per target (0.35-0.5 s each for a small kernel):
#     clang++-19 -x hip -std=c++17 -O3 --rocm-path=/usr --rocm-device-lib-path=$DEVLIBS \
#       --cuda-device-only --no-gpu-bundle-output --offload-arch=gfx942 -c k.hip -o k_gfx942.o \
#       -Rpass-analysis=kernel-resource-usage 2> k_gfx942.remarks
#     Same for gfx90a and gfx1100. No extra flags needed: no -D__HIP_PLATFORM_AMD__, no -I, no
#     -nogpuinc (clang's HIP wrapper headers + /usr/include/hip/hip_runtime.h are found through
#     --rocm-path=/usr). Without the overlay clang-19 finds no device library at all under
#     --rocm-path=/usr (it does not search the multiarch path), and with
#     --rocm-device-lib-path=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode gfx90a works but gfx942/gfx1100
#     fail with "cannot find ROCm device library for gfx942".
#   Host + device (fat object with .hip_fatbin), then link against Debian's libamdhip64
#   (/usr/lib/x86_64-linux-gnu/libamdhip64.so -> .so.5.2.21153):
#     clang++-19 -x hip -std=c++17 -O2 --rocm-path=/usr --rocm-device-lib-path=$DEVLIBS \
#       --offload-arch=gfx942 --offload-arch=gfx90a -c host.hip -o host.o             # 1.35 s
#     clang++-19 host.o -o host -L/usr/lib/x86_64-linux-gnu -lamdhip64                   # 0.06 s
#     (equivalently: clang++-19 --hip-link --rocm-path=/usr host.o -o host, which adds -lamdhip64;
#      or compile+link in one step with -lamdhip64). The binary runs here and reports
#      hipErrorNoDevice from hipGetDeviceCount (no GPU).
#   Header-free alternative: add -nogpuinc -nogpulib and use __builtin_amdgcn_* directly.
set -eu

if [ $# -lt 1 ]; then
  echo "usage: $0 OUTDIR [gfxNNN ...]" >&2
  exit 2
fi
out=$1
shift

src=${PK_ROCM_BITCODE_DIR:-/usr/lib/x86_64-linux-gnu/amdgcn/bitcode}
clang=${PK_CLANG:-clang-19}
llvm_dis=${PK_LLVM_DIS:-llvm-dis-19}
template=$src/oclc_isa_version_940.bc

[ -f "$template" ] || { echo "hip_devlibs.sh: $template not found (apt-get install rocm-device-libs)" >&2; exit 1; }
command -v "$clang" >/dev/null 2>&1 || { echo "hip_devlibs.sh: $clang not found" >&2; exit 1; }
command -v "$llvm_dis" >/dev/null 2>&1 || { echo "hip_devlibs.sh: $llvm_dis not found" >&2; exit 1; }

mkdir -p "$out"

# 1. Symlink every Debian bitcode file (ln -sf keeps this idempotent; generated files are real files
#    and never clash, because only names Debian lacks are generated).
for f in "$src"/*.bc; do
  ln -sf "$f" "$out/$(basename "$f")"
done

# 2. Generate what is missing. gfx941/942/950: CDNA3/CDNA3+; 1100-1103: RDNA3; 1150/1151: RDNA3.5;
#    1200/1201: RDNA4. All are known to clang 19.1.
targets="941 942 950 1100 1101 1102 1103 1150 1151 1200 1201"
for t in "$@"; do
  targets="$targets ${t#gfx}"
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/pk_devlibs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
"$llvm_dis" -o "$tmp/template.ll" "$template"

for n in $targets; do
  dst=$out/oclc_isa_version_$n.bc
  [ -e "$dst" ] && continue
  # gfx<major><minor><stepping>: the last two characters are minor and stepping (stepping may be
  # a hex digit: gfx90a, gfx90c).
  major=${n%??}
  rest=${n#"$major"}
  minor=${rest%?}
  stepping=$(printf '%d' "0x${rest#?}")
  value=$((major * 1000 + minor * 100 + stepping))
  sed -e "s/constant i32 9400,/constant i32 $value,/" \
      -e "s/^; ModuleID = .*/; ModuleID = 'oclc_isa_version_$n (pk hip_devlibs.sh)'/" \
      "$tmp/template.ll" > "$tmp/isa_$n.ll"
  grep -q "constant i32 $value," "$tmp/isa_$n.ll" || { echo "hip_devlibs.sh: template edit failed for $n" >&2; exit 1; }
  "$clang" --target=amdgcn-amd-amdhsa -nogpulib -x ir -c -emit-llvm -o "$tmp/isa_$n.bc" "$tmp/isa_$n.ll"
  mv "$tmp/isa_$n.bc" "$dst"
done

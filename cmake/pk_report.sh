#!/bin/sh
# pk_report.sh DIR SUFFIX COMMAND...
# Runs COMMAND, a compile of one device translation unit (`-c SOURCE` among its arguments), and keeps its
# standard error, which holds the compiler's resource report (nvcc -Xptxas -v; clang
# -Rpass-analysis=kernel-resource-usage), as DIR/<SOURCE's stem>.SUFFIX: the file names of the compile
# matrix (.ci/compile_matrix.sh), so `pk resource-check DIR` reads a build's reports as it reads the
# matrix's. Warnings and errors still reach the build's output; the exit status is COMMAND's.
# CMake puts it in front of the CUDA compiler and the HIP compile commands when PK_RESOURCE_REPORTS is set.
dir=$1
suffix=$2
shift 2
src=
prev=
for a in "$@"; do
  [ "$prev" = -c ] && src=$a
  prev=$a
done
[ -n "$src" ] || exec "$@"
stem=$(basename "$src")
stem=${stem%.*}
mkdir -p "$dir" || exit 1
log="$dir/$stem.$suffix"
"$@" 2> "$log.part"
rc=$?
if [ "$rc" = 0 ]; then
  # The build's output keeps the warnings, not the report: ptxas info lines, and clang's remarks with
  # their source excerpts and the include chains that lead to them.
  awk '
    /^In file included from / { held = held $0 "\n"; next }
    /ptxas info|bytes stack frame|remark:/ { held = ""; skip = 1; next }
    skip && /^ *[0-9]* *\|/ { next }
    { skip = 0; printf "%s", held; held = ""; print }
  ' "$log.part" >&2
  mv "$log.part" "$log"
else
  cat "$log.part" >&2
  rm -f "$log.part"
fi
exit "$rc"

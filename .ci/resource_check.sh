#!/usr/bin/env bash
# The portability check of the compile matrix: every candidate the planner could choose for a device
# must fit that device with the compiler's real resources, and nothing spills unless its policy says so.
#
#   .ci/resource_check.sh REPORT_DIR [extra pk resource-check options, e.g. --verbose or --json]
#
# REPORT_DIR holds what .ci/compile_matrix.sh writes (other files are ignored):
#   <tu>.sm_<XY>.ptxas.log   nvcc -Xptxas -v output (stderr) of one TU for one CUDA arch (80, 86, 89, 90a, 100a, 120)
#   <tu>.<gfx>.remarks       clang-19 -Rpass-analysis=kernel-resource-usage output of one TU for one gfx target
# The candidates (per family: instance, mangled-name fragment, threads, planned shared memory) come
# from the pk tool of the host build (`pk candidates --arch A --json` shows them); the device limits
# from archdb/devices/*.json embedded in it. The check itself is `pk resource-check` (tools/pk).
# The pk binary: $PK_BIN, else build/host/tools/pk/pk (the host preset's build, made earlier by .ci/run).
# Exit status: 0 all checks passed, 1 a check failed, 2 bad input (no reports, no pk binary).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:?usage: .ci/resource_check.sh REPORT_DIR [options]}
shift
pk=${PK_BIN:-$here/build/host/tools/pk/pk}
if [[ ! -x $pk ]]; then
  echo "resource_check.sh: no pk binary at $pk (build the host preset first, or set PK_BIN)" >&2
  exit 2
fi
exec "$pk" resource-check "$dir" "$@"

#!/usr/bin/env bash
# tools/setup/quickstart.sh — the README's first command, on a fresh Debian 12 / Ubuntu 24.04 machine:
#   1. set-up: installs the missing packages of the core group (required) and the python group
#      (optional) through tools/setup/check.sh, and reports the optional parts (CUDA, HIP, Kokkos,
#      Fortran, Python);
#   2. configures the host preset and builds only what the main job needs: the library and the pk tool
#      (and the Python module when its packages are there); the tests are the README's second command;
#   3. runs the main job: `pk run reduce`, a device-wide reduction planned for the device at hand (the
#      GPU of a GPU build, else the emulator) and verified against a double-precision reference.
# Arguments after the script's name go to `pk run reduce` (e.g. --device MI300X --n 1e7).
set -euo pipefail
cd "$(dirname "$0")/../.."
t0=$SECONDS
say() { printf '[quickstart %4d s] %s\n' $((SECONDS - t0)) "$*"; }

say "set-up (tools/setup/check.sh --install core python)"
if ! tools/setup/check.sh --install core python; then
  say "stopped: a required package is missing (the lines above say which and the command that installs it)"
  exit 1
fi
say "configure (cmake --preset host)"
cmake --preset host >/dev/null
targets=(pk)
# (The target list is read whole first: `ninja ... | grep -q` under pipefail fails when grep stops early.)
all_targets=$(ninja -C build/host -t targets all 2>/dev/null || true)
grep -q '^pk_python:' <<< "$all_targets" && targets+=(pk_python)
say "build: ${targets[*]} (the tests come with the second command, cmake --workflow --preset host)"
cmake --build --preset host --target "${targets[@]}"
if [[ " ${targets[*]} " == *" pk_python "* ]]; then
  py=$(sed -n 's/^Python3_EXECUTABLE:[A-Z]*=//p' build/host/CMakeCache.txt)
  say "Python: PYTHONPATH=$PWD/build/host/python ${py:-python3} -c 'import pk; print(pk.devices())'"
fi
say "main job: build/host/tools/pk/pk run reduce $*"
build/host/tools/pk/pk run reduce "$@"

#!/usr/bin/env bash
# tools/setup/check.sh [--install]
# Checks that every program, header and library pk's build and CI invoke is present, from the one
# package list (tools/setup/debian-packages.txt), and names the package that provides a missing one.
# With --install, installs the packages that are not installed first (apt-get; root). The CUDA toolkit
# is not a Debian package: nvcc is looked for at $NVCC or /usr/local/cuda/bin/nvcc.
# Exit status: 0 when everything is present, 1 otherwise.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
list="$here/debian-packages.txt"

mapfile -t rows < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$list")
if [[ ${1:-} == --install ]]; then
  missing=()
  for r in "${rows[@]}"; do
    p=${r%% *}
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "tools/setup/check.sh: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

bad=0
for r in "${rows[@]}"; do
  read -r pkg items <<< "$r"
  for it in $items; do
    case $it in
      py:*) python3 -c "import ${it#py:}" 2>/dev/null && continue ;;
      /*) [[ -e $it ]] && continue ;;
      *) command -v "$it" >/dev/null 2>&1 && continue ;;
    esac
    echo "missing: $it (Debian package $pkg: apt-get install $pkg)"
    bad=1
  done
done
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
if [[ ! -x $nvcc ]]; then
  echo "missing: $nvcc (the CUDA toolkit, nvcc >= 12; set NVCC to another location)"
  bad=1
fi
((bad == 0)) && echo "tools/setup/check.sh: every tool pk's build and CI use is present"
exit $bad

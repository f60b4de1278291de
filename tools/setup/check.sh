#!/usr/bin/env bash
# tools/setup/check.sh [--install] [GROUP...]
# The one owner of pk's package list (tools/setup/debian-packages.txt): checks that every program, header
# and library of the named groups (default: every group) is present and names the package of a missing
# one. Groups: core (required: the host build and the tests), python, interfaces, hip, hipnew, sanitize (optional).
#
# --install: installs the missing packages of the named groups first (apt-get; Debian 12 or Ubuntu 24.04).
#   As root it runs apt-get; otherwise through `sudo -n` when that works without a password; otherwise
#   it prints the exact command to run and installs nothing. Nothing is installed (and apt-get is not
#   even updated) when everything is there.
# Also reports the optional parts that are not Debian packages: the CUDA toolkit (nvcc at $NVCC or
# /usr/local/cuda/bin/nvcc) and, when checked, what each optional group enables.
#
# Exit status: 0 when every core item is present (optional groups only report), 1 otherwise; with
# PK_SETUP_STRICT=1 (CI) every named group is required, the CUDA toolkit too.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
list="$here/debian-packages.txt"

install=0
groups=()
for a in "$@"; do
  case $a in
    --install) install=1 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "tools/setup/check.sh: unknown option $a" >&2; exit 2 ;;
    *) groups+=("$a") ;;
  esac
done
mapfile -t known < <(sed -n 's/^# group: \([a-z]*\).*/\1/p' "$list")
((${#groups[@]})) || groups=("${known[@]}")
for g in "${groups[@]}"; do
  [[ " ${known[*]} " == *" $g "* ]] || { echo "tools/setup/check.sh: no group '$g' (groups: ${known[*]})" >&2; exit 2; }
done
strict=${PK_SETUP_STRICT:-0}

# rows of the named groups: "group package items..."
rows=()
group=""
while IFS= read -r line; do
  if [[ $line =~ ^#\ group:\ ([a-z]+) ]]; then group=${BASH_REMATCH[1]}; continue; fi
  line=${line%%#*}
  [[ -z ${line// } ]] && continue
  [[ " ${groups[*]} " == *" $group "* ]] && rows+=("$group $line")
done < "$list"

# py: items are checked with the interpreter Debian's packages install into (/usr/bin/python3), not a
# python3 that comes first on PATH (pyenv, a venv): python3-numpy cannot serve those. The build uses the
# python3 on PATH when it has NumPy and its headers, else this one (interfaces/python/CMakeLists.txt).
debian_python=/usr/bin/python3
[[ -x $debian_python ]] || debian_python=python3
present() {
  case $1 in
    py:*) "$debian_python" -c "import ${1#py:}" 2>/dev/null ;;
    /*) compgen -G "$1" >/dev/null ;;
    *) command -v "$1" >/dev/null 2>&1 ;;
  esac
}

missing_packages() {  # of group $1
  local r g p items it
  for r in "${rows[@]}"; do
    read -r g p items <<< "$r"
    [[ $g == "$1" ]] || continue
    for it in $items; do
      if ! present "$it"; then echo "$p"; break; fi
    done
  done | sort -u
}

if ((install)); then
  # One apt-get call per group, core first: a package an optional group cannot get (another distribution's
  # name) must not keep the required ones from installing.
  declare -A need
  all=()
  for g in "${groups[@]}"; do
    need[$g]=$(missing_packages "$g" | tr '\n' ' ')
    all+=(${need[$g]})
  done
  if ((${#all[@]})); then
    apt="DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends"
    if ! command -v apt-get >/dev/null 2>&1; then
      echo "tools/setup/check.sh: no apt-get here (pk's list is for Debian 12 / Ubuntu 24.04); install the equivalents of: ${all[*]}"
    elif [[ $(id -u) != 0 ]] && ! { command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; }; then
      echo "tools/setup/check.sh: not root and no password-less sudo: run this, then run me again:"
      echo "  sudo bash -c 'apt-get update -qq && $apt ${all[*]}'"
    else
      as_root=(); [[ $(id -u) == 0 ]] || as_root=(sudo -n)
      echo "tools/setup/check.sh: installing ${all[*]}"
      "${as_root[@]}" apt-get update -qq >/dev/null || echo "tools/setup/check.sh: apt-get update failed"
      for g in "${groups[@]}"; do
        [[ -n ${need[$g]// } ]] || continue
        # shellcheck disable=SC2086
        "${as_root[@]}" bash -c "$apt ${need[$g]}" >/dev/null ||
          echo "tools/setup/check.sh: apt-get could not install group $g (${need[$g]}); the check below names what is missing"
      done
    fi
  fi
fi

bad=0
declare -A group_ok
for g in "${groups[@]}"; do group_ok[$g]=1; done
for r in "${rows[@]}"; do
  read -r g p items <<< "$r"
  for it in $items; do
    present "$it" && continue
    group_ok[$g]=0
    if [[ $g == core || $strict == 1 ]]; then
      echo "missing: $it (Debian package $p: apt-get install $p)"
      bad=1
    else
      echo "optional, missing: $it (group $g; Debian package $p: apt-get install $p)"
    fi
  done
done

declare -A enables=([python]="the Python module (import pk) and its tests"
                    [interfaces]="the Fortran example and the Kokkos adapter's install tests"
                    [hip]="AMD builds (the hip-* presets) and the HIP half of the compile matrix"
                    [hipnew]="gfx950 (MI355X): the hip-gfx950 preset and its compile-matrix column (clang-22)"
                    [sanitize]="the host-asan preset and the fuzz targets (.ci/fuzz.sh)")
for g in "${groups[@]}"; do
  [[ $g == core ]] && continue
  if ((group_ok[$g])); then
    echo "tools/setup/check.sh: $g: present (${enables[$g]:-$g})"
  else
    echo "tools/setup/check.sh: $g: missing, without it: ${enables[$g]:-$g} ('tools/setup/check.sh --install $g' adds it)"
  fi
  if [[ $g == python ]]; then
    echo "tools/setup/check.sh: python: the module is built for the first of python3 on PATH" \
         "($(command -v python3 || echo none)) and $debian_python that imports numpy (or -DPython3_EXECUTABLE=...)"
  fi
done
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
if [[ -x $nvcc ]]; then
  echo "tools/setup/check.sh: CUDA toolkit: $("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p') at $nvcc (the cuda* presets)"
else
  echo "tools/setup/check.sh: CUDA toolkit: not found at $nvcc (NVIDIA builds need nvcc >= 12 there, or set NVCC; not a Debian package)"
  [[ $strict == 1 ]] && bad=1
fi
((bad == 0)) && echo "tools/setup/check.sh: every required tool is present"
exit $bad

#!/usr/bin/env bash
# expect.sh CODE REGEX CMD [ARGS...]: passes when CMD exits with status CODE and its output (stdout and
# stderr) matches the extended regular expression REGEX. Prints the output either way.
set -u
code=$1 regex=$2
shift 2
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [[ $rc -ne $code ]]; then
  echo "expect.sh: exit status $rc, expected $code" >&2
  exit 1
fi
if ! grep -Eq -- "$regex" <<< "$out"; then
  echo "expect.sh: output does not match /$regex/" >&2
  exit 1
fi

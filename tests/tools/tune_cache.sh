#!/usr/bin/env bash
# `pk tune reduce` stores a winner; separate processes then reuse it without measuring:
#   pk plan reduce  -> chosen from the tuning cache, the same winner;
#   pk run reduce   -> runs the cached winner and verifies it;
# and PK_TUNING=off, another size bucket and a corrupt cache file all fall back to the model.
# On a machine with a GPU it tunes the GPU (n = 2^26); otherwise the emulator impersonating an
# RTX 3090 (n = 10^5, --store-emulated). Usage: tune_cache.sh PK_BINARY
set -euo pipefail
pk=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PK_TUNING_CACHE=$work/tuning.json
unset PK_TUNING

json_get() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval("d" + sys.argv[2]))' "$@"; }

"$pk" devices --json > "$work/devices.json"
if [[ $(json_get "$work/devices.json" '["detected"]') != None ]]; then
  echo "GPU: $(json_get "$work/devices.json" '["detected"]')"
  dev=() tune_extra=() n=67108864 big=1073741824
else
  echo "no GPU: the emulator impersonating RTX 3090"
  dev=(--device "RTX 3090") tune_extra=(--store-emulated --reps 2 --warmup 1) n=100000 big=1600000
fi

"$pk" tune reduce "${dev[@]}" "${tune_extra[@]}" --n "$n" --json > "$work/tune.json"
winner=$(json_get "$work/tune.json" '["winner"]')
echo "tuned winner: $winner ($(json_get "$work/tune.json" '["stored"]'))"
[[ -s $PK_TUNING_CACHE ]] || { echo "FAIL: no cache file written"; exit 1; }

"$pk" plan reduce "${dev[@]}" --n "$n" --json > "$work/plan.json"
src=$(json_get "$work/plan.json" '["chosen"]["source"]')
name=$(json_get "$work/plan.json" '["chosen"]["name"]')
echo "second process: plan $name from $src"
[[ $src == "tuning cache" && $name == "$winner" ]] || { echo "FAIL: pk plan did not reuse the cached winner"; exit 1; }

"$pk" run reduce "${dev[@]}" --n "$n" --json > "$work/run.json"
[[ $(json_get "$work/run.json" '["plan"]["source"]') == "tuning cache" ]] || { echo "FAIL: pk run did not use the cache"; exit 1; }
[[ $(json_get "$work/run.json" '["plan"]["name"]') == "$winner" ]] || { echo "FAIL: pk run ran another plan"; exit 1; }
[[ $(json_get "$work/run.json" '["pass"]') == True ]] || { echo "FAIL: the cached plan's result is wrong"; exit 1; }
echo "third process: run $winner from the cache, verified"

[[ $(PK_TUNING=off "$pk" plan reduce "${dev[@]}" --n "$n" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["chosen"]["source"])') == model ]] \
  || { echo "FAIL: PK_TUNING=off still used the cache"; exit 1; }
[[ $("$pk" plan reduce "${dev[@]}" --n "$big" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["chosen"]["source"])') == model ]] \
  || { echo "FAIL: another size bucket used the cached winner"; exit 1; }
echo '{"schema": "pk.tuning_cache", "version": 1, "entries": [' > "$PK_TUNING_CACHE"
"$pk" plan reduce "${dev[@]}" --n "$n" --json > "$work/corrupt.json" 2> "$work/corrupt.err"
[[ $(json_get "$work/corrupt.json" '["chosen"]["source"]') == model ]] || { echo "FAIL: a corrupt cache was used"; exit 1; }
grep -q "warning" "$work/corrupt.err" || { echo "FAIL: a corrupt cache gave no warning"; exit 1; }
echo "PK_TUNING=off, another bucket and a corrupt cache: the model's plan"
echo "PASS"

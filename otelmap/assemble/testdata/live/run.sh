#!/usr/bin/env bash
# Runs the live programs and writes their captures.
#
#   run.sh [-n RUNS] [-o DIR] [PROGRAM...]   (default: every program, 3 runs)
#
# For each program folder (one with team.mjs): `npm ci` from its
# package-lock.json (npm's cache is used; set npm_config_cache to move it),
# then `node team.mjs captures/run-N.otlp.json` N times. A Python program
# (team.py, script.mjs and a hashed requirements.txt) gets its own virtual
# environment, .venv, made by uv (scripts/uv.sh) with Debian's
# /usr/bin/python3 and synced from requirements.txt, then runs N times as
# `node ../harness/pylive.mjs captures/run-N.otlp.json`. With -o DIR the
# captures go to DIR/PROGRAM/run-N.otlp.json instead, leaving the committed
# ones alone (`make live`). A program that fails stops the script with its
# name; captures of earlier runs stay.
#
# A program folder may hold a `variants` file: one line per variant,
# `NAME ARG...` (# starts a comment), run N times as `node team.mjs CAPTURE
# ARG...` into captures-NAME/ (with -o DIR: DIR/PROGRAM/captures-NAME/).
# Assess the result with: go test ./otelmap/assemble -run TestLiveCorpus
# (LIVE_CAPTURES=DIR for captures written with -o DIR).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
runs=3
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    -n) runs="$2"; shift 2 ;;
    -o) out="$(mkdir -p "$2" && cd "$2" && pwd)"; shift 2 ;;
    *) break ;;
  esac
done
programs=("$@")
if [[ ${#programs[@]} -eq 0 ]]; then
  for d in "$here"/*/; do
    [[ -f "$d/team.mjs" || -f "$d/team.py" ]] && programs+=("$(basename "$d")")
  done
fi
uv=""
for p in "${programs[@]}"; do
  dir="$here/$p"
  if [[ -f "$dir/team.py" ]]; then
    [[ -n "$uv" ]] || uv="$("$here/../../../../scripts/uv.sh")"
    echo "== $p: uv pip sync" >&2
    [[ -x "$dir/.venv/bin/python" ]] || "$uv" venv --quiet --python /usr/bin/python3 "$dir/.venv" >&2
    "$uv" pip sync --quiet --python "$dir/.venv/bin/python" --require-hashes "$dir/requirements.txt" >&2
    team=(node ../harness/pylive.mjs)
  elif [[ -f "$dir/team.mjs" ]]; then
    echo "== $p: npm ci" >&2
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
    team=(node team.mjs)
  else
    echo "run.sh: $p: no team.mjs or team.py in $dir" >&2; exit 2
  fi
  dest="$dir/captures"
  [[ -n "$out" ]] && dest="$out/$p"
  mkdir -p "$dest"
  for ((i = 1; i <= runs; i++)); do
    echo "== $p: run $i/$runs" >&2
    (cd "$dir" && "${team[@]}" "$dest/run-$i.otlp.json") || { echo "run.sh: $p run $i failed" >&2; exit 1; }
  done
  [[ -f "$dir/variants" ]] || continue
  while read -r name args; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    vdest="$dir/captures-$name"
    [[ -n "$out" ]] && vdest="$out/$p/captures-$name"
    mkdir -p "$vdest"
    for ((i = 1; i <= runs; i++)); do
      echo "== $p ($name): run $i/$runs" >&2
      # shellcheck disable=SC2086 # the variant's arguments are words
      (cd "$dir" && "${team[@]}" "$vdest/run-$i.otlp.json" $args </dev/null) || { echo "run.sh: $p ($name) run $i failed" >&2; exit 1; }
    done
  done <"$dir/variants"
done

#!/usr/bin/env bash
# Runs the live programs and writes their captures.
#
#   run.sh [-n RUNS] [-o DIR] [-j JOBS] [PROGRAM...]
#                                  (default: every program, 3 runs, one at a time)
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
# name; captures of earlier runs stay. With -j JOBS, JOBS programs run side
# by side (each program's runs stay in order), each one's output printed
# when it ends; a failure is reported, with every failed program's name,
# once the started programs have ended.
#
# A program folder may hold a `variants` file: one line per variant,
# `NAME ARG...` (# starts a comment), run N times as `node team.mjs CAPTURE
# ARG...` into captures-NAME/ (with -o DIR: DIR/PROGRAM/captures-NAME/).
# Assess the result with: go test ./otelmap/assemble -run TestLiveCorpus
# (LIVE_CAPTURES=DIR for captures written with -o DIR).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
runs=3
jobs=1
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    -n) runs="$2"; shift 2 ;;
    -o) out="$(mkdir -p "$2" && cd "$2" && pwd)"; shift 2 ;;
    -j) jobs="$2"; shift 2 ;;
    *) break ;;
  esac
done
programs=("$@")
if [[ ${#programs[@]} -eq 0 ]]; then
  for d in "$here"/*/; do
    [[ -f "$d/team.mjs" || -f "$d/team.py" ]] && programs+=("$(basename "$d")")
  done
fi
# A Python program needs uv and the otlpjson converter: both made once here,
# before programs run side by side.
uv=""
for p in "${programs[@]}"; do
  if [[ -f "$here/$p/team.py" ]]; then
    uv="$("$here/../../../../scripts/uv.sh")"
    if [[ -z "${LIVE_OTLPJSON:-}" ]]; then
      LIVE_OTLPJSON="$(mktemp -d)/otlpjson"
      (cd "$here/harness" && go build -o "$LIVE_OTLPJSON" ./otlpjson)
      export LIVE_OTLPJSON
    fi
    break
  fi
done

# one_program P: installs P's packages and runs it (and its variants).
one_program() {
  local p="$1" dir="$here/$1" team dest vdest name args i
  if [[ -f "$dir/team.py" ]]; then
    echo "== $p: uv pip sync" >&2
    [[ -x "$dir/.venv/bin/python" ]] || "$uv" venv --quiet --python /usr/bin/python3 "$dir/.venv" >&2
    "$uv" pip sync --quiet --python "$dir/.venv/bin/python" --require-hashes "$dir/requirements.txt" >&2
    team=(node ../harness/pylive.mjs)
  elif [[ -f "$dir/team.mjs" ]]; then
    echo "== $p: npm ci" >&2
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
    team=(node team.mjs)
  else
    echo "run.sh: $p: no team.mjs or team.py in $dir" >&2; return 2
  fi
  dest="$dir/captures"
  [[ -n "$out" ]] && dest="$out/$p"
  mkdir -p "$dest"
  for ((i = 1; i <= runs; i++)); do
    echo "== $p: run $i/$runs" >&2
    (cd "$dir" && "${team[@]}" "$dest/run-$i.otlp.json") || { echo "run.sh: $p run $i failed" >&2; return 1; }
  done
  [[ -f "$dir/variants" ]] || return 0
  while read -r name args; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    vdest="$dir/captures-$name"
    [[ -n "$out" ]] && vdest="$out/$p/captures-$name"
    mkdir -p "$vdest"
    for ((i = 1; i <= runs; i++)); do
      echo "== $p ($name): run $i/$runs" >&2
      # shellcheck disable=SC2086 # the variant's arguments are words
      (cd "$dir" && "${team[@]}" "$vdest/run-$i.otlp.json" $args </dev/null) || { echo "run.sh: $p ($name) run $i failed" >&2; return 1; }
    done
  done <"$dir/variants"
}

if [[ "$jobs" -le 1 ]]; then
  for p in "${programs[@]}"; do
    one_program "$p" || exit 1
  done
  exit 0
fi

# Side by side: each program's output goes to a log, printed when it ends,
# so the lines of one program stay together; the first failure is reported
# once every started program has ended.
logs="$(mktemp -d)"
failed=()
running=0
declare -A prog_of=()
for p in "${programs[@]}"; do
  while [[ "$running" -ge "$jobs" ]]; do
    wait -n -p pid && rc=0 || rc=$?
    running=$((running - 1))
    cat "$logs/${prog_of[$pid]}.log" >&2
    [[ "$rc" == 0 ]] || failed+=("${prog_of[$pid]}")
  done
  one_program "$p" >"$logs/$p.log" 2>&1 &
  prog_of[$!]="$p"
  running=$((running + 1))
done
while [[ "$running" -gt 0 ]]; do
  wait -n -p pid && rc=0 || rc=$?
  running=$((running - 1))
  cat "$logs/${prog_of[$pid]}.log" >&2
  [[ "$rc" == 0 ]] || failed+=("${prog_of[$pid]}")
done
rm -rf "$logs"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "run.sh: failed: ${failed[*]}" >&2
  exit 1
fi

#!/usr/bin/env bash
# Runs every Fuzz* target of the given packages for FUZZTIME each (`make
# fuzz`), and fails on what fuzzing found, not on the fuzzer's own flakes.
#
# Go's fuzzing coordinator fails a run that found nothing in two known ways:
#   - "context deadline exceeded" with no input written: the -fuzztime
#     deadline races the coordinator's check of it (internal/fuzz/fuzz.go,
#     CoordinateFuzzing's stop: `err == fuzzCtx.Err()` reads the child
#     context before the parent's cancellation has reached it);
#   - "fuzzing process hung or terminated unexpectedly" with an input written
#     that passes when run again (golang/go#56238), a worker missing the
#     coordinator's deadline on a loaded machine.
# Such a run is tried again, up to FUZZ_ATTEMPTS times in all, and the input
# it wrote is deleted so that it does not become a seed. Anything else fails at
# once: a written input that fails again when replayed, a written input with
# any other message (a panic or t.Error that does not recur is still a bug),
# and any failure without the deadline's signature (a build error, a seed).
#
# Usage: scripts/fuzz.sh PACKAGE...   (environment: GO, FUZZTIME, FUZZ_ATTEMPTS)
set -uo pipefail

GO=${GO:-go}
FUZZTIME=${FUZZTIME:-5s}
FUZZ_ATTEMPTS=${FUZZ_ATTEMPTS:-3}

out=$(mktemp)
replay=$(mktemp)
trap 'rm -f "$out" "$replay"' EXIT

# fuzz_target PKG DIR TARGET: 0 when the target passed (perhaps after
# retrying a flake), 1 when fuzzing found something or the run failed
# otherwise; the failing output is printed.
fuzz_target() {
  local pkg=$1 dir=$2 target=$3 attempt written
  for ((attempt = 1; attempt <= FUZZ_ATTEMPTS; attempt++)); do
    if "$GO" test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg" >"$out" 2>&1; then
      return 0
    fi
    written=$(sed -n 's/^[[:space:]]*Failing input written to \(.*\)$/\1/p' "$out" | tail -n 1)
    if [ -z "$written" ]; then
      if grep -q 'context deadline exceeded' "$out" && ! grep -q -e '^panic:' -e 'FAIL.*\[build failed\]' -e '^--- FAIL: .*/seed#' "$out"; then
        echo "fuzz $pkg $target: attempt $attempt of $FUZZ_ATTEMPTS met the fuzzer's deadline race (nothing written)" >&2
        continue
      fi
      cat "$out"
      return 1
    fi
    if ! grep -q 'fuzzing process hung or terminated unexpectedly' "$out"; then
      cat "$out"
      return 1
    fi
    # The worker died or missed the deadline: is the input it was on at
    # fault? Replay it alone, with a generous bound for a real hang.
    if ! "$GO" test -run "^${target}\$/^$(basename "$written")\$" -timeout 5m "$pkg" >"$replay" 2>&1; then
      cat "$out" "$replay"
      return 1
    fi
    echo "fuzz $pkg $target: in attempt $attempt of $FUZZ_ATTEMPTS a worker hung or died on an input that passes alone (golang/go#56238); deleting $written" >&2
    case $written in
      /*) rm -f "$written" ;;
      *) rm -f "$dir/$written" ;;
    esac
  done
  echo "fuzz $pkg $target: the fuzzer failed $FUZZ_ATTEMPTS times without finding anything; the last run:" >&2
  cat "$out"
  return 1
}

status=0
for pkg in $("$GO" list "$@"); do
  dir=$("$GO" list -f '{{.Dir}}' "$pkg")
  for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //'); do
    echo "fuzz $pkg $target ($FUZZTIME)"
    fuzz_target "$pkg" "$dir" "$target" || status=1
  done
done
exit $status

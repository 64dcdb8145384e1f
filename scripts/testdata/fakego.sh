#!/usr/bin/env bash
# A stand-in for `go` in scripts/fuzz_test.go: `list` goes to the real go
# ($REAL_GO); each `test -fuzz` plays the next outcome of $FAKE_RUNS (pass,
# race: deadline-race.txt, hung: hung.txt, which also writes the input it
# names); a replay (`test -run FuzzX/NAME`) passes or fails by $FAKE_REPLAY.
# $FAKE_LOG counts the calls.
set -u
here=$(dirname "$0")
case $1 in
  list) exec "$REAL_GO" "$@" ;;
esac
echo "$*" >>"$FAKE_LOG"
if [[ " $* " == *" -fuzz "* ]]; then
  n=$(grep -c -- ' -fuzz ' "$FAKE_LOG")
  read -r -a runs <<<"$FAKE_RUNS"
  outcome=${runs[n - 1]:-pass}
  case $outcome in
    pass) echo ok; exit 0 ;;
    race) cat "$here/deadline-race.txt"; exit 1 ;;
    hung)
      mkdir -p testdata/fuzz/FuzzDecode
      echo 'go test fuzz v1' >testdata/fuzz/FuzzDecode/a601188e726161766a8b077333fe62493bc92397a4c3bf5b205ac46814029453
      cat "$here/hung.txt"; exit 1 ;;
  esac
fi
[ "$FAKE_REPLAY" = pass ] && { echo ok; exit 0; }
echo '--- FAIL: FuzzDecode/a601188e726161766a8b077333fe62493bc92397a4c3bf5b205ac46814029453'
exit 1

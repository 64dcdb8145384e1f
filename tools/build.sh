#!/usr/bin/env bash
# tools/build.sh NAME PACKAGE [LDFLAGS...]
#
# Builds one tool of the local OpenTelemetry stack (the Collector, Jaeger)
# from its own module under tools/NAME into bin/NAME. The build takes
# minutes on a small machine, so it is skipped when bin/NAME was built from
# the same inputs: the key is a hash of the module's go.mod, go.sum, sources
# and manifests, the Go version and the flags, kept next to the binary in
# bin/.NAME.key. Mtimes are not trusted: a fresh checkout makes them
# meaningless.
#
# A module go.mod replaces with a directory of this repository (tools/otelcol
# builds the coordbench connector and coordbench's main module from here) is
# an input too: its go.mod, go.sum, non-test Go files and the files they
# //go:embed are hashed, without the modules nested in it (each has its own
# go.mod) or hidden directories, so a change to the connector or to the
# code it links rebuilds the binary and a change to a test or a document
# does not.
#
# CI runs in a fresh clone, where bin/ is empty, so a built binary is also
# kept in a cache outside the work tree, under the same key:
# $COORDBENCH_TOOLS_CACHE, default ${XDG_CACHE_HOME:-~/.cache}/coordbench/tools
# (one binary per tool; a new key replaces the old one). A hit there is a
# copy, not a build.
set -euo pipefail

name=${1:?usage: tools/build.sh NAME PACKAGE [LDFLAGS...]}
pkg=${2:?usage: tools/build.sh NAME PACKAGE [LDFLAGS...]}
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
mod=$root/tools/$name
bin=$root/${BIN:-bin}
out=$bin/$name
keyfile=$bin/.$name.key
go=${GO:-go}

# replaced_dirs prints the local directories $mod/go.mod replaces modules
# with (`=> ./x` or `=> ../x`, in a replace block or on one line), one a line.
replaced_dirs() {
  grep -oE '=>[[:space:]]*\.\.?/[^[:space:]]*' "$mod/go.mod" | sed -E 's/^=>[[:space:]]*//' || true
}

# module_inputs prints the files of the module rooted at $1 that go into a
# binary linking it: go.mod, go.sum, Go files that are not tests, and what
# their //go:embed lines name (a pattern is a glob relative to the file's
# directory; a directory is embedded whole). NUL-separated.
module_inputs() (
  cd "$1"
  # Prune hidden directories, testdata and every directory with a go.mod of
  # its own below the root: those are other modules.
  find . -mindepth 1 \( -name '.*' -o -name testdata -o \( -type d -exec test -e '{}/go.mod' \; \) \) -prune -o \
    -type f \( -name go.mod -o -name go.sum -o \( -name '*.go' ! -name '*_test.go' \) \) -print0 |
    while IFS= read -r -d '' f; do
      printf '%s\0' "$f"
      case $f in *.go) ;; *) continue ;; esac
      dir=$(dirname "$f")
      { grep -hE '^//go:embed[[:space:]]' "$f" || true; } | sed -E 's#^//go:embed[[:space:]]+##' | tr ' ' '\n' |
        while IFS= read -r pattern; do
          [ -n "$pattern" ] || continue
          pattern=${pattern#all:}
          for match in "$dir"/$pattern; do
            if [ -e "$match" ]; then find "$match" -type f -print0; fi
          done
        done
    done
)

key=$(
  {
    "$go" env GOVERSION GOOS GOARCH
    printf '%s\n' "$pkg" "$@"
    (cd "$mod" && find . -type f \( -name '*.go' -o -name go.mod -o -name go.sum -o -name '*.yaml' \) \
      -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
    for dir in $(replaced_dirs); do
      printf 'replace %s\n' "$dir"
      (module_inputs "$mod/$dir" | LC_ALL=C sort -zu | (cd "$mod/$dir" && xargs -0 -r sha256sum))
    done
  } | sha256sum | cut -d' ' -f1
)
if [ -x "$out" ] && [ "$(cat "$keyfile" 2>/dev/null)" = "$key" ]; then
  echo "$name: $out is up to date"
  exit 0
fi

cache=${COORDBENCH_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/coordbench/tools}
cached=$cache/$name-$key
mkdir -p "$bin"
if [ -x "$cached" ]; then
  cp -f "$cached" "$out.tmp"
  mv -f "$out.tmp" "$out"
  echo "$key" >"$keyfile"
  echo "$name: $out restored from $cached"
  exit 0
fi

echo "$name: building $pkg into $out (this takes minutes on a fresh machine)"
start=$(date +%s)
# Static, without local paths, without symbol tables: the binaries are
# tools, not something to debug.
(cd "$mod" && CGO_ENABLED=0 "$go" build -trimpath -ldflags="-s -w $*" -o "$out.tmp" "$pkg")
mv -f "$out.tmp" "$out"
echo "$key" >"$keyfile"
echo "$name: built in $(($(date +%s) - start))s"

# Keep it for the next clone; a cache that cannot be written costs only
# the next build.
if mkdir -p "$cache" 2>/dev/null && cp -f "$out" "$cached.tmp" 2>/dev/null && mv -f "$cached.tmp" "$cached"; then
  find "$cache" -maxdepth 1 -name "$name-*" ! -name "$name-$key" -delete 2>/dev/null || true
else
  rm -f "$cached.tmp"
fi

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

key=$(
  {
    "$go" env GOVERSION GOOS GOARCH
    printf '%s\n' "$pkg" "$@"
    cd "$mod" && find . -type f \( -name '*.go' -o -name go.mod -o -name go.sum -o -name '*.yaml' \) \
      -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
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

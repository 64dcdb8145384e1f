#!/usr/bin/env bash
# Installs uv (the Python package installer) into bin/uv-venv and prints the
# path of its uv binary. Every Python program of the project (the live
# corpus's Python programs, the MCP and A2A participants written in Python)
# gets its own virtual environment from uv, made with Debian's interpreter
# and filled from a hashed requirements file:
#
#   uv=$(scripts/uv.sh)
#   "$uv" venv --python /usr/bin/python3 DIR/.venv
#   "$uv" pip sync --python DIR/.venv/bin/python --require-hashes DIR/requirements.txt
#
# uv is pinned by version and hash; it installs in seconds what pip takes
# minutes for, from the same PyPI. Re-running is a no-op when it is there.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/bin/uv-venv"
want="0.13.9"
if [[ -x "$venv/bin/uv" ]] && [[ "$("$venv/bin/uv" --version 2>/dev/null)" == "uv $want"* ]]; then
  echo "$venv/bin/uv"
  exit 0
fi
# Debian's interpreter: the machine's python3 on PATH may be another one.
py=/usr/bin/python3
rm -rf "$venv"
"$py" -m venv "$venv" >&2
req="$(mktemp)"
trap 'rm -f "$req"' EXIT
cat >"$req" <<REQ
uv==$want \
    --hash=sha256:d7f459fe4fd247d830351c75686d3996ace3c6f3f728eb0e85a30b7ada0cef19
REQ
"$venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes --only-binary=:all: -r "$req" >&2
echo "$venv/bin/uv"

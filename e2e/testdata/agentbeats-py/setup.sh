#!/usr/bin/env bash
# Makes the virtual environments of the AgentBeats Python test
# (e2e.TestAgentBeatsPython, docs/python-participants.md): one per program,
# each from its hashed requirements file, with uv (scripts/uv.sh, pinned)
# and Debian's /usr/bin/python3:
#
#   client/.venv   AgentBeats' assessment client (a2a-sdk 0.3.22)
#   sdk1/.venv     the participant on a2a-sdk 1.x (participants/agent.py)
#   sdk03/.venv    the participant on a2a-sdk 0.3 (participants/agent03.py)
#
# `make python-participants` runs it; .ci/run does before `make test`.
# Re-running syncs each environment to its file (seconds when nothing changed).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
uv="$("$here/../../../scripts/uv.sh")"
for p in client sdk1 sdk03; do
  dir="$here/$p"
  [[ -x "$dir/.venv/bin/python" ]] || "$uv" venv --quiet --python /usr/bin/python3 "$dir/.venv"
  "$uv" pip sync --quiet --python "$dir/.venv/bin/python" --require-hashes "$dir/requirements.txt"
  echo "$p: $("$dir/.venv/bin/python" -c 'import importlib.metadata as m; print("a2a-sdk", m.version("a2a-sdk"))')"
done

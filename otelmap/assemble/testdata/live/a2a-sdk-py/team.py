"""A2A Python SDK (a2a-sdk 1.3.0): a coordinator agent calling two
specialist agents over real A2A (JSON-RPC over HTTP on 127.0.0.1), each
agent an A2A server with an agent card in a process of its own with its own
service.name (agent.py). The a2a-js program's team, in Python:

  user (this process, not traced) --A2A--> coordinator
  coordinator --A2A--> researcher  (twice, concurrently: two tool calls in one model turn)
  coordinator --A2A--> writer      (once)

Each process is traced as agent.py says; `python team.py --bare` (what
../a2a-sdk-bare-py runs) leaves the HTTP instrumentation out, so only the
SDK's own spans are made.
"""

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid

import httpx
from a2a.client import ClientConfig, create_client
from a2a.helpers.proto_helpers import get_message_text, new_text_part
from a2a.types import Message, Role, SendMessageRequest

HERE = os.path.dirname(os.path.abspath(__file__))
BARE = "--bare" in sys.argv[1:]


def start(role: str, env: dict | None = None) -> tuple[subprocess.Popen, str]:
    """Starts agent.py ROLE as service ROLE and returns it with its URL."""
    args = [sys.executable, os.path.join(HERE, "agent.py"), role] + (["--bare"] if BARE else [])
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "OTEL_SERVICE_NAME": role, **(env or {})})
    line = proc.stdout.readline()
    if not line:
        raise SystemExit(f"{role} exited ({proc.wait()}) before listening")
    return proc, json.loads(line)[role]


def stop(proc: subprocess.Popen, role: str) -> None:
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=60)
    if code != 0:
        raise SystemExit(f"agent {role} exited with {code}")


async def ask(url: str, text: str) -> str:
    async with httpx.AsyncClient(timeout=300) as http:
        client = await create_client(url, ClientConfig(httpx_client=http, streaming=False))
        request = SendMessageRequest(message=Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[new_text_part(text)]))
        async for event in client.send_message(request):
            if event.HasField("message"):
                return get_message_text(event.message)
    raise SystemExit("the coordinator answered no message")


def main() -> None:
    procs = []
    try:
        researcher, r_url = start("researcher")
        procs.append(("researcher", researcher))
        writer, w_url = start("writer")
        procs.append(("writer", writer))
        coordinator, c_url = start("coordinator", {"RESEARCHER_URL": r_url, "WRITER_URL": w_url})
        procs.insert(0, ("coordinator", coordinator))
        answer = asyncio.run(ask(c_url, "Who made sparse attention practical, and when?"))
        if "Longformer (2020)" not in answer:
            raise SystemExit(f"unexpected answer: {answer!r}")
    finally:
        # Coordinator first: its spans end last. Each shutdown exports its batch.
        for role, proc in procs:
            stop(proc, role)


if __name__ == "__main__":
    main()

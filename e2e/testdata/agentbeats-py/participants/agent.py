"""A purple participant on the A2A Python SDK 1.x (a2a-sdk 1.3.0), traced
with OpenTelemetry Python (telemetry.py): the quick start of
docs/python-participants.md, run by e2e's TestAgentBeatsPython.

  python agent.py --name NAME [--role reviewer|coordinator] [--lean N]
                  [--peer NAME=URL ...] [--host H] [--port P] [--card-url URL]
                  [--no-http-instrumentation]

The AgentBeats flags (--host, --port, --card-url); --port 0 picks a free port.
Once listening it prints one JSON line, {"url": CARD_URL}, on stdout. SIGTERM
stops it; the tracer provider is shut down (its last batch exported) before
it exits. --no-http-instrumentation leaves the Starlette and HTTPX
instrumentations out, as docs/python-participants.md warns against: the
test shows what the green agent then reports.

A reviewer answers the green agent's review request by review.review; a
coordinator asks every peer (an A2A call each, through the SDK's client) and
decides by review.decide. Answers are one Message with the JSON as text and
as a data part.
"""

import argparse
import asyncio
import json
import signal
import socket
import sys
import uuid
from urllib.parse import urlsplit

import httpx
import uvicorn
from a2a.client import ClientConfig, create_client
from a2a.helpers.proto_helpers import get_data_parts, get_message_text, get_text_parts, new_data_part, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Message, Role, SendMessageRequest
from starlette.applications import Starlette

import review
import telemetry

PEER_TIMEOUT = 120.0


async def ask(name: str, url: str, text: str) -> dict:
    """One A2A call to the peer at url: its answer, parsed."""
    u = urlsplit(url)
    with telemetry.agent_call(name, u.hostname or "", u.port or 80):
        async with httpx.AsyncClient(timeout=PEER_TIMEOUT) as http:
            client = await create_client(url, ClientConfig(httpx_client=http, streaming=False))
            request = SendMessageRequest(
                message=Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[new_text_part(text)])
            )
            answers = []
            async for event in client.send_message(request):
                if event.HasField("message"):
                    answers += get_data_parts(event.message.parts) or [review.parse_answer(get_message_text(event.message))]
                elif event.HasField("task"):
                    for artifact in event.task.artifacts:
                        answers += get_data_parts(artifact.parts)
            if not answers:
                raise RuntimeError(f"{name} answered no review")
            return answers[-1]


class Participant(AgentExecutor):
    def __init__(self, name: str, role: str, lean: int, peers: dict[str, str]):
        self.name, self.role, self.lean, self.peers = name, role, lean, peers

    async def answer(self, text: str) -> dict:
        if self.role == "reviewer" or not self.peers:
            return review.review(text, self.lean)
        answers = await asyncio.gather(*(ask(n, u, text) for n, u in self.peers.items()))
        return review.decide(list(answers))

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        with telemetry.agent_work(self.name):
            text = "\n".join(get_text_parts(context.message.parts))
            answer = await self.answer(text)
        await event_queue.enqueue_event(
            Message(
                role=Role.ROLE_AGENT,
                message_id=uuid.uuid4().hex,
                context_id=context.context_id,
                task_id=context.task_id,
                parts=[new_text_part(json.dumps(answer)), new_data_part(answer)],
            )
        )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError("a review cannot be canceled")


def card(name: str, role: str, url: str) -> AgentCard:
    return AgentCard(
        name=name,
        description=f"A {role} of the coordination scenario (a2a-sdk 1.x)",
        version="1.0.0",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain", "application/json"],
        skills=[AgentSkill(id="review", name="review", description="reviews a paper", tags=["review"])],
    )


def peers(values: list[str]) -> dict[str, str]:
    out = {}
    for v in values:
        name, sep, url = v.partition("=")
        if not sep or not name or not url:
            raise SystemExit(f"--peer wants NAME=URL, got {v!r}")
        out[name] = url
    return out


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--name", required=True)
    p.add_argument("--role", default="reviewer", choices=["reviewer", "coordinator"])
    p.add_argument("--lean", type=int, default=0, help="added to a reviewer's recommendation")
    p.add_argument("--peer", action="append", default=[], help="NAME=URL of an agent to call")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=9009)
    p.add_argument("--card-url", default="")
    p.add_argument("--no-http-instrumentation", action="store_true", help="only the SDK's own spans")
    args = p.parse_args()
    http = not args.no_http_instrumentation

    provider = telemetry.setup(args.name, http)
    sock = socket.create_server((args.host, args.port))
    url = args.card_url or f"http://{args.host}:{sock.getsockname()[1]}/"
    agent_card = card(args.name, args.role, url)
    handler = DefaultRequestHandler(
        agent_executor=Participant(args.name, args.role, args.lean, peers(args.peer)),
        task_store=InMemoryTaskStore(),
        agent_card=agent_card,
    )
    app = Starlette(routes=create_agent_card_routes(agent_card) + create_jsonrpc_routes(handler, "/"))
    telemetry.instrument(app, http)
    print(json.dumps({"url": url}), flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    # uvicorn stops on SIGTERM, then raises the signal again under the
    # handler it found: this one, so that the finally below still exports
    # the last batch before the process exits 0.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        await server.serve(sockets=[sock])
    finally:
        provider.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)

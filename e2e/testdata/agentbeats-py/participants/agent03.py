"""A purple participant on the A2A Python SDK's 0.3 line (a2a-sdk 0.3.26,
the SDK of AgentBeats' tutorial and template agents), traced as agent.py is
(telemetry.py). A reviewer only: it answers the green agent's review request,
or a coordinator's, by review.review.

  python agent03.py --name NAME [--lean N] [--host H] [--port P] [--card-url URL]

Prints {"url": CARD_URL} on stdout once listening; SIGTERM stops it after
the tracer provider's last export.
"""

import argparse
import asyncio
import json
import signal
import socket
import sys
import uuid

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, AgentSkill, DataPart, Message, Part, Role, TextPart

import review
import telemetry


class Reviewer(AgentExecutor):
    def __init__(self, name: str, lean: int):
        self.name, self.lean = name, lean

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        with telemetry.agent_work(self.name):
            answer = review.review(context.get_user_input(), self.lean)
        await event_queue.enqueue_event(
            Message(
                role=Role.agent,
                message_id=uuid.uuid4().hex,
                context_id=context.context_id,
                task_id=context.task_id,
                parts=[Part(root=TextPart(text=json.dumps(answer))), Part(root=DataPart(data=answer))],
            )
        )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError("a review cannot be canceled")


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--name", required=True)
    p.add_argument("--lean", type=int, default=0, help="added to the recommendation")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=9009)
    p.add_argument("--card-url", default="")
    args = p.parse_args()

    provider = telemetry.setup(args.name)
    sock = socket.create_server((args.host, args.port))
    url = args.card_url or f"http://{args.host}:{sock.getsockname()[1]}/"
    card = AgentCard(
        name=args.name,
        description="A reviewer of the coordination scenario (a2a-sdk 0.3)",
        url=url,
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain", "application/json"],
        skills=[AgentSkill(id="review", name="review", description="reviews a paper", tags=["review"])],
    )
    handler = DefaultRequestHandler(agent_executor=Reviewer(args.name, args.lean), task_store=InMemoryTaskStore())
    app = A2AStarletteApplication(agent_card=card, http_handler=handler).build()
    telemetry.instrument(app)
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

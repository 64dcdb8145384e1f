"""One A2A agent of the a2a-sdk-py team, in a process of its own:

  python agent.py ROLE [--bare]      (OTEL_SERVICE_NAME names the process)

An A2A server on the Python A2A SDK 1.x (a2a-sdk 1.3.0): the card and
JSON-RPC routes of a2a.server.routes on a Starlette app under uvicorn, on
127.0.0.1 with a free port; it prints {"url": BASE_URL} on stdout once
bound. The roles are a2a-js's (../a2a-js/agent.mjs):

  researcher: asks the model (Chat Completions over httpx, system prompt
    "You are the researcher") and answers with a Message.
  writer: asks the model ("You are the writer") and answers with a Task
    completed with one artifact (TaskUpdater).
  coordinator: a tool-calling loop on the model (tools ask_researcher,
    ask_writer); each tool call is an A2A call to that specialist through
    the SDK's client (create_client: the card, then SendMessage over
    JSON-RPC), parallel tool calls concurrently. The specialists' URLs come
    from RESEARCHER_URL and WRITER_URL.

Tracing, as a Python service is traced: opentelemetry-sdk's TracerProvider
(service.name from OTEL_SERVICE_NAME) with a BatchSpanProcessor and the
OTLP/HTTP exporter, set as the global provider, which the SDK's own
telemetry (a2a.utils.telemetry, on with the [telemetry] extra) uses; and,
unless --bare, the Starlette instrumentation on the app (SERVER spans that
continue the caller's traceparent) and the HTTPX instrumentation (CLIENT
spans that send it: the A2A client's requests and the model calls). With
--bare (a2a-sdk-bare-py) only the SDK's own spans are made. SIGTERM stops
the server and exports the last batch.
"""

import asyncio
import json
import os
import signal
import socket
import sys
import uuid

import httpx
import uvicorn
from a2a.client import ClientConfig, create_client
from a2a.helpers.proto_helpers import get_message_text, get_text_parts, new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Message, Role, SendMessageRequest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from starlette.applications import Starlette

ROLES = {
    "researcher": ("Research Agent", "You are the researcher. Answer with facts and sources.", []),
    "writer": ("Writing Agent", "You are the writer. Turn notes into two clear sentences.", []),
    "coordinator": (
        "Coordinator Agent",
        "You are the coordinator. Ask the researcher for facts and the writer for the final text.",
        [
            {"type": "function", "function": {"name": "ask_researcher", "description": "Ask the research agent a question",
                                              "parameters": {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}}},
            {"type": "function", "function": {"name": "ask_writer", "description": "Ask the writing agent to write",
                                              "parameters": {"type": "object", "properties": {"notes": {"type": "string"}}, "required": ["notes"]}}},
        ],
    ),
}


async def chat(role: str, messages: list[dict]) -> dict:
    """One Chat Completions request to the model at OPENAI_BASE_URL."""
    _, _, tools = ROLES[role]
    body = {"model": "gpt-4o-mini", "messages": messages, **({"tools": tools} if tools else {})}
    async with httpx.AsyncClient(timeout=120) as http:
        res = await http.post(f"{os.environ['OPENAI_BASE_URL']}/chat/completions", json=body,
                              headers={"authorization": f"Bearer {os.environ['OPENAI_API_KEY']}"})
        res.raise_for_status()
        return res.json()["choices"][0]["message"]


async def ask_agent(url: str, text: str) -> str:
    """Sends one message to the A2A agent at url and returns its answer's text."""
    async with httpx.AsyncClient(timeout=120) as http:
        client = await create_client(url, ClientConfig(httpx_client=http, streaming=False))
        request = SendMessageRequest(message=Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[new_text_part(text)]))
        texts = []
        async for event in client.send_message(request):
            if event.HasField("message"):
                texts.append(get_message_text(event.message))
            elif event.HasField("task"):
                texts += ["\n".join(get_text_parts(a.parts)) for a in event.task.artifacts]
        return "\n".join(texts)


async def coordinate(question: str) -> str:
    specialists = {"ask_researcher": os.environ["RESEARCHER_URL"], "ask_writer": os.environ["WRITER_URL"]}
    messages = [{"role": "system", "content": ROLES["coordinator"][1]}, {"role": "user", "content": question}]
    for _ in range(5):
        reply = await chat("coordinator", messages)
        messages.append(reply)
        calls = reply.get("tool_calls") or []
        if not calls:
            return reply["content"]
        results = await asyncio.gather(*(
            ask_agent(specialists[c["function"]["name"]], next(iter(json.loads(c["function"]["arguments"]).values())))
            for c in calls
        ))
        messages += [{"role": "tool", "tool_call_id": c["id"], "content": r} for c, r in zip(calls, results)]
    raise RuntimeError("coordinator: no answer after 5 turns")


class Executor(AgentExecutor):
    def __init__(self, role: str):
        self.role = role

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        question = context.get_user_input()
        system = ROLES[self.role][1]
        if self.role == "coordinator":
            text = await coordinate(question)
        elif self.role == "researcher":
            text = (await chat(self.role, [{"role": "system", "content": system}, {"role": "user", "content": question}]))["content"]
        else:
            task = context.current_task or new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
            updater = TaskUpdater(event_queue, task.id, task.context_id)
            await updater.start_work()
            reply = await chat(self.role, [{"role": "system", "content": system}, {"role": "user", "content": question}])
            await updater.add_artifact([new_text_part(reply["content"])], name="text")
            await updater.complete()
            return
        await event_queue.enqueue_event(Message(role=Role.ROLE_AGENT, message_id=uuid.uuid4().hex,
                                                context_id=context.context_id, parts=[new_text_part(text)]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


async def main() -> None:
    role = sys.argv[1]
    bare = "--bare" in sys.argv[2:]
    title, system, _ = ROLES[role]
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    if not bare:
        from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor

        HTTPXClientInstrumentor().instrument()

    sock = socket.create_server(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    card = AgentCard(
        name=title,
        description=system,
        version="1.0.0",
        supported_interfaces=[AgentInterface(url=f"{base}/a2a/jsonrpc", protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text"],
        default_output_modes=["text"],
        skills=[AgentSkill(id=role, name=title, description=system, tags=[role])],
    )
    handler = DefaultRequestHandler(agent_executor=Executor(role), task_store=InMemoryTaskStore(), agent_card=card)
    app = Starlette(routes=create_agent_card_routes(card) + create_jsonrpc_routes(handler, "/a2a/jsonrpc"))
    if not bare:
        from opentelemetry.instrumentation.starlette import StarletteInstrumentor

        StarletteInstrumentor.instrument_app(app)
    print(json.dumps({role: base}), flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    # uvicorn raises SIGTERM again after its graceful stop, under the
    # handler it found: this one, so the finally below exports the last
    # batch and the process exits 0.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        await server.serve(sockets=[sock])
    finally:
        provider.shutdown()


if __name__ == "__main__":
    asyncio.run(main())

"""A purple agent that works coordbench's tasks through MCP.

Written as a participant would write one with the official SDKs, unpatched
(docs/mcp.md, "A participant's quick start"): A2A by the A2A Python SDK
(a2a-sdk), the tools by the MCP Python SDK's Client over its stock Streamable
HTTP transport (mcp.client.streamable_http.streamable_http_client) with the
task's bearer token.

    .venv/bin/python participant.py    prints {"url": "http://127.0.0.1:PORT"} once it listens

A message that carries the green agent's MCP endpoint (a data part of kind
coordbench.mcp/v1) is worked through the tools only: list them, read the step
or the paper, run the code (SciCode's run_code), submit. A message without
one is answered in text, with the same answers, so that a test can compare
the two deliveries. The "model" is scripted:

  SciCode: the reference code of the step (ground_truth_code of the
    validation split, read from $COORDBENCH_SCICODE_DIR/problems_dev.jsonl);
    the steps named in $FIRST_DRAFT_WRONG (comma-separated, e.g. "29.2") get a
    wrong first draft on their first turn, so that a step takes feedback.
  coordination: one fixed review (REVIEW).

PORT (default 0, any free port) is the A2A port on 127.0.0.1.
"""

import asyncio
import json
import os
import socket
import sys
from pathlib import Path

import httpx2
import uvicorn
from a2a.helpers import get_data_parts, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette

NAME = "mcp-participant-py"
MCP_KIND = "coordbench.mcp/v1"
STEP_KINDS = ("coordbench.scicode_step/v1", "coordbench.scicode_feedback/v1")

REVIEW = {
    "decision": "accept",
    "recommendation": 4,
    "scores": {"originality": 4, "clarity": 3, "soundness": 4, "substance": 3},
    "rationale": "A scripted review: the same decision for every paper.",
}

_references: dict[str, dict[str, str]] = {}
_wrong_first = {s.strip() for s in os.environ.get("FIRST_DRAFT_WRONG", "").split(",") if s.strip()}


def reference(step: str) -> dict[str, str]:
    """The reference code of a SciCode step of the validation split."""
    if not _references:
        directory = os.environ.get("COORDBENCH_SCICODE_DIR")
        if not directory:
            raise RuntimeError("set COORDBENCH_SCICODE_DIR to the SciCode data directory")
        for line in (Path(directory) / "problems_dev.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                for s in json.loads(line)["sub_steps"]:
                    _references[s["step_number"]] = {"header": s["function_header"], "code": s["ground_truth_code"]}
    ref = _references.get(step)
    if not ref or not ref["code"]:
        raise RuntimeError(f"no reference code for step {step}")
    return ref


def answer_code(step: str, turn: int) -> str:
    """The scripted model's code for a step's turn."""
    ref = reference(step)
    if turn <= 1 and step in _wrong_first:
        return f'{ref["header"].rstrip()}\n    raise NotImplementedError("first draft of step {step}")\n'
    return ref["code"]


async def call(client: Client, name: str, args: dict) -> dict:
    """The structured result of a tool call; a result marked isError raises."""
    res = await client.call_tool(name, args)
    text = "\n".join(c.text for c in res.content if getattr(c, "type", "") == "text")
    if res.is_error:
        raise RuntimeError(f"{name}: {text}")
    if res.structured_content is None:
        raise RuntimeError(f"{name}: no structured result: {text}")
    return res.structured_content


async def work_through_mcp(ep: dict) -> str:
    """Works the task at the endpoint through its tools; returns the reply text."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {ep['token']}"}) as http:
        async with Client(streamable_http_client(ep["url"], http_client=http)) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            if "read_step" in names:
                step = await call(client, "read_step", {})
                code = answer_code(step["step_number"], int(step["turn"]))
                # run_code as a participant would use it: the code runs after
                # the previous steps' code; the expression names the function.
                run = await call(client, "run_code", {"code": code, "expression": step["function_name"]})
                if run.get("exception") or step["function_name"] not in str(run.get("result", "")):
                    raise RuntimeError(f"run_code of step {step['step_number']}: {run}")
                verdict = await call(client, "submit_step", {"step_number": step["step_number"], "code": code})
                return f"Step {step['step_number']}: submitted through submit_step, {verdict['reason']}."
            if "read_paper" in names:
                paper = await call(client, "read_paper", {})
                if not paper.get("title"):
                    raise RuntimeError(f"read_paper: no title: {paper}")
                res = await call(client, "submit_review", REVIEW)
                if not res.get("accepted"):
                    raise RuntimeError(f"submit_review: {res}")
                return json.dumps(REVIEW)
            raise RuntimeError(f"the endpoint offers no tools this participant knows: {names}")


def answer_in_text(data: list) -> str:
    """Answers in text: the same answers, as the text delivery reads them."""
    for d in data:
        if isinstance(d, dict) and d.get("kind") in STEP_KINDS:
            # A data part's numbers come back as floats (google.protobuf.Value).
            return "```python\n" + answer_code(d["step_number"], int(d.get("turn", 1))) + "```\n"
    return json.dumps(REVIEW)


class Executor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        data = get_data_parts(context.message.parts) if context.message else []
        ep = next((d for d in data if isinstance(d, dict) and d.get("kind") == MCP_KIND), None)
        text = await work_through_mcp(ep) if ep else answer_in_text(data)
        await event_queue.enqueue_event(new_text_message(text, context_id=context.context_id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise RuntimeError("cancel is not supported")


async def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", int(os.environ.get("PORT", "0"))))
    sock.listen(128)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    card = AgentCard(
        name=NAME,
        description="Works coordbench tasks through MCP with the MCP Python SDK",
        supported_interfaces=[AgentInterface(url=f"{base}/a2a/jsonrpc", protocol_binding="JSONRPC", protocol_version="1.0")],
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=False, push_notifications=False),
        default_input_modes=["text"],
        default_output_modes=["text"],
        skills=[AgentSkill(id="solve", name="solve", description="SciCode steps and paper reviews", tags=["mcp"])],
    )
    handler = DefaultRequestHandler(agent_executor=Executor(), task_store=InMemoryTaskStore(), agent_card=card)
    app = Starlette(routes=create_agent_card_routes(card) + create_jsonrpc_routes(handler, "/a2a/jsonrpc"))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    print(json.dumps({"url": base}), flush=True)
    await server.serve(sockets=[sock])


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)

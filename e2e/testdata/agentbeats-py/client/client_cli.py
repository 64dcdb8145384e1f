"""AgentBeats' assessment client, as AgentBeats' Python tooling runs it:

  python client_cli.py SCENARIO.toml [OUTPUT.json]

Written for coordbench after RDI-Foundation/agentbeats-tutorial at commit
9b9ca9367f88236518f293b0965fc29b03e1e7b8 (src/agentbeats/client_cli.py,
src/agentbeats/client.py, src/agentbeats/models.py), step for step, against
the same a2a-sdk 0.3 client API; RDI-Foundation/agentbeats-gateway at commit
ca6dd30904f98bfdfbff2f79fb035e854c93a8d3 (src/assessment.py), which runs
assessments on AgentBeats today, sends the same request the same way. Their
package is not on PyPI and CI reaches no other source, so this is a
rewrite, not their file: what it does, in their order,

- reads the scenario TOML: [green_agent] endpoint, [[participants]] role,
  endpoint (and agentbeats_id), [config];
- builds EvalRequest(participants={role: endpoint}, config=...) (pydantic,
  participants as HttpUrl, so a bare host gains a trailing "/") and sends
  its model_dump_json() as the text of one user Message;
- resolves the green agent's card with A2ACardResolver, makes the client
  with ClientFactory(ClientConfig(httpx_client, streaming=True)).create(card),
  adds an event consumer, and iterates client.send_message(message);
- the consumer prints every status and artifact update, keeps the task's
  artifacts when the task completes, and exits 1 on any other final state;
- writes {"participants": {role: agentbeats_id}, "results": [...]} where
  results are the artifacts' data parts (and text parts that parse as JSON).

Where this differs from theirs, and why: the exit on a failed state is
sys.exit (theirs calls the site builtin exit, the same SystemExit); the
timeout is theirs (300 s).
"""

import asyncio
import json
import sys
import tomllib
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory, Consumer
from a2a.types import (
    AgentCard,
    Artifact,
    DataPart,
    Message,
    Part,
    Role,
    TaskArtifactUpdateEvent,
    TaskStatusUpdateEvent,
    TextPart,
)
from pydantic import BaseModel, HttpUrl

DEFAULT_TIMEOUT = 300


class EvalRequest(BaseModel):
    """agentbeats/models.py: the assessment request a green agent receives."""

    participants: dict[str, HttpUrl]
    config: dict[str, Any]


def scenario_request(doc: dict) -> tuple[EvalRequest, str, dict[str, str]]:
    """client_cli.parse_toml: the request, the green agent's URL, role -> id."""
    green = doc.get("green_agent")
    if not isinstance(green, dict) or "endpoint" not in green:
        raise ValueError("green.endpoint is required in TOML")
    endpoints: dict[str, str] = {}
    ids: dict[str, str] = {}
    for p in doc.get("participants", []):
        if not isinstance(p, dict):
            continue
        role, endpoint, agent_id = p.get("role"), p.get("endpoint"), p.get("agentbeats_id")
        if role and endpoint:
            endpoints[role] = endpoint
        if role and agent_id:
            ids[role] = agent_id
    return EvalRequest(participants=endpoints, config=doc.get("config", {}) or {}), green["endpoint"], ids


def split_parts(parts: list[Part]) -> tuple[list[str], list[Any]]:
    """client_cli.parse_parts: text parts that are JSON count as data."""
    texts, data = [], []
    for part in parts:
        if isinstance(part.root, TextPart):
            try:
                data.append(json.loads(part.root.text))
            except Exception:
                texts.append(part.root.text.strip())
        elif isinstance(part.root, DataPart):
            data.append(part.root.data)
    return texts, data


def show(parts: list[Part], state: str | None = None) -> None:
    """client_cli.print_parts."""
    texts, data = split_parts(parts)
    out = [f"[Status: {state}]"] if state else []
    if texts:
        out.append("\n".join(texts))
    out.extend(json.dumps(d, indent=2) for d in data)
    print("\n".join(out) + "\n", flush=True)


async def send(text: str, base_url: str, consumer: Consumer) -> None:
    """client.send_message with streaming=True and a consumer."""
    async with httpx.AsyncClient(timeout=DEFAULT_TIMEOUT) as http:
        card = await A2ACardResolver(httpx_client=http, base_url=base_url).get_agent_card()
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)
        await client.add_event_consumer(consumer)
        message = Message(kind="message", role=Role.user, parts=[Part(TextPart(kind="text", text=text))], message_id=uuid4().hex)
        async for _ in client.send_message(message):
            pass


async def main() -> None:
    if len(sys.argv) < 2:
        print("Usage: python client_cli.py <scenario.toml> [output.json]")
        sys.exit(1)
    scenario = Path(sys.argv[1])
    output = Path(sys.argv[2]) if len(sys.argv) > 2 else None
    if not scenario.exists():
        print(f"File not found: {scenario}")
        sys.exit(1)
    req, green_url, ids = scenario_request(tomllib.loads(scenario.read_text()))
    artifacts: list[Artifact] = []

    async def consume(event, card: AgentCard) -> None:
        nonlocal artifacts
        match event:
            case Message() as msg:
                show(msg.parts)
            case (task, TaskStatusUpdateEvent() as update):
                status = update.status
                show(status.message.parts if status.message else [], status.state.value)
                if status.state.value == "completed":
                    artifacts = task.artifacts
                elif status.state.value not in ("submitted", "working"):
                    print(f"Agent returned status {status.state.value}. Exiting.")
                    sys.exit(1)
            case (task, TaskArtifactUpdateEvent() as update):
                show(update.artifact.parts, "Artifact update")
            case (task, None):
                status = task.status
                show(status.message.parts if status.message else [], status.state.value)
                if status.state.value == "completed":
                    artifacts = task.artifacts
                elif status.state.value not in ("submitted", "working"):
                    print(f"Agent returned status {status.state.value}. Exiting.")
                    sys.exit(1)
            case _:
                print("Unhandled event")

    await send(req.model_dump_json(), green_url, consume)
    if output:
        results = []
        for artifact in artifacts or []:
            results.extend(split_parts(artifact.parts)[1])
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps({"participants": ids, "results": results}, indent=2))
        print(f"Results written to {output}")


if __name__ == "__main__":
    asyncio.run(main())

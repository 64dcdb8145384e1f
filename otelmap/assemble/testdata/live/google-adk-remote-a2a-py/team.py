"""Google ADK (Python, google-adk 2.13.0) with remote agents: a coordinator
LlmAgent in this process calls two ADK agents served over A2A, each with
to_a2a in a process of its own (remote.py), through RemoteA2aAgent:

  coordinator (LlmAgent, this process, service coordinator-app)
    tools:     AgentTool(RemoteA2aAgent researcher)  -> an A2A call to the researcher process
    subAgents: [RemoteA2aAgent writer]               -> transfer_to_agent, then an A2A call to the writer process
  researcher, writer: LlmAgents behind to_a2a (services researcher-service, writer-service)

The coordinator asks the researcher (the AgentTool), transfers to the
writer, and the writer's answer ends the run. Telemetry is ADK's own in every
process: maybe_set_otel_providers() (OTLP/HTTP protobuf from the
OTEL_EXPORTER_OTLP_* variables the harness sets). ADK's A2A code sends no
trace context (google/adk/a2a has no propagator call), so each remote
request starts a trace of its own. Model: Gemini through
GOOGLE_GEMINI_BASE_URL (google-genai's _base_url.py), the fake model.
"""

import asyncio
import json
import os
import signal
import subprocess
import sys
import warnings

from google.adk.agents import LlmAgent
from google.adk.agents.remote_a2a_agent import RemoteA2aAgent
from google.adk.runners import InMemoryRunner
from google.adk.telemetry.setup import maybe_set_otel_providers
from google.adk.tools.agent_tool import AgentTool
from google.genai import types
from opentelemetry import trace

# ADK marks its A2A support experimental and warns on every use; the warnings
# say nothing about the run.
warnings.filterwarnings("ignore", message=r"\[EXPERIMENTAL\]")

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = "gemini-2.5-flash"
CARD = "/.well-known/agent-card.json"


def start(role: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "remote.py"), role], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "OTEL_SERVICE_NAME": f"{role}-service"})
    line = proc.stdout.readline()
    if not line:
        raise SystemExit(f"{role} exited ({proc.wait()}) before listening")
    return proc, json.loads(line)[role]


def stop(proc: subprocess.Popen, role: str) -> None:
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=60)
    if code != 0:
        raise SystemExit(f"{role} exited with {code}")


async def run(researcher_url: str, writer_url: str) -> str:
    researcher = RemoteA2aAgent(name="researcher", agent_card=researcher_url + CARD, description="Finds facts about a research topic.")
    writer = RemoteA2aAgent(name="writer", agent_card=writer_url + CARD, description="Writes the final text from notes.")
    coordinator = LlmAgent(
        name="coordinator",
        model=MODEL,
        instruction="You are the coordinator. Ask the researcher tool for facts, then transfer to the writer.",
        tools=[AgentTool(agent=researcher)],
        sub_agents=[writer],
    )
    runner = InMemoryRunner(agent=coordinator, app_name="remote-team")
    session = await runner.session_service.create_session(app_name="remote-team", user_id="user")
    message = types.Content(role="user", parts=[types.Part(text="Who made sparse attention practical, and when?")])
    final = ""
    async for event in runner.run_async(user_id="user", session_id=session.id, new_message=message):
        if event.content and event.content.parts:
            text = "".join(p.text or "" for p in event.content.parts)
            if text:
                final = f"{event.author}: {text}"
    return final


def main() -> None:
    os.environ["OTEL_SERVICE_NAME"] = "coordinator-app"
    maybe_set_otel_providers()
    procs = []
    try:
        researcher, r_url = start("researcher")
        procs.append(("researcher", researcher))
        writer, w_url = start("writer")
        procs.append(("writer", writer))
        answer = asyncio.run(run(r_url, w_url))
        if not answer.startswith("writer:") or "Longformer" not in answer:
            raise SystemExit(f"unexpected answer: {answer!r}")
    finally:
        trace.get_tracer_provider().shutdown()
        for role, proc in procs:
            stop(proc, role)


if __name__ == "__main__":
    main()

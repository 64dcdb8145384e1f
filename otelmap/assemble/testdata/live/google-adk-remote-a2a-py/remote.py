"""One remote ADK agent, in a process of its own, served over A2A with ADK's
to_a2a (google.adk.a2a.utils.agent_to_a2a):

  python remote.py ROLE          (ROLE researcher or writer; OTEL_SERVICE_NAME names the process)

An LlmAgent on Gemini (the fake model, through GOOGLE_GEMINI_BASE_URL),
turned into a Starlette app by to_a2a (its agent card built from the agent,
its A2aAgentExecutor running the agent in a Runner), under uvicorn on
127.0.0.1 with a free port; prints {ROLE: BASE_URL} once bound. Telemetry is
ADK's own: maybe_set_otel_providers() (google.adk.telemetry.setup) sets a
TracerProvider with a BatchSpanProcessor(OTLPSpanExporter()) from the
OTEL_EXPORTER_OTLP_* variables, the resource from OTEL_SERVICE_NAME; ADK's
spans and the a2a-sdk's own (a2a.utils.telemetry) go through it. SIGTERM
stops the server; the provider's last batch is exported before exit.
"""

import asyncio
import json
import signal
import socket
import sys
import warnings

import uvicorn
from google.adk.a2a.utils.agent_to_a2a import to_a2a
from google.adk.agents import LlmAgent
from google.adk.telemetry.setup import maybe_set_otel_providers
from opentelemetry import trace

# ADK marks its A2A support experimental and warns on every use; the warnings
# say nothing about the run.
warnings.filterwarnings("ignore", message=r"\[EXPERIMENTAL\]")

MODEL = "gemini-2.5-flash"
AGENTS = {
    "researcher": ("Finds facts about a research topic.", "You are the researcher. Answer with facts and sources."),
    "writer": ("Writes the final text from notes.", "You are the writer. Turn the notes into two clear sentences."),
}


async def main() -> None:
    role = sys.argv[1]
    description, instruction = AGENTS[role]
    maybe_set_otel_providers()
    agent = LlmAgent(name=role, model=MODEL, description=description, instruction=instruction)
    sock = socket.create_server(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = to_a2a(agent, host="127.0.0.1", port=port)
    print(json.dumps({role: f"http://127.0.0.1:{port}"}), flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    # uvicorn raises SIGTERM again after its graceful stop, under the handler
    # it found: this one, so the finally below exports the last batch.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        await server.serve(sockets=[sock])
    finally:
        trace.get_tracer_provider().shutdown()


if __name__ == "__main__":
    asyncio.run(main())

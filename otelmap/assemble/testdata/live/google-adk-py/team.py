"""Google ADK (Python): a coordinator with an AgentTool and two sub-agents
reached by transfer_to_agent.

  coordinator (root LlmAgent)
    tools:      AgentTool(summarizer)  -> a child Runner runs the summarizer
    sub_agents: [researcher, writer]   -> transfer_to_agent hands over
  the researcher calls its function tool lookup_paper, then transfers to its
  peer, the writer, which answers.

Telemetry: ADK's own route, google.adk.telemetry.setup.maybe_set_otel_providers()
(what `adk web` and `adk api_server` call): with OTEL_EXPORTER_OTLP_ENDPOINT set
it registers a global TracerProvider with a BatchSpanProcessor around the
OTLP/HTTP protobuf exporter (and OTLP metric and log exporters), the resource
from OTELResourceDetector (OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES, unset
here). ADK's Gemini model builds a google-genai Client, which reads
GOOGLE_GEMINI_BASE_URL (google/genai/_base_url.py): the fake model's Gemini API.
"""

import asyncio

from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from google.adk.telemetry.setup import maybe_set_otel_providers
from google.adk.tools.agent_tool import AgentTool
from google.genai import types
from opentelemetry import trace

MODEL = "gemini-2.5-flash"


def lookup_paper(topic: str) -> dict:
    """Looks up the key paper on a topic."""
    return {"paper": "Longformer (2020)", "topic": topic}


async def run() -> None:
    summarizer = LlmAgent(
        name="summarizer",
        model=MODEL,
        description="Summarizes a topic in two sentences.",
        instruction="You are the summarizer. Summarize the topic you are given in two sentences.",
    )
    researcher = LlmAgent(
        name="researcher",
        model=MODEL,
        description="Finds the key paper on a topic.",
        instruction="You are the researcher. Find the key paper with lookup_paper, then transfer to the writer.",
        tools=[lookup_paper],
    )
    writer = LlmAgent(
        name="writer",
        model=MODEL,
        description="Writes the final answer.",
        instruction="You are the writer. Write the final answer from the summary and the paper.",
    )
    coordinator = LlmAgent(
        name="coordinator",
        model=MODEL,
        description="Coordinates the team.",
        instruction="You are the coordinator. Get a summary from the summarizer tool, then transfer to the researcher.",
        tools=[AgentTool(agent=summarizer)],
        sub_agents=[researcher, writer],
    )
    runner = InMemoryRunner(agent=coordinator, app_name="adk-team")
    session = await runner.session_service.create_session(app_name="adk-team", user_id="user")
    authors = []
    final = ""
    async for event in runner.run_async(
        user_id="user",
        session_id=session.id,
        new_message=types.Content(role="user", parts=[types.Part(text="Explain sparse attention and name the key paper.")]),
    ):
        authors.append(event.author)
        if event.is_final_response() and event.content and event.content.parts:
            final = "".join(p.text or "" for p in event.content.parts)
    await runner.close()
    if "Longformer" not in final or authors[-1] != "writer":
        raise SystemExit(f"unexpected end: authors {authors}, answer {final!r}")


def main() -> None:
    maybe_set_otel_providers()
    asyncio.run(run())
    trace.get_tracer_provider().shutdown()


if __name__ == "__main__":
    main()

"""CrewAI hierarchical crew, traced by OpenInference.

A crew with Process.hierarchical: CrewAI makes its own manager agent ("Crew
Manager", on manager_llm) and gives it the delegation tools "Delegate work
to coworker" and "Ask question to coworker"; the manager delegates the
research to the Researcher (who searches with a tool of its own) and the
writing to the Writer, then gives the final answer. Models are CrewAI's
native OpenAI provider (Chat Completions), which reaches the fake model
through OPENAI_BASE_URL.

Traced as OpenInference's CrewAI README shows: a TracerProvider with a
BatchSpanProcessor and the OTLP/HTTP exporter (protobuf, from the standard
OTEL_EXPORTER_OTLP_* variables) and CrewAIInstrumentor().instrument().
CrewAI's own anonymous telemetry (to its servers, unreachable here) is
turned off with its documented CREWAI_DISABLE_TELEMETRY.
"""

import os

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

from crewai import Agent, Crew, Process, Task  # noqa: E402
from crewai.tools import tool  # noqa: E402
from openinference.instrumentation.crewai import CrewAIInstrumentor  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: E402


@tool("search_web")
def search_web(query: str) -> str:
    """Search the web for facts."""
    return f"results for {query}: solar panel prices fell 90% since 2010"


def main() -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "crewai-hierarchical-team"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    CrewAIInstrumentor().instrument(tracer_provider=provider)

    researcher = Agent(
        role="Researcher",
        goal="Find facts about the topic with search_web",
        backstory="You are the team's researcher.",
        tools=[search_web],
        llm="gpt-4o-mini",
        allow_delegation=False,
    )
    writer = Agent(
        role="Writer",
        goal="Write short reports from the researcher's facts",
        backstory="You are the team's writer.",
        llm="gpt-4o-mini",
        allow_delegation=False,
    )
    report = Task(
        description="Write a short report on solar panel prices: have the facts researched first, then have the report written.",
        expected_output="A two-sentence report.",
    )
    crew = Crew(agents=[researcher, writer], tasks=[report], process=Process.hierarchical, manager_llm="gpt-4o")
    result = crew.kickoff()
    if "cheaper" not in str(result.raw):
        raise SystemExit(f"unexpected answer: {result.raw}")
    provider.shutdown()


if __name__ == "__main__":
    main()

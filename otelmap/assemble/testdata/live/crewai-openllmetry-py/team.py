"""CrewAI crew with delegation, traced by OpenLLMetry (traceloop-sdk).

A sequential crew of three: the Editor owns the one task and may delegate
(allow_delegation=True, so CrewAI gives it the "Delegate work to coworker"
and "Ask question to coworker" tools); it delegates the research to the
Researcher (who searches with a tool of its own) and the writing to the
Writer, then answers. Models are CrewAI's native OpenAI provider (Chat
Completions), which reaches the fake model through OPENAI_BASE_URL.

Traced as OpenLLMetry documents for any OpenTelemetry backend:
Traceloop.init() first, with TRACELOOP_BASE_URL set to the collector
(here the OTLP endpoint the harness gives) and its own telemetry off
(TRACELOOP_TELEMETRY=false); it installs every instrumentation it finds
(crewai, openai, ...) on a global TracerProvider with the OTLP/HTTP
(protobuf) exporter. The program shuts that provider down at the end.
"""

import os

os.environ.setdefault("TRACELOOP_BASE_URL", os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", ""))
os.environ.setdefault("TRACELOOP_TELEMETRY", "false")

from traceloop.sdk import Traceloop  # noqa: E402

Traceloop.init(app_name="crewai-delegation-team")

from crewai import Agent, Crew, Process, Task  # noqa: E402
from crewai.tools import tool  # noqa: E402
from opentelemetry import trace  # noqa: E402


@tool("search_web")
def search_web(query: str) -> str:
    """Search the web for facts."""
    return f"results for {query}: solar panel prices fell 90% since 2010"


def main() -> None:
    editor = Agent(
        role="Editor",
        goal="Deliver short reports by delegating research and writing to your coworkers",
        backstory="You are the team's editor.",
        llm="gpt-4o",
        allow_delegation=True,
    )
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
        agent=editor,
    )
    crew = Crew(agents=[editor, researcher, writer], tasks=[report], process=Process.sequential)
    result = crew.kickoff()
    if "cheaper" not in str(result.raw):
        raise SystemExit(f"unexpected answer: {result.raw}")
    trace.get_tracer_provider().shutdown()


if __name__ == "__main__":
    main()

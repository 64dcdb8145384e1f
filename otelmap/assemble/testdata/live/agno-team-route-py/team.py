"""Agno: a Team in route mode (the router pattern): the team leader picks one
member per request with its delegate_task_to_member tool and the member's
answer is the team's (respond_directly). The team is asked twice in one
session: a question it routes to the researcher (an Agent with a search_web
tool), then a writing request it routes to the writer.

Traced with OpenInference as its README shows: a TracerProvider with a
BatchSpanProcessor and the OTLP/HTTP exporter (protobuf, from the standard
OTEL_EXPORTER_OTLP_* variables) and AgnoInstrumentor().instrument(). Agno's
OpenAIChat model reaches the fake model through OPENAI_BASE_URL. Agno's own
usage telemetry (a call home to its API) is turned off (telemetry=False): the
machine has no internet.
"""

from agno.agent import Agent
from agno.models.openai import OpenAIChat
from agno.team import Team
from agno.team.mode import TeamMode
from openinference.instrumentation.agno import AgnoInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor


def search_web(query: str) -> str:
    """Search the web.

    Args:
        query: what to search for.
    """
    return f"results for {query}: prices fell 90%"


def main() -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "agno-team"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    AgnoInstrumentor().instrument(tracer_provider=provider)

    researcher = Agent(
        name="researcher",
        role="Finds facts on the web",
        model=OpenAIChat(id="gpt-4o-mini"),
        tools=[search_web],
        instructions="ROLE researcher: find facts with search_web and report them.",
        telemetry=False,
    )
    writer = Agent(
        name="writer",
        role="Writes short reports",
        model=OpenAIChat(id="gpt-4o-mini"),
        instructions="ROLE writer: turn the findings into a short report.",
        telemetry=False,
    )
    team = Team(
        name="report_team",
        mode=TeamMode.route,
        model=OpenAIChat(id="gpt-4o-mini"),
        members=[researcher, writer],
        instructions="ROLE leader: route each request to the member who can answer it.",
        telemetry=False,
    )
    found = team.run("How did solar panel prices change?", session_id="route-session")
    if "fell 90%" not in str(found.content):
        raise SystemExit(f"unexpected findings: {found.content}")
    report = team.run("Write a short report from those findings.", session_id="route-session")
    if "cheaper" not in str(report.content):
        raise SystemExit(f"unexpected report: {report.content}")
    provider.shutdown()


if __name__ == "__main__":
    main()

"""Agno: a Team in coordinate mode (the default supervisor pattern). The team
leader delegates with its delegate_task_to_member tool: first to the
researcher (an Agent with a search_web tool), then to the writer; then it
answers from the writer's report.

The same team as ../agno-team-py, traced by OpenLIT instead of OpenInference,
as OpenLIT's quick start shows: openlit.init(otlp_endpoint=...) before the
team is built. OpenLIT makes the global TracerProvider (BatchSpanProcessor,
OTLP/HTTP protobuf exporter) and instruments every library it knows that is
installed (here Agno and the OpenAI client). Agno's
OpenAIChat model reaches the fake model through OPENAI_BASE_URL. Agno's own
usage telemetry (a call home to its API) is turned off (telemetry=False): the
machine has no internet.
"""

import os

from agno.agent import Agent
from agno.models.openai import OpenAIChat
from agno.team import Team
from agno.team.mode import TeamMode
import openlit
from opentelemetry import trace


def search_web(query: str) -> str:
    """Search the web.

    Args:
        query: what to search for.
    """
    return f"results for {query}: prices fell 90%"


def main() -> None:
    openlit.init(otlp_endpoint=os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"], application_name="agno-team")

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
        mode=TeamMode.coordinate,
        model=OpenAIChat(id="gpt-4o-mini"),
        members=[researcher, writer],
        instructions="ROLE leader: get findings from the researcher, then a report from the writer, then answer.",
        telemetry=False,
    )
    result = team.run("Write a short report on solar panel prices.")
    if "cheaper" not in str(result.content):
        raise SystemExit(f"unexpected answer: {result.content}")
    trace.get_tracer_provider().shutdown()


if __name__ == "__main__":
    main()

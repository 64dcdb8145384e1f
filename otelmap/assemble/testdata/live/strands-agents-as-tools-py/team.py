"""Strands Agents (Python): agents as tools. An orchestrator's tools are the
researcher and the writer, wrapped with Agent.as_tool(); the orchestrator asks
the researcher (which calls its own search_web tool), then the writer, then
answers.

Traced by Strands' own OpenTelemetry, as its observability docs show:
StrandsTelemetry().setup_otlp_exporter() makes a global TracerProvider with a
BatchSpanProcessor around the OTLP/HTTP exporter (protobuf, from
OTEL_EXPORTER_OTLP_ENDPOINT). Strands' OpenAIModel builds an OpenAI client,
which reaches the fake model through OPENAI_BASE_URL.
"""

from opentelemetry import trace
from strands import Agent, tool
from strands.models.openai import OpenAIModel
from strands.telemetry import StrandsTelemetry


@tool
def search_web(query: str) -> str:
    """Search the web.

    Args:
        query: what to search for.
    """
    return f"results for {query}: prices fell 90%"


def main() -> None:
    StrandsTelemetry().setup_otlp_exporter()

    def model() -> OpenAIModel:
        return OpenAIModel(model_id="gpt-4o-mini")

    researcher = Agent(
        name="researcher",
        description="Finds facts on the web.",
        model=model(),
        system_prompt="You are the researcher. Find facts with search_web and report them.",
        tools=[search_web],
        callback_handler=None,
    )
    writer = Agent(
        name="writer",
        description="Writes short reports from findings.",
        model=model(),
        system_prompt="You are the writer. Turn the findings into a short report.",
        callback_handler=None,
    )
    orchestrator = Agent(
        name="orchestrator",
        model=model(),
        system_prompt="You are the orchestrator. Ask the researcher for findings, then the writer for a report, then answer.",
        tools=[researcher.as_tool(), writer.as_tool()],
        callback_handler=None,
    )
    result = orchestrator("Write a short report on solar panel prices.")
    if "cheaper" not in str(result):
        raise SystemExit(f"unexpected answer: {result}")
    trace.get_tracer_provider().shutdown()


if __name__ == "__main__":
    main()

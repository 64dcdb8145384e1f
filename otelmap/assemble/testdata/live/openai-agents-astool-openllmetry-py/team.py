"""OpenAI Agents SDK (Python): an orchestrator calls a researcher and a
writer as tools (Agent.as_tool, the SDK's agents-as-tools pattern); the
researcher searches with its own function tool.

Traced with OpenLLMetry's OpenTelemetry processor for the SDK,
opentelemetry-instrumentation-openai-agents (the most downloaded of the
OpenTelemetry processor packages for it, beside OpenInference's), as its
README shows: a TracerProvider with a BatchSpanProcessor and the OTLP/HTTP
exporter (protobuf, from the standard OTEL_EXPORTER_OTLP_* variables), and
OpenAIAgentsInstrumentor(replace_existing_processors=True).instrument(),
its documented option to drop the SDK's built-in processor, which would
otherwise post the same trace to OpenAI's trace API (unreachable here).
The SDK's client reaches the fake model through OPENAI_BASE_URL.
"""

from agents import Agent, Runner, function_tool
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

ORCHESTRATOR = "You are the orchestrator. Use your specialists' tools, then answer."
RESEARCHER = "You are the researcher. Find facts with search_web."
WRITER = "You are the writer. Turn notes into a short report."


@function_tool
def search_web(query: str) -> str:
    """Search the web."""
    return f"results for {query}: prices fell 90%"


def main() -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "openai-agents-team"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    OpenAIAgentsInstrumentor(replace_existing_processors=True).instrument(tracer_provider=provider)

    researcher = Agent(name="researcher", model="gpt-4o-mini", instructions=RESEARCHER, tools=[search_web])
    writer = Agent(name="writer", model="gpt-4o-mini", instructions=WRITER)
    orchestrator = Agent(
        name="orchestrator",
        model="gpt-4o-mini",
        instructions=ORCHESTRATOR,
        tools=[
            researcher.as_tool(tool_name="research", tool_description="Research a topic"),
            writer.as_tool(tool_name="write", tool_description="Write the report from notes"),
        ],
    )

    result = Runner.run_sync(orchestrator, "Write a short report on solar panel prices.")
    if "cheaper" not in str(result.final_output):
        raise SystemExit(f"unexpected answer: {result.final_output}")
    provider.shutdown()


if __name__ == "__main__":
    main()

"""OpenAI Agents SDK (Python): triage hands off to a researcher, which
searches (a function tool) and hands off to a writer, which answers.

Traced with OpenInference as its README shows: a TracerProvider with a
BatchSpanProcessor and the OTLP/HTTP exporter (protobuf, from the standard
OTEL_EXPORTER_OTLP_* variables), and OpenAIAgentsInstrumentor().instrument(),
which makes its processor the SDK's only trace processor. The SDK's client
reaches the fake model through OPENAI_BASE_URL, as any user's would.
"""

from agents import Agent, Runner, function_tool
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

TRIAGE = "You are triage. Route the request to the right specialist."
RESEARCHER = "You are the researcher. Find facts with search_web, then hand off to the writer."
WRITER = "You are the writer. Turn the findings into a short report."


@function_tool
def search_web(query: str) -> str:
    """Search the web."""
    return f"results for {query}: prices fell 90%"


def main() -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "openai-agents-team"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)

    writer = Agent(name="writer", model="gpt-4o-mini", instructions=WRITER)
    researcher = Agent(name="researcher", model="gpt-4o-mini", instructions=RESEARCHER, tools=[search_web], handoffs=[writer])
    triage = Agent(name="triage", model="gpt-4o-mini", instructions=TRIAGE, handoffs=[researcher])

    result = Runner.run_sync(triage, "Write a short report on solar panel prices.")
    if "cheaper" not in str(result.final_output):
        raise SystemExit(f"unexpected answer: {result.final_output}")
    if result.last_agent.name != "writer":
        raise SystemExit(f"last agent {result.last_agent.name}, want writer")
    provider.shutdown()


if __name__ == "__main__":
    main()

"""smolagents: a manager CodeAgent with two managed agents, as smolagents'
multi-agent guide builds it. The manager writes Python that calls the
researcher (a ToolCallingAgent with a search_web tool) and then the writer (a
ToolCallingAgent without tools), and returns the writer's report with
final_answer.

Traced with OpenInference as its README shows: a TracerProvider with a
BatchSpanProcessor and the OTLP/HTTP exporter (protobuf, from the standard
OTEL_EXPORTER_OTLP_* variables) and SmolagentsInstrumentor().instrument().
The OpenAI client (OpenAIModel) reaches the fake model through OPENAI_BASE_URL.
"""

from openinference.instrumentation.smolagents import SmolagentsInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from smolagents import CodeAgent, OpenAIModel, ToolCallingAgent, tool


@tool
def search_web(query: str) -> str:
    """Search the web.

    Args:
        query: what to search for.
    """
    return f"results for {query}: prices fell 90%"


def main() -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "smolagents-team"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    SmolagentsInstrumentor().instrument(tracer_provider=provider)

    model = OpenAIModel(model_id="gpt-4o-mini")
    researcher = ToolCallingAgent(
        tools=[search_web],
        model=model,
        name="researcher",
        description="Finds facts on the web. Give it a question as the task.",
        instructions="ROLE: researcher. Find facts with search_web, then give them as your final answer.",
        max_steps=4,
    )
    writer = ToolCallingAgent(
        tools=[],
        model=model,
        name="writer",
        description="Writes a short report from findings. Give it the findings as the task.",
        instructions="ROLE: writer. Write a short report from the findings as your final answer.",
        max_steps=3,
    )
    manager = CodeAgent(
        tools=[],
        model=model,
        managed_agents=[researcher, writer],
        instructions="ROLE: manager. Ask the researcher for findings, then the writer for the report.",
        max_steps=4,
    )
    answer = manager.run("Write a short report on solar panel prices.")
    if "cheaper" not in str(answer):
        raise SystemExit(f"unexpected answer: {answer}")
    provider.shutdown()


if __name__ == "__main__":
    main()

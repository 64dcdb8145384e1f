"""smolagents: a manager CodeAgent with two managed agents, as smolagents'
multi-agent guide builds it. The manager writes Python that calls the
researcher (a ToolCallingAgent with a search_web tool) and then the writer (a
ToolCallingAgent without tools), and returns the writer's report with
final_answer.

The same team as ../smolagents-managed-py, traced by OpenLIT instead of
OpenInference, as OpenLIT's quick start shows: openlit.init(otlp_endpoint=...)
before the team is built. OpenLIT makes the global TracerProvider
(BatchSpanProcessor, OTLP/HTTP protobuf exporter) and instruments every
library it knows that is installed (here smolagents and the OpenAI client).
The OpenAI client (OpenAIModel) reaches the fake model through OPENAI_BASE_URL.
"""

import os

import openlit
from opentelemetry import trace
from smolagents import CodeAgent, OpenAIModel, ToolCallingAgent, tool


@tool
def search_web(query: str) -> str:
    """Search the web.

    Args:
        query: what to search for.
    """
    return f"results for {query}: prices fell 90%"


def main() -> None:
    openlit.init(otlp_endpoint=os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"], application_name="smolagents-team")

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
    trace.get_tracer_provider().shutdown()


if __name__ == "__main__":
    main()

"""Strands Agents (Python): a Graph of a coordinator, a researcher and a
writer, built with GraphBuilder as a chain: coordinator -> researcher ->
writer. Each node runs when the node before it has finished, with the task
and the earlier nodes' results as its input; the researcher calls its own
search_web tool.

Traced by Strands' own OpenTelemetry: StrandsTelemetry().setup_otlp_exporter()
(global TracerProvider, BatchSpanProcessor, OTLP/HTTP protobuf from
OTEL_EXPORTER_OTLP_ENDPOINT). Strands' OpenAIModel reaches the fake model
through OPENAI_BASE_URL.
"""

from opentelemetry import trace
from strands import Agent, tool
from strands.models.openai import OpenAIModel
from strands.multiagent import GraphBuilder
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

    def agent(name: str, prompt: str, tools: list) -> Agent:
        return Agent(name=name, model=OpenAIModel(model_id="gpt-4o-mini"), system_prompt=prompt, tools=tools, callback_handler=None)

    coordinator = agent("coordinator", "You are the coordinator. Plan the research for the team.", [])
    researcher = agent("researcher", "You are the researcher. Find facts with search_web and report them.", [search_web])
    writer = agent("writer", "You are the writer. Turn the findings into a short report.", [])
    builder = GraphBuilder()
    builder.add_node(coordinator, "coordinator")
    builder.add_node(researcher, "researcher")
    builder.add_node(writer, "writer")
    builder.add_edge("coordinator", "researcher")
    builder.add_edge("researcher", "writer")
    builder.set_entry_point("coordinator")
    graph = builder.build()
    result = graph("Write a short report on solar panel prices.")
    order = [node.node_id for node in result.execution_order]
    if order != ["coordinator", "researcher", "writer"]:
        raise SystemExit(f"execution order {order} ({result.status})")
    if "cheaper" not in str(result.results["writer"].result):
        raise SystemExit(f"unexpected answer: {result.results['writer'].result}")
    trace.get_tracer_provider().shutdown()


if __name__ == "__main__":
    main()

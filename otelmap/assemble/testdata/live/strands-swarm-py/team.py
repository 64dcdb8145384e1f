"""Strands Agents (Python): a Swarm of a coordinator, a researcher and a
writer. Strands gives every swarm member a handoff_to_agent tool; the
coordinator hands off to the researcher, which calls its own search_web tool
and hands off to the writer, which answers (no handoff: the swarm ends).

Traced by Strands' own OpenTelemetry: StrandsTelemetry().setup_otlp_exporter()
(global TracerProvider, BatchSpanProcessor, OTLP/HTTP protobuf from
OTEL_EXPORTER_OTLP_ENDPOINT). Strands' OpenAIModel reaches the fake model
through OPENAI_BASE_URL.
"""

from opentelemetry import trace
from strands import Agent, tool
from strands.models.openai import OpenAIModel
from strands.multiagent import Swarm
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

    coordinator = agent("coordinator", "You are the coordinator. Hand the request to the researcher.", [])
    researcher = agent("researcher", "You are the researcher. Find facts with search_web, then hand off to the writer.", [search_web])
    writer = agent("writer", "You are the writer. Turn the findings into a short report.", [])
    swarm = Swarm([coordinator, researcher, writer], entry_point=coordinator, max_handoffs=6)
    result = swarm("Write a short report on solar panel prices.")
    visited = [node.node_id for node in result.node_history]
    if visited != ["coordinator", "researcher", "writer"]:
        raise SystemExit(f"visited {visited} ({result.status})")
    trace.get_tracer_provider().shutdown()


if __name__ == "__main__":
    main()

"""LangGraph swarm (Python), traced by LangSmith's own OpenTelemetry export.

The team: `coordinator` (the default active agent) hands off to
`researcher`; the researcher searches once and hands back to the
coordinator; the coordinator hands off to `writer`, who answers, which ends
the turn. Every move is a handoff tool (create_handoff_tool,
transfer_to_<agent>) whose Command goes to the parent graph. Agents are
langchain.agents.create_agent graphs, as the langgraph-swarm README builds
them, on ChatOpenAI (Chat Completions), which reaches the fake model through
OPENAI_BASE_URL.

Tracing is LangSmith's documented route to an OpenTelemetry backend other
than LangSmith: LANGSMITH_TRACING, LANGSMITH_OTEL_ENABLED and
LANGSMITH_OTEL_ONLY set (here, before the imports, as a .env would), the
OTLP endpoint from OTEL_EXPORTER_OTLP_ENDPOINT; LangSmith then makes its own
TracerProvider with the OTLP/HTTP (protobuf) exporter and sets it global.
The program waits for LangChain's tracers and shuts that provider down.
"""

import os

os.environ.setdefault("LANGSMITH_TRACING", "true")
os.environ.setdefault("LANGSMITH_OTEL_ENABLED", "true")
os.environ.setdefault("LANGSMITH_OTEL_ONLY", "true")
os.environ.setdefault("LANGSMITH_PROJECT", "langgraph-swarm-team")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.tracers.langchain import wait_for_all_tracers  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph_swarm import create_handoff_tool, create_swarm  # noqa: E402
from opentelemetry import trace  # noqa: E402

COORDINATOR_PROMPT = "You are the coordinator of a report desk. Research goes to researcher, writing goes to writer."
RESEARCHER_PROMPT = "You are the researcher. Search the web, then hand the findings back to the coordinator."
WRITER_PROMPT = "You are the writer. Write the final short report for the user."


def web_search(query: str) -> str:
    """Search the web for information."""
    return f"Search results: about 600 GW of solar were added worldwide in 2024 ({query})."


def main() -> None:
    model = ChatOpenAI(model="gpt-4o")
    coordinator = create_agent(
        model,
        tools=[
            create_handoff_tool(agent_name="researcher", description="Transfer to the researcher for facts"),
            create_handoff_tool(agent_name="writer", description="Transfer to the writer for the final report"),
        ],
        system_prompt=COORDINATOR_PROMPT,
        name="coordinator",
    )
    researcher = create_agent(
        model,
        tools=[web_search, create_handoff_tool(agent_name="coordinator", description="Transfer back to the coordinator")],
        system_prompt=RESEARCHER_PROMPT,
        name="researcher",
    )
    writer = create_agent(model, tools=[], system_prompt=WRITER_PROMPT, name="writer")

    app = create_swarm([coordinator, researcher, writer], default_active_agent="coordinator").compile(checkpointer=InMemorySaver())
    result = app.invoke(
        {"messages": [{"role": "user", "content": "Write me a short report on how much solar was added in 2024."}]},
        {"configurable": {"thread_id": "live-1"}},
    )
    last = result["messages"][-1]
    if not str(last.content).startswith("Report:"):
        raise SystemExit(f"unexpected final answer: {last.content}")
    if result.get("active_agent") != "writer":
        raise SystemExit(f"active agent at the end is {result.get('active_agent')}, want writer")
    wait_for_all_tracers()
    trace.get_tracer_provider().shutdown()


if __name__ == "__main__":
    main()

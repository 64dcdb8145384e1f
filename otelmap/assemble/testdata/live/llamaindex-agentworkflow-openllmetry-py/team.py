"""LlamaIndex AgentWorkflow (Python): three FunctionAgents that hand off, through OpenLLMetry.

The multi-agent team of LlamaIndex's AgentWorkflow guide, made small:
ResearchAgent (the root agent) searches with its own tool and hands off to
WriteAgent, which hands off to ReviewAgent, which answers. Handoffs are the
workflow's own `handoff` tool (can_handoff_to). Models are
llama-index-llms-openai's OpenAI (Chat Completions, streamed), which
reaches the fake model through OPENAI_API_BASE.

The team of ../llamaindex-agentworkflow-py, traced as OpenLLMetry documents
for any OpenTelemetry backend (as ../crewai-openllmetry-py): Traceloop.init()
first, with TRACELOOP_BASE_URL set to the collector (the OTLP endpoint the
harness gives) and its own telemetry off (TRACELOOP_TELEMETRY=false); it
installs every instrumentation it finds (openai, ...) on a global
TracerProvider with the OTLP/HTTP (protobuf) exporter, and
LlamaIndexInstrumentor().instrument() (see below). The program
shuts that provider down at the end.
"""

import asyncio
import os

os.environ.setdefault("TRACELOOP_BASE_URL", os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", ""))
os.environ.setdefault("TRACELOOP_TELEMETRY", "false")

from traceloop.sdk import Traceloop  # noqa: E402

Traceloop.init(app_name="llamaindex-agentworkflow-team")

# traceloop-sdk 0.62.4 instruments LlamaIndex only when the distribution
# "llama-index" (the meta package) is installed (traceloop/sdk/tracing/
# tracing.py, init_llama_index_instrumentor); with llama-index-core alone it
# records the OpenAI calls only, four lone traces. So the instrumentation
# is installed as its own README shows.
from opentelemetry.instrumentation.llamaindex import LlamaIndexInstrumentor  # noqa: E402

LlamaIndexInstrumentor().instrument()

from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent  # noqa: E402
from llama_index.llms.openai import OpenAI  # noqa: E402
from opentelemetry import trace  # noqa: E402

RESEARCH = "You are the ResearchAgent. Search the web for facts, then hand off to the WriteAgent."
WRITE = "You are the WriteAgent. Write a short report from the research, then hand off to the ReviewAgent."
REVIEW = "You are the ReviewAgent. Review the report and give the final answer."


async def search_web(query: str) -> str:
    """Search the web for facts about the query."""
    return f"results for {query}: solar panel prices fell 90% since 2010"


async def run() -> str:
    llm = OpenAI(model="gpt-4o-mini")
    research = FunctionAgent(
        name="ResearchAgent",
        description="Searches the web for facts.",
        system_prompt=RESEARCH,
        llm=llm,
        tools=[search_web],
        can_handoff_to=["WriteAgent"],
    )
    write = FunctionAgent(
        name="WriteAgent",
        description="Writes a short report.",
        system_prompt=WRITE,
        llm=llm,
        tools=[],
        can_handoff_to=["ReviewAgent"],
    )
    review = FunctionAgent(
        name="ReviewAgent",
        description="Reviews the report and answers.",
        system_prompt=REVIEW,
        llm=llm,
        tools=[],
        can_handoff_to=[],
    )
    workflow = AgentWorkflow(agents=[research, write, review], root_agent="ResearchAgent")
    response = await workflow.run(user_msg="Write a short report on solar panel prices.")
    return str(response)


def main() -> None:
    answer = asyncio.run(run())
    if "cheaper" not in answer:
        raise SystemExit(f"unexpected answer: {answer}")
    trace.get_tracer_provider().shutdown()


if __name__ == "__main__":
    main()

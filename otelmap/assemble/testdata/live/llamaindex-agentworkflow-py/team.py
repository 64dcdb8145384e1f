"""LlamaIndex AgentWorkflow (Python): three FunctionAgents that hand off.

The multi-agent team of LlamaIndex's AgentWorkflow guide, made small:
ResearchAgent (the root agent) searches with its own tool and hands off to
WriteAgent, which hands off to ReviewAgent, which answers. Handoffs are the
workflow's own `handoff` tool (can_handoff_to). Models are
llama-index-llms-openai's OpenAI (Chat Completions, streamed), which
reaches the fake model through OPENAI_API_BASE.

Traced as OpenInference's LlamaIndex README shows: a TracerProvider with a
BatchSpanProcessor and the OTLP/HTTP exporter (protobuf, from the standard
OTEL_EXPORTER_OTLP_* variables) and LlamaIndexInstrumentor().instrument().
"""

import asyncio

from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent
from llama_index.llms.openai import OpenAI
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

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
    provider = TracerProvider(resource=Resource.create({"service.name": "llamaindex-agentworkflow-team"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    LlamaIndexInstrumentor().instrument(tracer_provider=provider)

    answer = asyncio.run(run())
    if "cheaper" not in answer:
        raise SystemExit(f"unexpected answer: {answer}")
    provider.shutdown()


if __name__ == "__main__":
    main()

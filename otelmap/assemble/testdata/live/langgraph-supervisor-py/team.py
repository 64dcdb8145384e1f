"""LangGraph supervisor (Python): the langgraph-supervisor README's team.

`supervisor` hands off to `research_expert` (one web_search, then an
answer); control returns to the supervisor by the graph's static edge; the
supervisor hands off to `math_expert` (one add, then an answer); control
returns; the supervisor answers. The workers are prebuilt ReAct agents
(langgraph.prebuilt.create_react_agent, what create_supervisor's README
uses) on ChatOpenAI (Chat Completions), which reaches the fake model
through OPENAI_BASE_URL.

Traced with OpenInference as its README shows: a TracerProvider with a
BatchSpanProcessor and the OTLP/HTTP exporter (protobuf, from the standard
OTEL_EXPORTER_OTLP_* variables) and LangChainInstrumentor().instrument().

`team.py langfuse` (the `langfuse` variant, captures-langfuse/) traces the
same team through Langfuse's Python SDK instead, as Langfuse's LangGraph
guide does: a Langfuse client and its LangChain CallbackHandler passed in
the invoke's callbacks. The client is given the TracerProvider and the
OTLP/HTTP exporter (its documented tracer_provider and span_exporter
options), since there is no Langfuse server here; its keys are
placeholders, never sent anywhere.
"""

import sys

from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent
from langgraph_supervisor import create_supervisor
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

SUPERVISOR_PROMPT = (
    "You are a team supervisor managing a research expert and a math expert. "
    "For current events, use research_expert. For math problems, use math_expert."
)
RESEARCH_PROMPT = "You are a world class researcher with access to web search. Do not do any math."
MATH_PROMPT = "You are a math expert. Always use one tool at a time."


def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


def web_search(query: str) -> str:
    """Search the web for information."""
    return (
        "Here are the headcounts for each of the FAANG companies in 2024:\n"
        "1. Facebook (Meta): 67,317 employees.\n2. Apple: 164,000 employees.\n3. Amazon: 1,551,000 employees.\n"
        "4. Netflix: 14,000 employees.\n5. Google (Alphabet): 181,269 employees."
    )


def main() -> None:
    route = sys.argv[1] if len(sys.argv) > 1 else "openinference"
    provider = TracerProvider(resource=Resource.create({"service.name": "langgraph-supervisor-team"}))
    config = {}
    if route == "langfuse":
        from langfuse import Langfuse
        from langfuse.langchain import CallbackHandler

        langfuse = Langfuse(
            public_key="pk-lf-live-corpus",
            secret_key="sk-lf-live-corpus",
            base_url="http://127.0.0.1:9",
            tracer_provider=provider,
            span_exporter=OTLPSpanExporter(),
        )
        config = {"callbacks": [CallbackHandler()]}
    elif route == "openinference":
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        LangChainInstrumentor().instrument(tracer_provider=provider)
    else:
        raise SystemExit(f"unknown route {route}")

    model = ChatOpenAI(model="gpt-4o")
    math_agent = create_react_agent(model=model, tools=[add], name="math_expert", prompt=MATH_PROMPT)
    research_agent = create_react_agent(model=model, tools=[web_search], name="research_expert", prompt=RESEARCH_PROMPT)
    app = create_supervisor([research_agent, math_agent], model=model, prompt=SUPERVISOR_PROMPT).compile()

    result = app.invoke(
        {"messages": [{"role": "user", "content": "what's the combined headcount of the FAANG companies in 2024?"}]},
        config=config,
    )
    answer = result["messages"][-1].content
    if "1,977,586" not in answer:
        raise SystemExit(f"unexpected answer: {answer}")
    if route == "langfuse":
        langfuse.shutdown()
    provider.shutdown()


if __name__ == "__main__":
    main()

"""AutoGen AgentChat (Python): a Swarm of a triage agent, a researcher and a
writer. Each agent hands off with the transfer_to_<agent> tool AutoGen makes
from its `handoffs`; the triage agent hands off to the researcher, which calls
search_web and hands off to the writer, which answers and says TERMINATE.

The team of ../autogen-swarm-py, traced line for line as AutoGen's tracing
guide does it (as ../autogen-selector-guide-py): a global TracerProvider with
a BatchSpanProcessor and the OTLP/HTTP protobuf exporter, OpenAIInstrumentor,
the application's "run_team" span, and the team on a
SingleThreadedAgentRuntime(tracer_provider=trace.NoOpTracerProvider()) (the
guide's "Disable telemetry for runtime"). The OpenAI client reaches the fake
model through OPENAI_BASE_URL.
"""

import asyncio

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.messages import HandoffMessage
from autogen_agentchat.teams import Swarm
from autogen_core import SingleThreadedAgentRuntime
from autogen_ext.models.openai import OpenAIChatCompletionClient
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

TRIAGE = "You are triage. Route the request to the right specialist."
RESEARCHER = "You are the researcher. Find facts with search_web, then hand off to the writer."
WRITER = "You are the writer. Turn the findings into a short report, then say TERMINATE."


async def search_web(query: str) -> str:
    """Search the web."""
    return f"results for {query}: prices fell 90%"


async def run() -> None:
    model = OpenAIChatCompletionClient(model="gpt-4o-mini")
    tracer = trace.get_tracer("autogen-swarm-guide-team")
    with tracer.start_as_current_span("run_team"):
        triage = AssistantAgent("triage", model_client=model, system_message=TRIAGE, handoffs=["researcher"])
        researcher = AssistantAgent(
            "researcher", model_client=model, system_message=RESEARCHER, tools=[search_web], handoffs=["writer"]
        )
        writer = AssistantAgent("writer", model_client=model, system_message=WRITER)
        runtime = SingleThreadedAgentRuntime(tracer_provider=trace.NoOpTracerProvider())  # as the guide: runtime telemetry off
        runtime.start()
        team = Swarm(
            [triage, researcher, writer],
            termination_condition=TextMentionTermination("TERMINATE") | MaxMessageTermination(12),
            runtime=runtime,
        )
        result = await team.run(task="Write a short report on solar panel prices.")
        await runtime.stop_when_idle()
    await model.close()
    handoffs = [(m.source, m.target) for m in result.messages if isinstance(m, HandoffMessage)]
    if handoffs != [("triage", "researcher"), ("researcher", "writer")]:
        raise SystemExit(f"handoffs {handoffs} ({result.stop_reason})")
    if result.messages[-1].source != "writer" or "cheaper" not in result.messages[-1].to_text():
        raise SystemExit(f"unexpected answer: {result.messages[-1]}")


def main() -> None:
    provider = TracerProvider(resource=Resource({"service.name": "autogen-swarm-guide-team"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    OpenAIInstrumentor().instrument()
    asyncio.run(run())
    provider.shutdown()


if __name__ == "__main__":
    main()

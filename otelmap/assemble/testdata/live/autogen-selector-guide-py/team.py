"""AutoGen AgentChat (Python): a SelectorGroupChat of a planner, a researcher
and a writer. The group chat's manager asks the model who speaks next; the
planner plans, the researcher calls its search_web tool and reports, the
writer writes the report and ends the chat with TERMINATE.

The team of ../autogen-selector-py, traced line for line as AutoGen's
tracing guide (AgentChat user guide, "Tracing and Observability") does it: a
TracerProvider with a BatchSpanProcessor and the OTLP exporter (here OTLP/HTTP
protobuf from the standard OTEL_EXPORTER_OTLP_* variables, the guide uses
gRPC), set as the global provider; OpenAIInstrumentor for the model calls;
the team run inside the application's own "run_team" span; and the team on a
SingleThreadedAgentRuntime(tracer_provider=trace.NoOpTracerProvider()), the
guide's "Disable telemetry for runtime": autogen-core's runtime (message)
spans are off, AgentChat's agent and tool spans stay on through the global
provider. The OpenAI client reaches the fake model through OPENAI_BASE_URL.
"""

import asyncio

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.teams import SelectorGroupChat
from autogen_core import SingleThreadedAgentRuntime
from autogen_ext.models.openai import OpenAIChatCompletionClient
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

PLANNER = "You are the planner. Break the task into steps for the researcher and the writer."
RESEARCHER = "You are the researcher. Find facts with search_web and report them."
WRITER = "You are the writer. Turn the findings into a short report, then say TERMINATE."
SELECTOR = """Select the next speaker of this team.

{roles}

Conversation so far:
{history}

Pick one of {participants}. Answer with the name only."""


async def search_web(query: str) -> str:
    """Search the web."""
    return f"results for {query}: prices fell 90%"


async def run() -> None:
    model = OpenAIChatCompletionClient(model="gpt-4o-mini")
    tracer = trace.get_tracer("autogen-selector-guide-team")
    with tracer.start_as_current_span("run_team"):
        planner = AssistantAgent("planner", model_client=model, system_message=PLANNER, description="Plans the work.")
        researcher = AssistantAgent(
            "researcher",
            model_client=model,
            system_message=RESEARCHER,
            tools=[search_web],
            reflect_on_tool_use=True,
            description="Finds facts on the web.",
        )
        writer = AssistantAgent("writer", model_client=model, system_message=WRITER, description="Writes the report.")
        runtime = SingleThreadedAgentRuntime(tracer_provider=trace.NoOpTracerProvider())  # as the guide: runtime telemetry off
        runtime.start()
        team = SelectorGroupChat(
            [planner, researcher, writer],
            model_client=model,
            selector_prompt=SELECTOR,
            termination_condition=TextMentionTermination("TERMINATE") | MaxMessageTermination(12),
            runtime=runtime,
        )
        result = await team.run(task="Write a short report on solar panel prices.")
        await runtime.stop_when_idle()
    await model.close()
    speakers = [m.source for m in result.messages if m.source != "user" and type(m).__name__ == "TextMessage"]
    if speakers != ["planner", "researcher", "writer"]:
        raise SystemExit(f"speakers {speakers}, want planner, researcher, writer ({result.stop_reason})")
    if "cheaper" not in result.messages[-1].to_text():
        raise SystemExit(f"unexpected answer: {result.messages[-1].to_text()}")


def main() -> None:
    provider = TracerProvider(resource=Resource({"service.name": "autogen-selector-guide-team"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    OpenAIInstrumentor().instrument()
    asyncio.run(run())
    provider.shutdown()


if __name__ == "__main__":
    main()

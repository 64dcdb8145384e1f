"""Semantic Kernel agents (Python): a handoff orchestration of three
ChatCompletionAgents.

triage hands off to researcher (SK's handoff plugin function
transfer_to_researcher); the researcher searches with its own plugin
function and hands off to writer; the writer finishes with the plugin's
complete_task. HandoffOrchestration on the InProcessRuntime, as SK's
getting-started sample for handoffs runs it. Models are SK's
OpenAIChatCompletion (Chat Completions), whose AsyncOpenAI client reaches
the fake model through OPENAI_BASE_URL.

Traced by Semantic Kernel's own OpenTelemetry instrumentation, switched on
as its telemetry docs say (SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_
DIAGNOSTICS and ..._SENSITIVE, read when semantic_kernel is imported, so
set first here as a .env would), with the exporter set up as its docs show:
a global TracerProvider with a BatchSpanProcessor and the OTLP exporter
(here the HTTP/protobuf one, from the standard OTEL_EXPORTER_OTLP_*
variables).
"""

import asyncio
import os

os.environ.setdefault("SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS", "true")
os.environ.setdefault("SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE", "true")

from opentelemetry import trace  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: E402
from semantic_kernel.agents import ChatCompletionAgent, HandoffOrchestration, OrchestrationHandoffs  # noqa: E402
from semantic_kernel.agents.runtime import InProcessRuntime  # noqa: E402
from semantic_kernel.connectors.ai.open_ai import OpenAIChatCompletion  # noqa: E402
from semantic_kernel.functions import kernel_function  # noqa: E402

TRIAGE = "You are triage. Route the request to the right specialist."
RESEARCHER = "You are the researcher. Find facts with search_web, then hand off to the writer."
WRITER = "You are the writer. Turn the findings into a short report and complete the task."


class SearchPlugin:
    @kernel_function(description="Search the web.")
    def search_web(self, query: str) -> str:
        return f"results for {query}: prices fell 90%"


async def run() -> str:
    service = OpenAIChatCompletion(ai_model_id="gpt-4o-mini")
    triage = ChatCompletionAgent(name="triage", description="Routes requests.", instructions=TRIAGE, service=service)
    researcher = ChatCompletionAgent(
        name="researcher", description="Finds facts.", instructions=RESEARCHER, service=service, plugins=[SearchPlugin()]
    )
    writer = ChatCompletionAgent(name="writer", description="Writes reports.", instructions=WRITER, service=service)
    handoffs = (
        OrchestrationHandoffs()
        .add(source_agent=triage.name, target_agent=researcher.name, description="Transfer to the researcher for facts")
        .add(source_agent=researcher.name, target_agent=writer.name, description="Transfer to the writer for the report")
    )
    orchestration = HandoffOrchestration(members=[triage, researcher, writer], handoffs=handoffs)
    runtime = InProcessRuntime()
    runtime.start()
    result = await orchestration.invoke(task="Write a short report on solar panel prices.", runtime=runtime)
    value = await result.get(timeout=120)
    await runtime.stop_when_idle()
    return str(value)


def main() -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "semantic-kernel-team"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)

    answer = asyncio.run(run())
    if "cheaper" not in answer:
        raise SystemExit(f"unexpected answer: {answer}")
    provider.shutdown()


if __name__ == "__main__":
    main()

"""PydanticAI: agent delegation, as PydanticAI's multi-agent docs show it. A
coordinator agent's tools run two other agents: `research` runs the
researcher (which calls its own search_web tool) and `write` runs the writer;
each delegate run gets the coordinator's usage (usage=ctx.usage). The
coordinator then answers.

Traced as PydanticAI's docs say for an OpenTelemetry backend other than
Logfire ("Using OpenTelemetry without Logfire"): logfire.configure(
send_to_logfire=False) with OTEL_EXPORTER_OTLP_ENDPOINT set (Logfire's SDK
then exports OTLP/HTTP protobuf there) and logfire.instrument_pydantic_ai().
The OpenAI provider reaches the fake model through OPENAI_BASE_URL.
"""

import asyncio

import logfire
from pydantic_ai import Agent, RunContext

MODEL = "openai:gpt-4o-mini"
COORDINATOR = "You are the coordinator. Get findings with research, then a report with write, then answer."
RESEARCHER = "You are the researcher. Find facts with search_web and report them."
WRITER = "You are the writer. Turn the findings into a short report."

coordinator = Agent(MODEL, name="coordinator", instructions=COORDINATOR)
researcher = Agent(MODEL, name="researcher", instructions=RESEARCHER)
writer = Agent(MODEL, name="writer", instructions=WRITER)


@researcher.tool_plain
def search_web(query: str) -> str:
    """Search the web."""
    return f"results for {query}: prices fell 90%"


@coordinator.tool
async def research(ctx: RunContext[None], topic: str) -> str:
    """Ask the researcher for findings on a topic."""
    result = await researcher.run(f"Research: {topic}", usage=ctx.usage)
    return result.output


@coordinator.tool
async def write(ctx: RunContext[None], findings: str) -> str:
    """Ask the writer for a report from findings."""
    result = await writer.run(f"Write a report from: {findings}", usage=ctx.usage)
    return result.output


async def run() -> None:
    result = await coordinator.run("Write a short report on solar panel prices.")
    if "cheaper" not in result.output:
        raise SystemExit(f"unexpected answer: {result.output}")


def main() -> None:
    logfire.configure(send_to_logfire=False, service_name="pydantic-ai-team", console=False)
    logfire.instrument_pydantic_ai()
    asyncio.run(run())
    logfire.shutdown()


if __name__ == "__main__":
    main()

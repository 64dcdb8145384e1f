"""OpenTelemetry for a Python A2A participant, as docs/python-participants.md
describes it: a TracerProvider named after the agent card, exporting OTLP/HTTP
(protobuf) to OTEL_EXPORTER_OTLP_ENDPOINT (the green agent's receiver,
/v1/traces is added), batched every 200 ms; the Starlette instrumentation,
which makes each incoming request a SERVER span continuing the caller's
traceparent, and the HTTPX instrumentation, which makes each outgoing request
a CLIENT span and sends its traceparent. The a2a-sdk's own spans
(a2a.utils.telemetry, on whenever opentelemetry is installed) go through the
same global provider.
"""

import contextlib

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
from opentelemetry.instrumentation.starlette import StarletteInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind

# GenAI semantic conventions (v1.41): the span of an agent's own work and of
# its calls to other agents.
OPERATION = "gen_ai.operation.name"
AGENT_NAME = "gen_ai.agent.name"


def setup(service_name: str, http: bool = True) -> TracerProvider:
    """Installs the global tracer provider and (http) the HTTPX instrumentation."""
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(), schedule_delay_millis=200))
    trace.set_tracer_provider(provider)
    if http:
        HTTPXClientInstrumentor().instrument()
    return provider


def instrument(app, http: bool = True) -> None:
    """Makes the Starlette app's requests SERVER spans (unless not http)."""
    if http:
        StarletteInstrumentor.instrument_app(app)


@contextlib.contextmanager
def agent_work(name: str):
    """The INTERNAL span of this agent's own work on one request."""
    tracer = trace.get_tracer("coordbench.python-participant")
    with tracer.start_as_current_span(
        f"invoke_agent {name}", kind=SpanKind.INTERNAL, attributes={OPERATION: "invoke_agent", AGENT_NAME: name}
    ) as span:
        yield span


@contextlib.contextmanager
def agent_call(callee: str, host: str, port: int):
    """The CLIENT span of one call to another agent, named by its card."""
    tracer = trace.get_tracer("coordbench.python-participant")
    with tracer.start_as_current_span(
        f"invoke_agent {callee}",
        kind=SpanKind.CLIENT,
        attributes={OPERATION: "invoke_agent", AGENT_NAME: callee, "server.address": host, "server.port": port},
    ) as span:
        yield span

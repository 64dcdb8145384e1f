"""The a2a-sdk-py team (../a2a-sdk-py/team.py and agent.py, line for line)
with no HTTP instrumentation: only the A2A Python SDK's own telemetry
(a2a.utils.telemetry, the [telemetry] extra) makes spans, through
opentelemetry-sdk's TracerProvider and the OTLP/HTTP exporter. This
program's virtual environment has no OpenTelemetry instrumentation package,
so nothing propagates trace context between the agents.
"""

import os
import runpy
import sys

sys.argv = [sys.argv[0], "--bare", *sys.argv[1:]]
runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "a2a-sdk-py", "team.py"), run_name="__main__")

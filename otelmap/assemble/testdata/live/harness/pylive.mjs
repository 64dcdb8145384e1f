// The live-corpus harness for Python programs: the same fake model and
// capture as index.mjs, around a program written in Python.
//
//   cd PROGRAM && node ../harness/pylive.mjs [CAPTURE_PATH] [ARGS...]
//
// PROGRAM holds script.mjs (exports `script`, the fake model's rules, as a
// Node program's team.mjs does), team.py (the team, run as
// `.venv/bin/python team.py ARGS...` with the usual variables pointing every
// client at loopback) and .venv (run.sh makes it from requirements.txt).
// The program must shut its tracer provider down before it exits; a
// non-zero exit fails the run. OpenTelemetry Python's OTLP/HTTP exporter
// sends protobuf, which the capture turns into OTLP/JSON with the otlpjson
// command built here (or the one LIVE_OTLPJSON names).

import { spawn, execFileSync } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { live } from "./index.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const program = process.cwd();
const python = process.env.LIVE_PYTHON ?? join(program, ".venv", "bin", "python");
if (!existsSync(python)) {
  console.error(`pylive: no ${python} (run.sh makes the program's virtual environment from requirements.txt)`);
  process.exit(2);
}
if (!process.env.LIVE_OTLPJSON) {
  const bin = join(mkdtempSync(join(tmpdir(), "otlpjson-")), "otlpjson");
  execFileSync("go", ["build", "-o", bin, "./otlpjson"], { cwd: here, stdio: ["ignore", "inherit", "inherit"] });
  process.env.LIVE_OTLPJSON = bin;
}
const { script } = await import(pathToFileURL(join(program, "script.mjs")).href);

await live({
  script,
  async team({ model, capture, args }) {
    const env = {
      ...process.env,
      // OpenTelemetry Python's exporters speak protobuf (and gRPC); the
      // endpoint variable is the base the HTTP exporter adds /v1/traces to.
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/protobuf",
      OTEL_EXPORTER_OTLP_ENDPOINT: capture.origin,
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: capture.tracesURL,
      // Older clients (LiteLLM, langchain-openai's fallbacks) read these.
      OPENAI_API_BASE: model.openaiBaseURL,
      PYTHONUNBUFFERED: "1",
      PYTHONDONTWRITEBYTECODE: "1",
    };
    const child = spawn(python, ["team.py", ...args], { cwd: program, env, stdio: ["ignore", "inherit", "inherit"] });
    const [code, signal] = await once(child, "exit");
    if (code !== 0) throw new Error(`team.py exited with ${signal ?? code}`);
  },
});

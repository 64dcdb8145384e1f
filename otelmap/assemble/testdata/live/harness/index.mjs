// The live-corpus harness: runs one program's team against the scripted
// fake model with its spans captured on loopback.
//
//   import { live } from "../harness/index.mjs";
//   await live({ script, async team({ model, capture, args }) { ... } });
//
// `node team.mjs [CAPTURE_PATH] [ARGS...]` (or LIVE_CAPTURE=path) writes the
// capture there; without a path the run is checked but nothing is written.
// Before `team` runs, the usual environment variables point every client at
// loopback (OPENAI_BASE_URL, OTEL_EXPORTER_OTLP_*, ...), so a program that
// follows a framework's documented defaults needs no extra wiring. `team`
// must flush its spans (shutdown its tracer provider) before it returns.
// After it returns the harness checks that the model was asked exactly what
// the script expects and that spans arrived, then writes the capture.

import { startFakeModel } from "./fakemodel.mjs";
import { startCapture } from "./capture.mjs";

export { startFakeModel } from "./fakemodel.mjs";
export { startCapture } from "./capture.mjs";

/** The longest a run may take before it is failed (the machine is slow). */
const RUN_TIMEOUT_MS = Number(process.env.LIVE_TIMEOUT_MS ?? 300_000);

/**
 * @param {{ script: any[], team: (ctx: {model: any, capture: any, args: string[]}) => Promise<void> }} program
 */
export async function live(program) {
  const [, , outArg, ...args] = process.argv;
  const out = outArg ?? process.env.LIVE_CAPTURE ?? "";
  const model = await startFakeModel(program.script, { log: (l) => console.error(l) });
  const capture = await startCapture();
  Object.assign(process.env, {
    OPENAI_API_KEY: "sk-fake-live-corpus",
    OPENAI_BASE_URL: model.openaiBaseURL,
    GOOGLE_API_KEY: "fake-live-corpus",
    GEMINI_API_KEY: "fake-live-corpus",
    GOOGLE_GEMINI_BASE_URL: model.geminiBaseURL,
    ANTHROPIC_API_KEY: "fake-live-corpus",
    ANTHROPIC_BASE_URL: model.anthropicBaseURL,
    OTEL_EXPORTER_OTLP_ENDPOINT: capture.origin,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: capture.tracesURL,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json",
  });
  const timer = setTimeout(() => {
    console.error(`live: run took longer than ${RUN_TIMEOUT_MS} ms`);
    process.exit(3);
  }, RUN_TIMEOUT_MS);
  timer.unref();
  let failed = false;
  try {
    await program.team({ model, capture, args });
    model.assertScript();
    if (capture.problems.length) throw new Error(`capture: ${capture.problems.join("; ")}`);
    if (capture.spanCount() === 0) throw new Error("capture: no spans arrived (did the program shut its tracer provider down?)");
    if (out) await capture.write(out);
    console.error(`live: ${model.requests.length} model requests, ${capture.spanCount()} spans in ${capture.requestCount()} exports${out ? ` -> ${out}` : ""}`);
  } catch (err) {
    failed = true;
    console.error(err);
  } finally {
    clearTimeout(timer);
    await model.close();
    await capture.close();
  }
  // Exit explicitly: a framework may leave timers or sockets open.
  process.exit(failed ? 1 : 0);
}

// Drive the acp-progress AG-UI endpoint with the real @ag-ui/client HttpAgent: one prompt, and the
// resumes its interrupts need; report everything the client applied.
//
//   node run_everything.mjs URL THREAD_ID PROMPT [RESUME_PAYLOAD_JSON]
//
// Runs PROMPT with forwardedProps {emitToolProgress: true, permissionInterrupts: true}. While a run finishes with an interrupt
// outcome, the next run resumes every interrupt with RESUME_PAYLOAD_JSON (status "resolved"), or
// cancels them when none is given. Prints one JSON object: per run its event types, outcome, result
// and usage; then the client's shared state, its tool results and the assistant text. Exits 1 with
// {"error"} when the client rejects a stream (its verifier enforces the AG-UI event rules).
import { randomUUID } from "node:crypto";
import { HttpAgent } from "@ag-ui/client";

const [url, threadId, prompt, payloadJson] = process.argv.slice(2);
if (!url || !threadId || !prompt) {
  console.error("usage: node run_everything.mjs URL THREAD_ID PROMPT [RESUME_PAYLOAD_JSON]");
  process.exit(2);
}

const agent = new HttpAgent({ url, threadId });
const runs = [];
const before = new Set();

try {
  agent.addMessage({ id: randomUUID(), role: "user", content: prompt });
  let resume;
  for (let i = 0; i < 5; i++) {
    const seen = { types: [], outcome: null, result: null, usage: null, interrupts: [], resultStatuses: [] };
    await agent.runAgent(
      { forwardedProps: { emitToolProgress: true, permissionInterrupts: true }, ...(resume ? { resume } : {}) },
      {
        onEvent({ event }) {
          seen.types.push(event.type);
          if (event.type === "TOOL_CALL_RESULT") seen.resultStatuses.push(event.metadata?.acpProgress?.status);
        },
        onRunFinishedEvent({ event }) {
          seen.outcome = event.outcome ?? null;
          seen.result = event.result ?? null;
          seen.usage = event.usage ?? null;
        },
      },
    );
    runs.push(seen);
    const outcome = seen.outcome;
    if (!outcome || outcome.type !== "interrupt") break;
    seen.interrupts = outcome.interrupts;
    resume = outcome.interrupts.map((interrupt) =>
      payloadJson
        ? { interruptId: interrupt.id, status: "resolved", payload: JSON.parse(payloadJson) }
        : { interruptId: interrupt.id, status: "cancelled" },
    );
  }
  const fresh = agent.messages.filter((m) => !before.has(m.id));
  console.log(
    JSON.stringify({
      runs,
      state: agent.state,
      toolResults: fresh.filter((m) => m.role === "tool").map((m) => m.content),
      text: fresh
        .filter((m) => m.role === "assistant" && typeof m.content === "string")
        .map((m) => m.content)
        .join(""),
    }),
  );
} catch (error) {
  console.log(JSON.stringify({ error: String(error?.stack ?? error), runs }));
  process.exit(1);
}

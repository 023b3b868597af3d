// Drive the acp-progress AG-UI endpoint with the real @ag-ui/client HttpAgent and report what it saw.
//
//   node run_agent.mjs URL THREAD_ID FORWARDED_PROPS_JSON PROMPT [PROMPT ...]
//
// Runs each prompt in turn on one HttpAgent (one thread: the client keeps the history and sends it
// each time). Prints one JSON object on stdout: per run, the event types, every activity snapshot
// as the client applied it (and whether it replaced an existing activity message), the activity
// messages the client holds afterwards and the assistant text. Exits 1 with {"error"} when the
// client rejects the stream (its verifier enforces the AG-UI event rules) or a run fails.
import { randomUUID } from "node:crypto";
import { HttpAgent } from "@ag-ui/client";

const [url, threadId, forwardedJson, ...prompts] = process.argv.slice(2);
if (!url || !threadId || !forwardedJson || prompts.length === 0) {
  console.error("usage: node run_agent.mjs URL THREAD_ID FORWARDED_PROPS_JSON PROMPT [PROMPT ...]");
  process.exit(2);
}

const agent = new HttpAgent({ url, threadId });
const runs = [];

try {
  for (const prompt of prompts) {
    const seen = { runId: null, types: [], snapshots: [], outcome: null };
    const before = new Set(agent.messages.map((m) => m.id));
    agent.addMessage({ id: randomUUID(), role: "user", content: prompt });
    await agent.runAgent(
      { forwardedProps: JSON.parse(forwardedJson) },
      {
        onEvent({ event }) {
          seen.types.push(event.type);
        },
        onRunStartedEvent({ event }) {
          seen.runId = event.runId;
        },
        onRunFinishedEvent({ event }) {
          seen.outcome = event.outcome ?? null;
        },
        onActivitySnapshotEvent({ event, activityMessage }) {
          seen.snapshots.push({
            messageId: event.messageId,
            activityType: event.activityType,
            content: event.content,
            replace: event.replace,
            replacedExisting: activityMessage !== undefined,
          });
        },
      },
    );
    const fresh = agent.messages.filter((m) => !before.has(m.id));
    runs.push({
      ...seen,
      activities: fresh.filter((m) => m.role === "activity"),
      toolResults: fresh.filter((m) => m.role === "tool").map((m) => m.content),
      text: fresh
        .filter((m) => m.role === "assistant" && typeof m.content === "string")
        .map((m) => m.content)
        .join(""),
    });
  }
  console.log(JSON.stringify({ runs, messageCount: agent.messages.length }));
} catch (error) {
  console.log(JSON.stringify({ error: String(error?.stack ?? error), runs }));
  process.exit(1);
}

// Open a stored thread the way a reloaded AG-UI client does, with the real @ag-ui/client.
//
//   node open_thread.mjs URL THREAD_ID PROMPT
//
// GETs URL/threads/THREAD_ID (the thread's earlier conversation as AG-UI messages), builds an
// HttpAgent with those messages and that state (`initialMessages`, `initialState`), and runs
// PROMPT on the thread. The client parses the outgoing RunAgentInput (the earlier messages
// included) with its own schema and verifies the event stream; either failing exits 1 with
// {"error"}. Prints {"history", "messages", "outgoingRoles", "types", "warnings"} on stdout.
import { randomUUID } from "node:crypto";
import { HttpAgent } from "@ag-ui/client";

const [url, threadId, prompt] = process.argv.slice(2);
if (!url || !threadId || !prompt) {
  console.error("usage: node open_thread.mjs URL THREAD_ID PROMPT");
  process.exit(2);
}

const warnings = [];
const warn = console.warn;
console.warn = (...args) => {
  warnings.push(args.map(String).join(" "));
  warn(...args);
};

try {
  const response = await fetch(`${url}/threads/${encodeURIComponent(threadId)}`);
  if (!response.ok) throw new Error(`GET /threads/${threadId}: ${response.status}`);
  const history = await response.json();
  const agent = new HttpAgent({
    url: `${url}/`,
    threadId,
    initialMessages: history.messages,
    initialState: history.state ?? {},
  });
  agent.addMessage({ id: randomUUID(), role: "user", content: prompt });
  const types = [];
  let outgoingRoles = [];
  await agent.runAgent(
    {},
    {
      onRunInitialized({ messages }) {
        outgoingRoles = messages.map((m) => m.role);
      },
      onEvent({ event }) {
        types.push(event.type);
      },
    },
  );
  console.log(JSON.stringify({ history, messages: agent.messages, outgoingRoles, types, warnings }));
} catch (error) {
  console.log(JSON.stringify({ error: String(error?.stack ?? error), warnings }));
  process.exit(1);
}

// acp-progress web page: one conversation with the AG-UI endpoint it is served by.
//
// Plain JavaScript, no dependencies, no build step. It POSTs RunAgentInput to "/" and reads the
// AG-UI event stream (SSE over fetch), renders answers, reasoning, tool cards with progress bars
// (TOOL_PROGRESS activities), the plan (shared state: STATE_SNAPSHOT + STATE_DELTA JSON Patches),
// diffs, the progress summary, usage, and permission questions (RUN_FINISHED with an interrupt
// outcome, answered by a run with `resume`). A thread opened from the list, or the current one after a
// reload, first shows its earlier conversation (GET /threads/{id}: AG-UI messages from the session
// store). Every text from the server is set with textContent:
// nothing it sends is ever parsed as HTML.
"use strict";

(() => {
  const TOKEN_KEY = "acp-progress.token";
  const THREAD_KEY = "acp-progress.thread";
  const MAX_ARGS = 600;
  const MAX_RESULT = 4000;
  const PROPS = { emitToolProgress: true, permissionInterrupts: true, emitProgressSummary: true };

  const $ = (id) => document.getElementById(id);
  const el = (tag, className, text) => {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  };
  const newId = () => {
    if (window.crypto && typeof crypto.randomUUID === "function") return crypto.randomUUID();
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  };

  const ui = {
    log: $("log"),
    prompt: $("prompt"),
    send: $("send"),
    stop: $("stop"),
    busy: $("busy"),
    plan: $("plan"),
    planList: $("plan-list"),
    summary: $("summary"),
    usage: $("usage"),
    connection: $("connection"),
    tokenForm: $("token-form"),
    token: $("token"),
    threadList: $("thread-list"),
  };

  let token = sessionStorage.getItem(TOKEN_KEY);
  let threadId = sessionStorage.getItem(THREAD_KEY) || newId();
  sessionStorage.setItem(THREAD_KEY, threadId);
  let controller = null; // the AbortController of the run being read
  let reading = Promise.resolve(); // settles when the run being read has ended
  let pending = []; // interrupts the thread waits on
  let state = {}; // the agent's shared state ({plan: [...]})
  let view = freshView();
  let opening = 0; // which showHistory call may still draw (a newer switch wins)
  let restoring = threadId; // the thread to draw once the list says the endpoint has it

  function freshView() {
    return { texts: new Map(), reasoning: new Map(), cards: new Map() };
  }

  class Unauthorized extends Error {}

  async function api(path, init = {}) {
    const headers = new Headers(init.headers || {});
    if (token) headers.set("Authorization", `Bearer ${token}`);
    const response = await fetch(path, { ...init, headers, credentials: "omit", cache: "no-store" });
    if (response.status === 401) {
      askToken();
      throw new Unauthorized("this endpoint needs its token");
    }
    return response;
  }

  function askToken() {
    ui.tokenForm.hidden = false;
    ui.connection.textContent = "Enter the endpoint's token to continue.";
    ui.token.focus();
  }

  ui.tokenForm.addEventListener("submit", (event) => {
    event.preventDefault();
    token = ui.token.value.trim();
    ui.token.value = "";
    sessionStorage.setItem(TOKEN_KEY, token);
    ui.tokenForm.hidden = true;
    loadThreads();
    ui.prompt.focus();
  });

  // ------------------------------------------------------------------ threads

  async function loadThreads() {
    let threads;
    try {
      const response = await api("/threads");
      if (!response.ok) throw new Error(`GET /threads: ${response.status}`);
      threads = (await response.json()).threads || [];
    } catch (error) {
      if (!(error instanceof Unauthorized)) ui.connection.textContent = `Cannot reach the endpoint: ${error.message}`;
      return;
    }
    ui.connection.textContent = `Connected · ${threads.length} conversation${threads.length === 1 ? "" : "s"}`;
    const current = threads.find((thread) => thread.threadId === threadId);
    if (restoring === threadId && current) showHistory(threadId, current.title); // (re)loaded
    restoring = null;
    if (current && current.interrupt && !pending.length && !controller) {
      pending = [current.interrupt]; // reloaded while the agent waits on a question: ask again
      question(current.interrupt);
    }
    ui.threadList.replaceChildren(
      ...threads.map((thread) => {
        const item = el("li");
        const button = el("button", "", thread.title || thread.threadId);
        button.type = "button";
        button.title = thread.title || thread.threadId;
        button.dataset.threadId = thread.threadId;
        if (thread.threadId === threadId) button.setAttribute("aria-current", "true");
        button.addEventListener("click", () => switchThread(thread.threadId, true, thread.title));
        item.append(button);
        return item;
      }),
    );
  }

  function switchThread(id, known, title) {
    if (controller) return;
    threadId = id;
    sessionStorage.setItem(THREAD_KEY, id);
    clearConversation();
    if (known) showHistory(id, title);
    loadThreads();
    ui.prompt.focus();
  }

  // ------------------------------------------------------------------ a thread's earlier conversation


  // GET /threads/{id}: the thread's stored conversation as AG-UI messages, drawn above whatever
  // this page has shown since (a run started meanwhile, a question asked again), as text only.
  async function showHistory(id, title) {
    const generation = ++opening;
    let body;
    try {
      const response = await api(`/threads/${encodeURIComponent(id)}`);
      if (response.status === 404) return; // a new thread: nothing stored yet
      if (!response.ok) throw new Error(`the endpoint answered ${response.status}`);
      body = await response.json();
    } catch (error) {
      if (!(error instanceof Unauthorized)) note(`The earlier conversation could not be loaded: ${error.message}`);
      return;
    }
    if (generation !== opening || id !== threadId) return;
    const messages = Array.isArray(body.messages) ? body.messages : [];
    const earlier = document.createDocumentFragment();
    if (body.truncated) {
      earlier.append(el("div", "msg note", `${body.omitted} earlier messages are not shown.`));
    }
    if (!messages.length && title) {
      // the store keeps no conversation for it (another agent's session): the agent still has it
      earlier.append(el("div", "msg note", `Continuing “${title}”. The agent remembers what was said.`));
    }
    const cards = new Map();
    for (const message of messages) earlier.append(...historyNodes(message, cards));
    const empty = !ui.log.firstChild;
    ui.log.prepend(earlier);
    if (empty && ui.log.lastElementChild) ui.log.lastElementChild.scrollIntoView({ block: "nearest" });
    if (body.state && typeof body.state === "object" && !Array.isArray(state.plan)) {
      state = body.state;
      renderPlan();
    }
  }

  function messageText(content) {
    if (typeof content === "string") return content;
    if (!Array.isArray(content)) return "";
    return content.map((part) => (part && typeof part.text === "string" ? part.text : "")).join("");
  }

  function historyNodes(message, cards) {
    const nodes = [];
    const content = messageText(message.content);
    if (message.role === "user") {
      nodes.push(el("div", "msg user", content));
    } else if (message.role === "assistant") {
      if (content) nodes.push(el("div", "msg assistant", content));
      for (const call of message.toolCalls || []) {
        const fn = call.function || {};
        const entry = toolCard(String(fn.name || "tool"));
        showArgs(entry, String(fn.arguments || ""));
        entry.status.textContent = "no result";
        cards.set(call.id, entry);
        nodes.push(entry.card);
      }
    } else if (message.role === "reasoning") {
      const details = el("details", "reasoning");
      details.append(el("summary", "", "Thought"), el("p", "", content));
      nodes.push(details);
    } else if (message.role === "tool") {
      const entry = cards.get(message.toolCallId);
      const status = message.error ? "failed" : "completed";
      if (entry) finishCard(entry, status, content);
      else if (content) nodes.push(el("div", "msg note", content));
    }
    return nodes;
  }

  $("new-thread").addEventListener("click", () => switchThread(newId(), false));

  function clearConversation() {
    ui.log.replaceChildren();
    view = freshView();
    state = {};
    pending = [];
    renderPlan();
    ui.summary.hidden = true;
    ui.usage.hidden = true;
  }

  // ------------------------------------------------------------------ runs

  ui.prompt.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });

  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = ui.prompt.value.trim();
    if (!text || controller || pending.length) return;
    ui.prompt.value = "";
    ui.log.append(el("div", "msg user", text));
    run({ messages: [{ id: newId(), role: "user", content: text }] });
  });

  ui.stop.addEventListener("click", () => {
    if (controller) {
      controller.abort();
      note("Stopped.");
    } else if (pending.length) {
      answer(null);
    }
  });

  function setBusy(busy) {
    ui.busy.hidden = !busy;
    ui.send.disabled = busy || pending.length > 0; // a question waits: answer it (or Stop) first
    ui.stop.disabled = !busy && !pending.length;
  }

  function run(extra) {
    reading = reading.then(() => runNow(extra));
    return reading;
  }

  async function runNow(extra) {
    const body = {
      threadId,
      runId: newId(),
      state,
      messages: [],
      tools: [],
      context: [],
      forwardedProps: PROPS,
      ...extra,
    };
    controller = new AbortController();
    if (!extra.resume) view = freshView(); // a resumed run goes on with the paused run's cards
    setBusy(true);
    try {
      const response = await api("/", {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
        body: JSON.stringify(body),
        signal: controller.signal,
      });
      if (!response.ok) {
        const detail = await response.json().catch(() => ({}));
        throw new Error(detail.detail || `the endpoint answered ${response.status}`);
      }
      await readEvents(response.body);
    } catch (error) {
      if (error.name !== "AbortError" && !(error instanceof Unauthorized)) {
        ui.log.append(el("div", "msg error", error.message));
      }
    } finally {
      controller = null;
      setBusy(false);
      loadThreads();
    }
  }

  async function readEvents(stream) {
    const reader = stream.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, "");
        const data = block
          .split(/\r?\n/)
          .filter((line) => line.startsWith("data:"))
          .map((line) => line.slice(5).replace(/^ /, ""))
          .join("\n");
        if (data) handle(JSON.parse(data));
      }
    }
  }

  // ------------------------------------------------------------------ events

  function handle(event) {
    switch (event.type) {
      case "TEXT_MESSAGE_START":
        view.texts.set(event.messageId, append(el("div", "msg assistant", "")));
        break;
      case "TEXT_MESSAGE_CONTENT": {
        const node = view.texts.get(event.messageId) || append(el("div", "msg assistant", ""));
        view.texts.set(event.messageId, node);
        node.textContent += event.delta;
        break;
      }
      case "REASONING_START":
      case "REASONING_MESSAGE_START":
        reasoning(event.messageId);
        break;
      case "REASONING_MESSAGE_CONTENT":
        reasoning(event.messageId).text.textContent += event.delta;
        break;
      case "REASONING_END":
        reasoning(event.messageId).label.textContent = "Thought";
        break;
      case "TOOL_CALL_START":
        toolStart(event);
        break;
      case "TOOL_CALL_ARGS":
        toolArgs(event);
        break;
      case "TOOL_CALL_RESULT":
        toolResult(event);
        break;
      case "ACTIVITY_SNAPSHOT":
        activity(event);
        break;
      case "STATE_SNAPSHOT":
        state = event.snapshot || {};
        renderPlan();
        break;
      case "STATE_DELTA":
        state = applyPatch(state, event.delta || []);
        renderPlan();
        break;
      case "RUN_FINISHED":
        finished(event);
        break;
      case "RUN_ERROR":
        append(el("div", "msg error", `The run failed: ${event.message}`));
        break;
      default:
        break;
    }
  }

  function append(node) {
    ui.log.append(node);
    node.scrollIntoView({ block: "nearest" });
    return node;
  }

  function note(text) {
    append(el("div", "msg note", text));
  }

  function reasoning(id) {
    let entry = view.reasoning.get(id);
    if (!entry) {
      const details = el("details", "reasoning");
      const label = el("summary", "", "Thinking…");
      const text = el("p");
      details.append(label, text);
      append(details);
      entry = { label, text };
      view.reasoning.set(id, entry);
    }
    return entry;
  }

  function toolCard(toolName) {
    const card = el("article", "card tool");
    const header = el("header");
    const name = el("span", "name", toolName);
    const status = el("span", "state", "running");
    header.append(name, status);
    const bar = document.createElement("progress");
    bar.max = 1;
    bar.removeAttribute("value"); // indeterminate until the tool reports numbers
    bar.setAttribute("aria-label", `Progress of ${toolName}`);
    const args = el("p", "args", "");
    const result = el("div", "result");
    card.append(header, bar, args, result);
    return { card, status, bar, args, result, argText: "" };
  }

  function toolStart(event) {
    const entry = toolCard(event.toolCallName);
    append(entry.card);
    view.cards.set(event.toolCallId, entry);
  }

  function toolArgs(event) {
    const entry = view.cards.get(event.toolCallId);
    if (entry) showArgs(entry, event.delta);
  }

  function showArgs(entry, delta) {
    entry.argText += delta;
    const text = entry.argText.length > MAX_ARGS ? `${entry.argText.slice(0, MAX_ARGS)}…` : entry.argText;
    entry.args.textContent = text === "{}" ? "" : text;
  }

  function toolResult(event) {
    const entry = view.cards.get(event.toolCallId);
    const content = typeof event.content === "string" ? event.content : "";
    if (!entry) {
      if (content) append(el("div", "msg note", content));
      return;
    }
    const status = event.metadata && event.metadata.acpProgress && event.metadata.acpProgress.status;
    finishCard(entry, status, content);
  }

  function finishCard(entry, status, content) {
    entry.bar.max = 1;
    entry.bar.value = 1;
    entry.card.classList.add(status === "failed" ? "failed" : "done");
    entry.status.textContent = status === "failed" ? "failed" : "done · 100%";
    entry.result.replaceChildren(isDiff(content) ? diffView(content) : resultText(content));
  }

  function resultText(content) {
    const text = content.length > MAX_RESULT ? `${content.slice(0, MAX_RESULT)}…` : content;
    return el("p", "result", text);
  }

  function isDiff(text) {
    return /^(--- \S+\n\+\+\+ \S+)/.test(text);
  }

  function diffView(text) {
    const pre = el("pre", "diff");
    pre.setAttribute("aria-label", "Changes");
    for (const line of text.split("\n")) {
      let kind = "";
      if (line.startsWith("+") && !line.startsWith("+++")) kind = "add";
      else if (line.startsWith("-") && !line.startsWith("---")) kind = "del";
      else if (line.startsWith("@@")) kind = "hunk";
      pre.append(el("span", kind, line || " "));
    }
    return pre;
  }

  function activity(event) {
    const content = event.content || {};
    if (event.activityType === "TOOL_PROGRESS") {
      const entry = view.cards.get(content.toolCallId);
      const progress = content.progress || {};
      if (!entry) return;
      if (typeof progress.value === "number" && typeof progress.total === "number" && progress.total > 0) {
        entry.bar.max = progress.total;
        entry.bar.value = Math.min(progress.value, progress.total);
        const percent = Math.round((100 * entry.bar.value) / progress.total);
        entry.status.textContent = `${progress.value}/${progress.total} · ${percent}%`;
      } else {
        entry.status.textContent = "working…";
      }
      if (typeof progress.message === "string" && progress.message !== "[redacted]") {
        entry.args.textContent = progress.message;
      }
    } else if (event.activityType === "PROGRESS_SUMMARY" && typeof content.summary === "string") {
      ui.summary.textContent = content.summary;
      ui.summary.hidden = !content.summary;
    }
  }

  function finished(event) {
    const outcome = event.outcome || {};
    if (outcome.type === "interrupt") {
      pending = outcome.interrupts || [];
      pending.forEach(question);
      return;
    }
    if (outcome.type === "cancelled") note("The run was cancelled.");
    showUsage(event);
  }

  function showUsage(event) {
    const parts = [];
    const usage = event.result && event.result.usage;
    if (usage && typeof usage.used === "number") {
      parts.push(`context ${usage.used.toLocaleString()} / ${Number(usage.size).toLocaleString()} tokens`);
      if (usage.cost && typeof usage.cost.amount === "number") {
        parts.push(`${usage.cost.amount} ${usage.cost.currency}`);
      }
    }
    for (const entry of event.usage || []) {
      if (typeof entry.inputTokens === "number") parts.push(`${entry.inputTokens} in`);
      if (typeof entry.outputTokens === "number") parts.push(`${entry.outputTokens} out`);
    }
    ui.usage.textContent = parts.length ? `Usage: ${parts.join(" · ")}` : "";
    ui.usage.hidden = !parts.length;
  }

  // ------------------------------------------------------------------ permission questions

  function question(interrupt) {
    const info = (interrupt.metadata && interrupt.metadata.acpProgress) || {};
    const card = el("article", "card question");
    card.setAttribute("role", "group");
    const headingId = `q-${newId()}`;
    const heading = el("h3", "", "Permission needed");
    heading.id = headingId;
    card.setAttribute("aria-labelledby", headingId);
    const title = el("p", "", info.title ? `The agent asks to run: ${info.title}` : interrupt.message || "");
    card.append(heading, title);
    if (info.command) {
      const command = el("pre", "command", info.command);
      command.setAttribute("aria-label", "The whole command");
      command.tabIndex = 0;
      card.append(command);
    }
    const options = el("div", "options");
    const choices = info.options || [];
    for (const option of choices) {
      const button = el("button", `option ${String(option.kind).startsWith("allow") ? "allow" : "reject"}`, option.name);
      button.type = "button";
      button.dataset.optionId = option.optionId;
      button.addEventListener("click", () => answer(option, card));
      options.append(button);
    }
    card.append(options);
    append(card);
    setBusy(false);
    const first = options.querySelector("button");
    if (first) first.focus();
  }

  function answer(option, card) {
    const questions = pending;
    if (!questions.length) return;
    pending = [];
    for (const node of ui.log.querySelectorAll(".question button")) node.disabled = true;
    if (card) card.append(el("p", "muted", `You chose: ${option.name}`));
    else note("Stopped: the agent's question was declined.");
    const resume = questions.map((interrupt) =>
      option
        ? { interruptId: interrupt.id, status: "resolved", payload: { optionId: option.optionId } }
        : { interruptId: interrupt.id, status: "cancelled" },
    );
    run({ resume });
  }

  // ------------------------------------------------------------------ the plan (shared state)

  function applyPatch(doc, ops) {
    const copy = JSON.parse(JSON.stringify(doc));
    for (const op of ops) {
      const parts = op.path.split("/").slice(1).map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
      const last = parts.pop();
      let target = copy;
      for (const part of parts) target = target[part];
      if (op.op === "add") {
        if (Array.isArray(target)) target.splice(last === "-" ? target.length : Number(last), 0, op.value);
        else target[last] = op.value;
      } else if (op.op === "replace") {
        target[last] = op.value;
      } else if (op.op === "remove") {
        if (Array.isArray(target)) target.splice(Number(last), 1);
        else delete target[last];
      }
    }
    return copy;
  }

  const MARKS = { pending: "○", in_progress: "◐", completed: "✓" };
  const SPOKEN = { pending: "to do", in_progress: "in progress", completed: "done" };

  function renderPlan() {
    const plan = Array.isArray(state.plan) ? state.plan : [];
    ui.plan.hidden = plan.length === 0;
    ui.planList.replaceChildren(
      ...plan.map((entry) => {
        const item = el("li", entry.status);
        const mark = el("span", "mark", MARKS[entry.status] || "·");
        mark.setAttribute("aria-hidden", "true");
        const text = el("span", "", entry.content);
        const spoken = el("span", "sr-only", ` (${SPOKEN[entry.status] || entry.status})`);
        item.append(mark, text, spoken);
        if (entry.priority) item.append(el("span", "priority", entry.priority));
        return item;
      }),
    );
  }

  setBusy(false);
  loadThreads();
})();

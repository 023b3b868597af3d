// acp-progress web page: one conversation with the AG-UI endpoint it is served by.
//
// Plain JavaScript, no dependencies, no build step. It POSTs RunAgentInput to "/" and reads the
// AG-UI event stream (SSE over fetch), renders answers, reasoning, tool cards with progress bars
// (TOOL_PROGRESS activities), the plan (shared state: STATE_SNAPSHOT + STATE_DELTA JSON Patches),
// diffs, the progress summary, usage, permission questions and tools' questions (forms) (RUN_FINISHED with an interrupt
// outcome, answered by a run with `resume`). A thread opened from the list, or the current one after a
// reload, first shows its earlier conversation (GET /threads/{id}: AG-UI messages from the session
// store). Every text from the server is set with textContent, after visible() showed its hidden
// characters (bidi controls, zero-width and tag characters as <U+202E>): nothing it sends is ever
// parsed as HTML. The answer's Markdown is drawn by markdown(), which builds DOM nodes (paragraphs,
// headings, lists, quotes, code, emphasis, http/https links) and never sets innerHTML.
"use strict";

(() => {
  const TOKEN_KEY = "acp-progress.token";
  const THREAD_KEY = "acp-progress.thread";
  const MAX_ARGS = 600;
  const MAX_RESULT = 4000;
  const PROPS = { emitToolProgress: true, permissionInterrupts: true, emitProgressSummary: true };

  const $ = (id) => document.getElementById(id);
  // what must never reach the page as it is: controls, bidi overrides, zero-width and tag characters
  const HIDDEN =
    /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u180e\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]|\udb40[\udc00-\udc7f]/g;
  const visible = (text) =>
    String(text).replace(HIDDEN, (c) => `<U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}>`);
  const el = (tag, className, text) => {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = visible(text);
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

  // the endpoint's own token comes in the URL's fragment (never sent to a server): kept in this tab,
  // taken out of the address bar and the history at once
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (fragment.get("token")) {
    sessionStorage.setItem(TOKEN_KEY, fragment.get("token"));
    history.replaceState(null, "", location.pathname + location.search);
  }
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
  let listing = 0; // which loadThreads call may still apply its answer (a newer call wins)

  function freshView() {
    return { texts: new Map(), reasoning: new Map(), cards: new Map() };
  }

  class Unauthorized extends Error {}

  async function api(path, init = {}) {
    const headers = new Headers(init.headers || {});
    if (token) headers.set("Authorization", `Bearer ${token}`);
    const response = await fetch(path, { ...init, headers, credentials: "omit", cache: "no-store" });
    if (response.status === 401) {
      askToken(Boolean(token));
      throw new Unauthorized("this endpoint needs its token");
    }
    return response;
  }

  function askToken(rejected) {
    if (rejected) {
      token = null;
      sessionStorage.removeItem(TOKEN_KEY);
    }
    ui.tokenForm.hidden = false;
    ui.connection.textContent = rejected
      ? "The token was not accepted. Enter this endpoint's token (acp-progress agui prints it when it starts)."
      : "Enter the endpoint's token to continue.";
    ui.connection.classList.toggle("error", Boolean(rejected));
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
    // A list fetched earlier can arrive after a later one, or after the run that answered its
    // question has ended: applying it would ask a question already answered again.
    const ticket = ++listing;
    let threads;
    try {
      const response = await api("/threads");
      if (!response.ok) throw new Error(`GET /threads: ${response.status}`);
      threads = (await response.json()).threads || [];
    } catch (error) {
      if (ticket !== listing) return;
      if (!(error instanceof Unauthorized)) ui.connection.textContent = `Cannot reach the endpoint: ${error.message}`;
      return;
    }
    if (ticket !== listing) return;
    const current = threads.find((thread) => thread.threadId === threadId);
    // the conversation being run counts before the endpoint has stored it
    const count = threads.length + (!current && (controller || ui.log.querySelector(".msg.user")) ? 1 : 0);
    ui.connection.classList.remove("error");
    ui.connection.textContent = `Connected · ${count} conversation${count === 1 ? "" : "s"}`;
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
      if (content) nodes.push(answerNode(content));
      for (const call of message.toolCalls || []) {
        const fn = call.function || {};
        const info = (call.metadata && call.metadata.acpProgress) || {};
        const title = typeof info.title === "string" && info.title ? info.title : String(fn.name || "tool");
        const entry = toolCard(String(fn.name || "tool"), info.emoji ? `${info.emoji} ${title}` : title);
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
      endOpenCards();
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
    if (!extra.resume) {
      view = freshView(); // a resumed run goes on with the paused run's cards
      state = {}; // and its plan; a new run's plan is its own
      renderPlan();
      clearSummary();
    }
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
      endOpenCards();
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
        node.dataset.raw = (node.dataset.raw || "") + event.delta;
        node.textContent = visible(node.dataset.raw); // plain while it streams, Markdown at its end
        break;
      }
      case "TEXT_MESSAGE_END": {
        const node = view.texts.get(event.messageId);
        if (node) node.replaceChildren(...markdown(node.dataset.raw || ""));
        break;
      }
      case "RUN_STARTED":
        loadThreads(); // the header counts this conversation from its first run on
        break;
      case "REASONING_START":
      case "REASONING_MESSAGE_START":
        reasoning(event.messageId);
        break;
      case "REASONING_MESSAGE_CONTENT":
        reasoning(event.messageId).text.textContent += visible(event.delta);
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
        endOpenCards();
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

  function toolCard(toolName, shown) {
    const card = el("article", "card tool");
    card.dataset.tool = toolName;
    const header = el("header");
    const name = el("span", "name", shown || toolName);
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
    const info = (event.metadata && event.metadata.acpProgress) || {};
    const title = typeof info.title === "string" && info.title ? info.title : event.toolCallName;
    const entry = toolCard(event.toolCallName, info.emoji ? `${info.emoji} ${title}` : title);
    append(entry.card);
    view.cards.set(event.toolCallId, entry);
  }

  function toolArgs(event) {
    const entry = view.cards.get(event.toolCallId);
    if (entry) showArgs(entry, event.delta);
  }

  function showArgs(entry, delta) {
    entry.argText += delta;
    entry.args.replaceChildren(argsView(entry.argText));
  }

  const cut = (text, most) => (text.length > most ? `${text.slice(0, most)}…` : text);

  // the arguments as "name: value" lines (a string as it is, anything else as compact JSON)
  function argsView(text) {
    let value;
    try {
      value = JSON.parse(text);
    } catch {
      return el("span", "", cut(text, MAX_ARGS));
    }
    if (!value || typeof value !== "object" || Array.isArray(value)) {
      return el("span", "", cut(typeof value === "string" ? value : JSON.stringify(value), MAX_ARGS));
    }
    const list = el("dl", "args-list");
    for (const [key, item] of Object.entries(value).slice(0, 20)) {
      const shown = typeof item === "string" ? item : JSON.stringify(item);
      list.append(el("dt", "", key), el("dd", "", cut(shown, MAX_ARGS)));
    }
    return list;
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
    entry.ended = true;
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

  // Stop, a cancelled or failed run: every card still open ends now, shown Cancelled, and the
  // summary line goes (nothing more will come for them)
  function endOpenCards() {
    for (const entry of view.cards.values()) {
      if (entry.ended) continue;
      entry.ended = true;
      entry.card.classList.add("cancelled");
      entry.status.textContent = "Cancelled";
      entry.bar.removeAttribute("value");
      entry.bar.max = 1;
      entry.bar.value = 0;
    }
    clearSummary();
  }

  function clearSummary() {
    ui.summary.textContent = "";
    ui.summary.hidden = true;
  }

  function activity(event) {
    const content = event.content || {};
    if (event.activityType === "TOOL_PROGRESS") {
      const entry = view.cards.get(content.toolCallId);
      const progress = content.progress || {};
      if (!entry || entry.ended) return;
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
      if (!controller) return; // the run was stopped: its summary is over
      ui.summary.textContent = visible(content.summary);
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
    if (outcome.type === "cancelled") {
      endOpenCards();
      note("The run was cancelled.");
    }
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
    if (interrupt.reason === "input_required") {
      toolQuestion(interrupt);
      return;
    }
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

  // ------------------------------------------------------------------ a tool's questions (forms)

  // A tool asks the person something (interrupt reason input_required): its fields become a form
  // of DOM nodes (text, number, yes/no, a choice), every string of it set as text; Send resumes the
  // run with {action: "accept", content}, Decline with {action: "decline"}, Stop cancels.
  function toolQuestion(interrupt) {
    const info = (interrupt.metadata && interrupt.metadata.acpProgress) || {};
    const card = el("form", "card question tool-question");
    card.setAttribute("role", "group");
    const headingId = `q-${newId()}`;
    const heading = el("h3", "", "A tool asks you");
    heading.id = headingId;
    card.setAttribute("aria-labelledby", headingId);
    card.append(heading, el("p", "", interrupt.message || ""));
    const url = typeof info.url === "string" ? info.url : "";
    if (url) {
      const link = el("a", "question-link", url);
      if (/^https?:\/\//i.test(url)) {
        link.href = url;
        link.target = "_blank";
        link.rel = "noopener noreferrer nofollow";
      }
      card.append(el("p", "", "Open this link, then say whether you went on:"), link);
    }
    const inputs = [];
    for (const field of Array.isArray(info.fields) ? info.fields : []) {
      const row = el("label", "field");
      const title = el("span", "field-title", `${field.title || field.name}${field.required ? "" : " (optional)"}`);
      const input = fieldInput(field);
      input.dataset.field = String(field.name);
      input.dataset.kind = String(field.kind);
      if (field.kind === "boolean") row.append(input, title);
      else row.append(title, input);
      if (field.description) row.append(el("small", "muted", field.description));
      card.append(row);
      inputs.push(input);
    }
    const buttons = el("div", "options");
    const send = el("button", "option allow", url ? "I went on" : "Send");
    send.type = "submit";
    const refuse = el("button", "option reject", "Decline");
    refuse.type = "button";
    buttons.append(send, refuse);
    card.append(buttons);
    card.addEventListener("submit", (event) => {
      event.preventDefault();
      if (!card.reportValidity()) return;
      resolveQuestion({ action: "accept", content: formContent(inputs) }, card, "You answered.");
    });
    refuse.addEventListener("click", () => resolveQuestion({ action: "decline" }, card, "You declined."));
    append(card);
    setBusy(false);
    (inputs[0] || send).focus();
  }

  function fieldInput(field) {
    const options = Array.isArray(field.options) ? field.options : [];
    let input;
    if (field.kind === "boolean") {
      input = el("input");
      input.type = "checkbox";
      return input;
    }
    if (options.length) {
      input = el("select");
      input.multiple = field.kind === "array";
      if (!input.multiple) input.append(el("option", "", "")); // nothing chosen yet
      for (const option of options) {
        const node = el("option", "", option);
        node.value = String(option);
        input.append(node);
      }
    } else {
      input = el("input");
      input.type = field.kind === "number" || field.kind === "integer" ? "number" : "text";
      if (field.kind === "integer") input.step = "1";
      if (field.kind === "number") input.step = "any";
      if (input.type === "text") input.maxLength = 10000;
    }
    input.required = Boolean(field.required);
    return input;
  }

  function formContent(inputs) {
    const content = {};
    for (const input of inputs) {
      const name = input.dataset.field;
      const kind = input.dataset.kind;
      if (kind === "boolean") content[name] = input.checked;
      else if (input.multiple) content[name] = Array.from(input.selectedOptions, (o) => o.value);
      else if (input.value === "") continue; // left out
      else if (kind === "number" || kind === "integer") content[name] = Number(input.value);
      else content[name] = input.value;
    }
    return content;
  }

  function resolveQuestion(payload, card, said) {
    const questions = pending;
    if (!questions.length) return;
    pending = [];
    for (const node of ui.log.querySelectorAll(".question button, .question input, .question select")) {
      node.disabled = true;
    }
    card.append(el("p", "muted", said));
    const resume = questions.map((interrupt) =>
      interrupt.reason === "input_required"
        ? { interruptId: interrupt.id, status: "resolved", payload }
        : { interruptId: interrupt.id, status: "cancelled" },
    );
    run({ resume });
  }

  // ------------------------------------------------------------------ the answer's Markdown

  function answerNode(text) {
    const node = el("div", "msg assistant");
    node.dataset.raw = text;
    node.replaceChildren(...markdown(text));
    return node;
  }

  // Markdown to DOM nodes: blocks (fenced code, headings, lists, quotes, paragraphs), then inline
  // (code, bold, italic, links). Text only ever goes in through textContent (el); a link is kept
  // only for http, https and mailto.
  function markdown(source) {
    const lines = String(source).replace(/\r\n?/g, "\n").split("\n");
    const blocks = [];
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      const fence = line.match(/^\s*(```|~~~)/);
      if (fence) {
        const body = [];
        i += 1;
        while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
        i += 1;
        const pre = el("pre", "code");
        pre.append(el("code", "", body.join("\n")));
        blocks.push(pre);
        continue;
      }
      const heading = line.match(/^(#{1,6})\s+(.*)$/);
      if (heading) {
        const level = Math.min(6, heading[1].length + 2);
        blocks.push(inline(el(`h${level}`), heading[2].replace(/\s#+\s*$/, "")));
        i += 1;
        continue;
      }
      if (/^\s*([-*+]|\d{1,9}[.)])\s+/.test(line)) {
        const ordered = /^\s*\d/.test(line);
        const list = el(ordered ? "ol" : "ul");
        while (i < lines.length && /^\s*([-*+]|\d{1,9}[.)])\s+/.test(lines[i])) {
          list.append(inline(el("li"), lines[i].replace(/^\s*([-*+]|\d{1,9}[.)])\s+/, "")));
          i += 1;
        }
        blocks.push(list);
        continue;
      }
      if (/^\s*>/.test(line)) {
        const quoted = [];
        while (i < lines.length && /^\s*>/.test(lines[i])) quoted.push(lines[i++].replace(/^\s*>\s?/, ""));
        const quote = el("blockquote");
        quote.append(...markdown(quoted.join("\n")));
        blocks.push(quote);
        continue;
      }
      if (!line.trim()) {
        i += 1;
        continue;
      }
      const paragraph = [];
      while (
        i < lines.length &&
        lines[i].trim() &&
        !/^\s*(```|~~~|#{1,6}\s|>|[-*+]\s|\d{1,9}[.)]\s)/.test(lines[i])
      ) {
        paragraph.push(lines[i++]);
      }
      const p = el("p");
      paragraph.forEach((text, index) => {
        if (index) p.append(document.createElement("br"));
        inline(p, text);
      });
      blocks.push(p);
    }
    return blocks;
  }

  const INLINE = /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|(?<![\w])_([^_\s][^_]*)_(?![\w])|\[([^\]]+)\]\(([^)\s]+)\)/;

  function inline(parent, text) {
    let rest = text;
    while (rest) {
      const match = rest.match(INLINE);
      if (!match) {
        parent.append(visible(rest));
        break;
      }
      if (match.index) parent.append(visible(rest.slice(0, match.index)));
      const [whole, , code, bold, bold2, italic, italic2, label, href] = match;
      if (code !== undefined) parent.append(el("code", "", code));
      else if (bold !== undefined || bold2 !== undefined) parent.append(inline(el("strong"), bold ?? bold2));
      else if (italic !== undefined || italic2 !== undefined) parent.append(inline(el("em"), italic ?? italic2));
      else parent.append(link(label, href));
      rest = rest.slice(match.index + whole.length);
    }
    return parent;
  }

  function link(label, href) {
    let url = null;
    try {
      url = new URL(href);
    } catch {
      url = null;
    }
    if (!url || !["http:", "https:", "mailto:"].includes(url.protocol)) return visible(`[${label}](${href})`);
    const anchor = el("a", "", label);
    anchor.href = url.href;
    anchor.rel = "noopener noreferrer nofollow";
    anchor.target = "_blank";
    anchor.title = visible(url.href);
    return anchor;
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

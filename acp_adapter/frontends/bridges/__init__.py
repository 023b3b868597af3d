"""Chat bridges: drive an ACP agent from a chat and show its tool calls there as live progress lines.

A bridge is a front-end like the others: it drives any ACP agent through the client driver.
Layers, each in its own module:

* :mod:`.config`      bridge instances, their closed progress block, resolution order, the instance file
* :mod:`.projection`  pure: ACP session updates -> typed progress payloads and delivery events
* :mod:`.events`      the typed values that flow from the projection through the queue into delivery
* :mod:`.queue`       the ordered per-route queue with its backpressure rules (coalescing, latest wins)
* :mod:`.delivery`    platform-neutral delivery of a route's events (typing, reactions), composed of
  :mod:`.bubbles` (progress lines and plan, the edit budget), :mod:`.answers` (answer text, the
  durable outbox), :mod:`.placeholder` (the summary line) and :mod:`.sink_calls` (redacted, counted calls)
* :mod:`.sink`        the chat sink: the platform affordances delivery needs, and nothing more
* :mod:`.retry`       the one retry policy of chat deliveries
* :mod:`.options`     what a runner takes besides its instance (:class:`~.options.BridgeOptions`)
* :mod:`.runner`      glue: chat message -> ACP prompt through the client driver -> delivery, holding
  :mod:`.routes` (a session, queue and delivery worker per chat), :mod:`.chat_turn` (one message, one
  prompt) and :mod:`.chat_questions` (the agent's permission requests and questions, asked in the chat)
* :mod:`.state`       what a bridge keeps across restarts (sessions, update offset, inbox, outbox)
* :mod:`.standby`     a bridge and its standbys on one PostgreSQL store, one of them polling
* :mod:`.platforms`   console and Telegram sinks and their input loops
"""

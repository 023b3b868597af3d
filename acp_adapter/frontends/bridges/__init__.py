"""Chat bridges: drive an ACP agent from a chat and show its tool calls there as live progress lines.

A bridge is a front-end like the others: it drives any ACP agent through the client driver.
Layers, each in its own module:

* :mod:`.config`      bridge instances, their closed progress block, resolution order, the instance file
* :mod:`.projection`  pure: ACP session updates -> typed progress payloads and delivery events
* :mod:`.events`      the typed values that flow from the projection through the queue into delivery
* :mod:`.queue`       the ordered per-route queue with its backpressure rules (coalescing, latest wins)
* :mod:`.delivery`    platform-neutral delivery (accumulate/separate, coalescing, typing, reactions)
* :mod:`.sink`        the chat sink: the platform affordances delivery needs, and nothing more
* :mod:`.retry`       the one retry policy of chat deliveries
* :mod:`.options`     what a runner takes besides its instance (:class:`~.options.BridgeOptions`)
* :mod:`.runner`      glue: chat message -> ACP prompt through the client driver -> delivery
* :mod:`.state`       what a bridge keeps across restarts (sessions, update offset, inbox, outbox)
* :mod:`.standby`     a bridge and its standbys on one PostgreSQL store, one of them polling
* :mod:`.platforms`   console and Telegram sinks and their input loops
"""

"""Chat bridges: drive an ACP agent from a chat and show its tool calls there as live progress lines.

Layers, each in its own module (seed ``000``, DESIGN "Front-ends drive any ACP agent"):

* :mod:`.config`      bridge instances, their closed progress block, resolution order, the instance file
* :mod:`.projection`  pure: ACP session updates -> typed progress payloads and delivery events
* :mod:`.queue`       the ordered per-route queue with the seed's backpressure rules
* :mod:`.delivery`    platform-neutral delivery (accumulate/separate, coalescing, typing, reactions)
* :mod:`.options`     what a runner takes besides its instance (:class:`~.options.BridgeOptions`)
* :mod:`.runner`      glue: chat message -> ACP prompt through the client driver -> delivery
* :mod:`.platforms`   console and Telegram sinks and their input loops
"""

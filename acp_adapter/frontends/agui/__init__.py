"""AG-UI front-end: drive any ACP agent from an AG-UI client over HTTP + SSE.

``projection`` maps ACP session updates to AG-UI events (pure), ``policy`` decides which tool
values reach the client, ``options`` holds the per-run switches (tool progress, summaries), ``run``
holds one run's lock and outbox. Around them: ``request`` validates a ``RunAgentInput``,
``threads`` keeps one ACP session per thread and one run per thread, ``host`` owns the agent
process, ``active`` drives one run's turn, ``observers`` is where other projections of a run attach
(``summaries`` is one: each run's PROGRESS_SUMMARY activity), ``service`` ties them together,
``endpoint`` holds the endpoint's options (:class:`~acp_adapter.frontends.agui.endpoint.AguiOptions`),
``app`` is the FastAPI endpoint (:func:`acp_adapter.frontends.agui.app.create_app`) and ``command``
the ``acp-progress agui`` command line. Needs the ``agui`` extra (``pip install 'acp-progress[agui]'``).
"""

"""AG-UI front-end: drive any ACP agent from an AG-UI client over HTTP + SSE.

``projection`` maps ACP session updates to AG-UI events (pure; ``message_streams`` holds its
open answer text and reasoning), ``policy`` decides which tool values reach the client,
``options`` holds the per-run switches (tool progress, summaries), ``run`` holds one run's lock
and outbox. Around them: ``request`` validates a ``RunAgentInput``,
``threads`` keeps one ACP session per thread and one run per thread, ``host`` owns the agent
process, ``active`` drives one run's turn, ``observers`` is where other projections of a run attach
(``summaries`` is one: each run's PROGRESS_SUMMARY activity), ``service`` ties them together
(``run_starter`` admits runs, ``thread_reader`` answers the thread listing and history),
``endpoint`` holds the endpoint's options (:class:`~acp_adapter.frontends.agui.endpoint.AguiOptions`),
``app`` is the FastAPI endpoint (:func:`acp_adapter.frontends.agui.app.create_app`); the
``acp-progress agui`` command line is :mod:`acp_adapter.cli.agui`.

What a run shows: ``content`` says what a tool card's content is as text, ``shared_state`` sends
the plan as AG-UI shared state, ``interrupts`` asks permission questions as AG-UI interrupts,
``history`` answers ``GET /threads/{threadId}``, ``visible`` makes every event's text safe to show
and ``page`` (with the files in ``web/``) is the endpoint's own web page. Who and how much:
``admission`` checks Host, Origin, CORS and the bearer token, ``token_file`` keeps the endpoint's
token, ``limits`` and ``connections`` bound bodies, time, runs and connections, ``stopping`` ends
open runs before uvicorn. Threads that outlive the process: ``thread_store`` maps a thread to its
session in the session store, ``replicas`` lets several processes on one PostgreSQL store serve
the same threads (``replica_claims`` holds a running thread's lock there). Needs the ``agui``
extra (``pip install 'acp-progress[agui]'``).
"""

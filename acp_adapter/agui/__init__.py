"""AG-UI front-end: drive any ACP agent from an AG-UI client over HTTP + SSE.

``projection`` maps ACP session updates to AG-UI events (pure), ``policy`` decides which tool
values reach the client, ``run`` holds one run's lock and outbox, ``app`` is the FastAPI endpoint.
Needs the ``agui`` extra (``pip install 'acp-progress[agui]'``).
"""

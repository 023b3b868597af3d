"""Checking an OpenAI-compatible endpoint before it is used: reachable, the key accepted, the model offered.

``serve --setup`` checks the person's choice before saving it, and ``authenticate`` checks the key
the client put in the environment before saying it works: both ask the server for its model list
(``GET /models``), which every OpenAI-compatible server answers cheaply, costs no tokens and
needs the same key a chat request needs. A server without a model list (404) is taken at its
word: the key was not refused, and the model name is checked by the first prompt.

The answer is one line in plain words, worded as the back-end words its own failures
(:func:`~acp_adapter.models.openai_errors.classify`), never holding the key.
"""

from __future__ import annotations

from dataclasses import dataclass

from acp_adapter.models.openai_errors import classify, display_url, scrub

__all__ = ["EndpointCheck", "check_endpoint"]

#: the most model names kept from a server's list (a list is data from outside: bounded)
MAX_MODELS = 500
#: the most names a failure message lists
SHOWN_MODELS = 8


@dataclass(frozen=True)
class EndpointCheck:
    """Whether the endpoint works with this key and model, and the one line that says so."""

    ok: bool
    message: str
    models: tuple[str, ...] = ()


def check_endpoint(base_url: str, api_key: str, model: str, *, timeout: float = 15.0) -> EndpointCheck:
    """Ask ``base_url`` for its models with ``api_key`` (blocking, at most about ``timeout`` s)."""
    try:
        import openai
    except ImportError:
        return EndpointCheck(
            False, "the OpenAI-compatible back-end needs the openai extra: pip install 'acp-progress[openai]'"
        )
    url = display_url(base_url)
    client = openai.OpenAI(base_url=base_url, api_key=api_key or "none", timeout=timeout, max_retries=0)
    try:
        page = client.models.list()
        names = tuple(
            item.id for _, item in zip(range(MAX_MODELS), page.data, strict=False) if isinstance(item.id, str)
        )
    except openai.NotFoundError:
        return EndpointCheck(True, f"{url} answered (it has no model list; {model} is used as given)")
    except Exception as exc:
        error = classify(exc, key=api_key, model=model, url=url, timeout=timeout, chunks=0, responded=False)
        return EndpointCheck(False, scrub(str(error), api_key))
    finally:
        client.close()
    if names and model not in names:
        shown = ", ".join(names[:SHOWN_MODELS]) + (" …" if len(names) > SHOWN_MODELS else "")
        return EndpointCheck(False, f"{url} does not offer the model {model} (it offers: {shown})", names)
    return EndpointCheck(True, f"{url} accepted the key and offers {model}", names)

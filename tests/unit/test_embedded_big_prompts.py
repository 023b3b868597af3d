"""The embedded model stays linear on huge prompts and answers cancel promptly."""

from __future__ import annotations

import random
import threading
import time

import pytest

from acp_adapter.cancel import CancelToken, TurnCancelled
from acp_adapter.models.base import Message
from acp_adapter.models.embedded import EmbeddedModel, compose_reply


def _words(n: int) -> str:
    rng = random.Random(7)
    letters = "bdefghjklmnqrvwxz"  # no word of the model's canned topics can be spelled with these
    return " ".join("".join(rng.choice(letters) for _ in range(rng.randint(4, 9))) for _ in range(n))


def test_a_forty_thousand_word_prompt_is_answered_quickly():
    prompt = _words(40_000)
    start = time.thread_time()
    reply = compose_reply(prompt)
    assert time.thread_time() - start < 0.5
    assert reply.startswith("You asked:")
    start = time.thread_time()
    compose_reply("1 + 2 " * 20_000)
    assert time.thread_time() - start < 0.5


def test_cancel_is_checked_inside_the_keyword_loop():
    cancel = CancelToken()
    cancel.cancel("stop")
    with pytest.raises(TurnCancelled):
        compose_reply(" ".join(["because"] * 50_000), cancel)  # stop words only: the loop runs long


def test_cancel_on_a_big_prompt_returns_promptly():
    model = EmbeddedModel(think_delay=0.05, chunk_delay=0.01)
    cancel = CancelToken()
    messages = [Message("user", _words(40_000))]
    outcome: list[object] = []

    def consume() -> None:
        try:
            for _ in model.stream(messages, [], cancel):
                pass
            outcome.append("done")
        except TurnCancelled:
            outcome.append("cancelled")

    worker = threading.Thread(target=consume)
    worker.start()
    time.sleep(0.1)
    cancelled_at = time.monotonic()
    cancel.cancel("the user pressed stop")
    worker.join(5)
    assert time.monotonic() - cancelled_at < 2.0  # the 2 s cancel promise, with room for a loaded machine
    assert outcome in (["cancelled"], ["done"])

"""A test agent whose model writes to stdout in every way it can before answering.

If any of it reached the real stdout the client would see non-JSON lines on the protocol stream.
"""

from __future__ import annotations

import functools
import logging
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator, Sequence

import anyio

from acp_adapter.cancel import CancelToken
from acp_adapter.config import Settings
from acp_adapter.models.base import Message, ModelEvent, ToolSpec
from acp_adapter.models.embedded import EmbeddedModel
from acp_adapter.server import serve
from run_agent import AIAgent


class NoisyModel(EmbeddedModel):
    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], cancel: CancelToken
    ) -> Iterator[ModelEvent]:
        print("NOISE print() from the model")
        sys.stdout.write("NOISE sys.stdout.write\n")
        sys.stdout.flush()
        sys.__stdout__.write("NOISE sys.__stdout__.write\n")
        sys.__stdout__.flush()
        handler = logging.StreamHandler(sys.stdout)
        noisy = logging.getLogger("noisy")
        noisy.addHandler(handler)
        noisy.warning("NOISE logging to a stdout handler")
        noisy.removeHandler(handler)
        os.write(1, b"NOISE raw os.write(1)\n")
        subprocess.run(["sh", "-c", "echo NOISE child shell on fd 1"], check=True)
        subprocess.run([sys.executable, "-c", "print('NOISE python child print')"], check=True)
        subprocess.run(["sh", "-c", "cat >/dev/null; echo NOISE child read stdin"], check=True, timeout=5)
        warnings.warn("NOISE a warning", stacklevel=1)
        yield from super().stream(messages, tools, cancel)


if __name__ == "__main__":
    settings = Settings.from_env()
    anyio.run(
        functools.partial(serve, settings, NoisyModel(think_delay=0.05, chunk_delay=0), turn_runner=AIAgent),
        backend="asyncio",
    )

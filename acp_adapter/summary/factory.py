"""From validated settings to one :class:`ProgressSummary` per turn, the way every front-end does it.

Why a factory: the expensive and fallible parts — checking the ``openai`` extra and the base URL,
compiling a template, building the model client — belong at start-up, where a bad value stops the
program with a message naming the variable. A turn then only pays for a small object.

The per-front-end default lives here too: ``ACP_PROGRESS_SUMMARY=auto`` (the default) means
``embedded`` for ``watch`` and the chat/AG-UI front-ends, ``off`` for ``serve`` and ``relay`` (an
editor did not ask for an extra status line until the user turns it on). Each front-end passes its
own ``default_mode``.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from acp_adapter.config import ConfigError
from acp_adapter.summary.capability import DEFAULT_TIMEOUT, ProgressSummary
from acp_adapter.summary.clock import Clock
from acp_adapter.summary.event import SummaryCallback, TraceCallback
from acp_adapter.summary.generators import (
    EmbeddedGenerator,
    ExecuteFunction,
    ModelGenerator,
    SummaryGenerator,
)
from acp_adapter.summary.prompt import PromptBuilder
from acp_adapter.summary.streak import FailureStreak
from acp_adapter.summary.templates import PromptTemplate

if TYPE_CHECKING:
    from acp_adapter.config import Settings


SummaryMode: TypeAlias = Literal["off", "embedded", "openai"]

log = logging.getLogger("acp_progress.summary")

INSTALL_HINT = "pip install 'acp-progress[openai]'"


def resolve_mode(settings: Settings, default_mode: SummaryMode) -> SummaryMode:
    """The mode for this front-end: the configured one, or ``default_mode`` when it is ``auto``."""
    mode = settings.summary
    return default_mode if mode == "auto" else mode


class SummaryFactory:
    """Makes a :class:`ProgressSummary` per turn with one shared generator and prompt."""

    def __init__(
        self,
        generator: SummaryGenerator | ExecuteFunction,
        *,
        interval: float = 10.0,
        max_length: int = 180,
        guidance: str | None = None,
        template: PromptTemplate | None = None,
        variables: Mapping[str, Any] | None = None,
        id: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.generator = generator
        self.interval = interval
        self.max_length = max_length
        self.id = id
        self.timeout = timeout
        #: one failure streak for all of this factory's turns: a dead server warns once, not per turn
        self.streak = FailureStreak()
        self.prompt = PromptBuilder(
            max_length=max_length, guidance=guidance, template=template, variables=variables
        )

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        default_mode: SummaryMode = "embedded",
        template: PromptTemplate | None = None,
        variables: Mapping[str, Any] | None = None,
        id: str | None = None,
    ) -> SummaryFactory | None:
        """The factory the settings ask for, or None when summaries are off. Raises
        :class:`~acp_adapter.config.ConfigError` (naming the variable) for an unusable set-up."""
        mode = resolve_mode(settings, default_mode)
        if mode == "off":
            return None
        timeout = DEFAULT_TIMEOUT
        generator: SummaryGenerator
        if mode == "openai":
            conf = settings.summary_openai
            if importlib.util.find_spec("openai") is None:
                raise ConfigError(
                    "ACP_PROGRESS_SUMMARY=openai needs the 'openai' package, which is missing: "
                    + INSTALL_HINT
                )
            generator = ModelGenerator(
                base_url=conf.base_url, model=conf.model, api_key=conf.api_key, timeout=conf.timeout
            )
            timeout = conf.timeout + 1.0  # the HTTP timeout fires first; this one bounds the rest
        else:
            generator = EmbeddedGenerator()
        return cls(
            generator,
            interval=settings.summary_interval,
            max_length=settings.summary_max_length,
            guidance=settings.summary_guidance,
            template=template,
            variables=variables,
            id=id,
            timeout=timeout,
        )

    async def aclose(self) -> None:
        """Release what the generator holds on the running loop (a model's HTTP connections)."""
        close = getattr(self.generator, "aclose", None)
        if callable(close):
            try:
                await close()
            except Exception:
                log.warning("closing the progress summary generator failed", exc_info=True)

    def create(
        self,
        *,
        user_text: str = "",
        on_summary: SummaryCallback | None = None,
        on_trace: TraceCallback | None = None,
        input: Any = None,
        messages: Sequence[Any] = (),
        clock: Clock | None = None,
    ) -> ProgressSummary:
        """A new capability for one turn (not started: ``start()`` or ``async with`` it)."""
        return ProgressSummary(
            self.generator,
            user_text=user_text,
            interval=self.interval,
            max_length=self.max_length,
            id=self.id,
            timeout=self.timeout,
            on_summary=on_summary,
            on_trace=on_trace,
            clock=clock,
            input=input,
            messages=messages,
            prompt_builder=self.prompt,
            streak=self.streak,
        )


@functools.lru_cache(maxsize=32)
def _cached_factory(settings: Settings, default_mode: SummaryMode, id: str | None) -> SummaryFactory | None:
    return SummaryFactory.from_settings(settings, default_mode=default_mode, id=id)


def from_settings(
    settings: Settings,
    *,
    user_text: str = "",
    on_summary: SummaryCallback | None = None,
    on_trace: TraceCallback | None = None,
    default_mode: SummaryMode = "embedded",
    id: str | None = None,
    input: Any = None,
    messages: Sequence[Any] = (),
    clock: Clock | None = None,
) -> ProgressSummary | None:
    """One turn's capability as the settings configure it, or None when summaries are off.

    The factory (generator, model client, prompt) is built once per distinct settings and reused,
    so calling this per turn is cheap. Raises :class:`~acp_adapter.config.ConfigError` for an
    unusable configuration: call it (or :meth:`SummaryFactory.from_settings`) at start-up too.
    """
    factory = _cached_factory(settings, default_mode, id)
    if factory is None:
        return None
    return factory.create(
        user_text=user_text,
        on_summary=on_summary,
        on_trace=on_trace,
        input=input,
        messages=messages,
        clock=clock,
    )

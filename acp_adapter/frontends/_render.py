"""The terminal look shared by every front-end, all of it from ``rich``: one place, no I/O.

``acp-progress run`` (the plain printer), ``acp-progress watch`` and ``chat`` draw the same
spinner (rich's ``dots``), the same progress bar and the same one-line live status. Both take them
from here, so neither writes its own ANSI escapes or frame string nor borrows the other's across
layers, and the escapes come from ``rich.control.Control``.

Everything here returns strings, so a caller keeps its own writing policy (redaction, a reader
that went away) and tests need no terminal.
"""

from __future__ import annotations

import io

from rich.console import Console
from rich.control import Control, ControlType
from rich.spinner import Spinner
from rich.text import Text

from acp_adapter.safety.terminal_text import terminal_safe

#: The rich spinner every front-end animates (``watch`` renders ``Spinner(SPINNER_NAME)`` itself).
SPINNER_NAME = "dots"
_SPINNER = Spinner(SPINNER_NAME)
#: The spinner's glyphs, in order (``⠋⠙⠹…``).
SPINNER_FRAMES: tuple[str, ...] = tuple(_SPINNER.frames)
#: Seconds between frames, as rich animates it.
SPINNER_INTERVAL: float = _SPINNER.interval / 1000
#: Cells of a progress bar.
BAR_CELLS = 20

# Return to column 0 and erase the whole line: a live line is redrawn in place.
_RESET_LINE = Control((ControlType.CARRIAGE_RETURN,), (ControlType.ERASE_IN_LINE, 2))


def spinner_frame(index: int) -> str:
    """The spinner glyph of animation step ``index`` (it wraps around)."""
    return SPINNER_FRAMES[index % len(SPINNER_FRAMES)]


def progress_bar(value: float, total: float, cells: int = BAR_CELLS) -> str:
    """``██████░░░░░░░░░░░░░░  30%`` — ``cells`` cells and the percentage (clamped to 0–100)."""
    fraction = min(max(value / total, 0.0), 1.0)
    filled = round(fraction * cells)
    return f"{'█' * filled}{'░' * (cells - filled)} {int(fraction * 100):3d}%"


def fit_line(line: str, width: int) -> str:
    """``line`` cut to ``width`` terminal cells with ``…`` (rich counts emoji and CJK as two)."""
    text = Text(line)
    if text.cell_len > width:
        text.truncate(max(width, 1), overflow="ellipsis")
    return text.plain


def _console(width: int) -> Console:
    # a terminal of ``width`` cells with no colour and no markup: the text is shown as given, and
    # an empty environment so TERM=dumb or NO_COLOR cannot change what a caller asked to draw
    return Console(
        file=io.StringIO(),
        width=max(width, 1),
        force_terminal=True,
        color_system=None,
        highlight=False,
        markup=False,
        emoji=False,
        legacy_windows=False,
        _environ={},
    )


def live_line(line: str, width: int) -> str:
    """What redraws the one live status line in place: back to column 0, erase, and ``line``
    cropped to ``width`` cells. A line that wrapped would break the next redraw and leave copies
    of itself on the screen, so it is never longer than ``width``."""
    console = _console(width)
    with console.capture() as capture:
        console.control(_RESET_LINE)
        safe = fit_line(terminal_safe(line), width)  # the data in it may not act on the terminal
        console.print(Text(safe), end="", no_wrap=True, overflow="ellipsis", crop=True)
    return capture.get()


def clear_line() -> str:
    """What erases the live status line and leaves the cursor at its start."""
    console = _console(80)
    with console.capture() as capture:
        console.control(_RESET_LINE)
    return capture.get()
